"""Among ids, percentiles, the active board and export, against a real Redis (and the real
pipeline where a board is written by the worker)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Player
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import EVERYONE, board
from tests.integration.test_reader import TIES, model, seed
from worker import keys
from worker.boards import active, export, reader
from worker.boards.projection import Projection
from worker.entrypoints.cli import boards as cli_boards
from worker.entrypoints.cli.main import dispatch
from worker.ladders import default_config_path
from worker.ops import rebuild, reconcile

L = "gammon42"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def direct_percentile(scores: dict[str, float], player: str) -> float:
    """Counted directly: players with a strictly lower score, in % of the board,
    one decimal, never rounded up."""
    lower = sum(1 for s in scores.values() if s < scores[player])
    share = lower * 100 / len(scores)
    return int(share * 10 + 1e-9) / 10


def test_among_lists_the_players_found_in_board_order_with_global_ranks(runtime):
    """found players in board order (ties by id), each with their global
    competition rank; ids not on the board listed apart, not an error."""
    seed(runtime.leaderboard_redis, TIES)
    found = reader.among(runtime.leaderboard_redis, L, ["eve", "nobody", "dan", "bob", "amy"])
    assert [(1, "amy", 1600.0), (2, "bob", 1500.0), (2, "dan", 1500.0), (5, "eve", 1400.0)] == [
        (e.rank, e.player_id, e.rating) for e in found.entries
    ]
    assert (["nobody"], 5) == (found.missing, found.total)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    scores=st.dictionaries(
        st.text(st.characters(codec="utf-8", categories=["L", "N"]), min_size=1, max_size=4),
        st.sampled_from([1400.0, 1500.0, 1500.5, 1600.0]),
        min_size=1,
        max_size=30,
    ),
    data=st.data(),
)
def test_among_agrees_with_a_naive_sort_with_ties(runtime, scores, data):
    """The rule ("in board order, each with their global competition rank") against the
    documented order (SPEC 4: 1, 2, 2, 4; ties by id) computed by sorting the whole board."""
    r = runtime.leaderboard_redis
    r.flushdb()
    seed(r, scores)
    asked = data.draw(st.lists(st.sampled_from(sorted(scores)), unique=True, max_size=10))
    wanted = [row for row in model(scores) if row[1] in asked]
    found = reader.among(r, L, [*asked, "zz-absent"])
    assert wanted == [(e.rank, e.player_id, e.rating) for e in found.entries]
    assert [direct_percentile(scores, p) for _, p, _ in wanted] == [
        e.percentile for e in found.entries
    ]
    assert ["zz-absent"] == found.missing


def test_among_takes_up_to_100_ids(runtime):
    """up to 100 ids; more is refused (a 400 over HTTP)."""
    seed(runtime.leaderboard_redis, TIES)
    found = reader.among(runtime.leaderboard_redis, L, [*TIES, *(f"x{i}" for i in range(95))])
    assert (5, 95) == (len(found.entries), len(found.missing))
    with pytest.raises(reader.InvalidArgument):
        reader.among(runtime.leaderboard_redis, L, [str(i) for i in range(101)])


def test_among_is_one_round_trip(runtime, monkeypatch):
    """ "One round trip to Redis": one script call answers the whole list."""
    seed(runtime.leaderboard_redis, TIES)
    r = runtime.leaderboard_redis
    reader.among(r, L, ["amy"])  # the script is loaded once per Redis
    major = int(str(r.info("server")["redis_version"]).split(".")[0])
    run = "EVALSHA_RO" if major >= 7 else "EVALSHA"  # Redis 6.2 has no read-only variant
    calls: list[str] = []
    original = r.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]))
        return original(*args, **options)

    monkeypatch.setattr(r, "execute_command", counted)
    found = reader.among(r, L, ["amy", "bob", "eve", "x"])
    assert ([run], 3) == (calls, len(found.entries))


@pytest.mark.parametrize("player", sorted(TIES))
def test_percentile_of_rank_and_card_is_the_direct_count(runtime, player):
    """the share of the board with a strictly lower score, one decimal."""
    seed(runtime.leaderboard_redis, TIES)
    expected = direct_percentile(TIES, player)
    assert expected == reader.rank(runtime.leaderboard_redis, L, player).percentile
    assert expected == reader.card(runtime.leaderboard_redis, L, player).percentile


def test_percentile_is_rounded_down_to_one_decimal(runtime):
    """The rule ("better than 87.5 %"): 2 of 3 players below is 66.6, never 66.7, and the
    best of 1000 is 99.9, not 100."""
    seed(runtime.leaderboard_redis, {"a": 3.0, "b": 2.0, "c": 1.0})
    assert 66.6 == reader.rank(runtime.leaderboard_redis, L, "a").percentile
    assert 99.9 == reader.percentile(999, 1000)
    assert 0.0 == reader.percentile(0, 1)


def test_percentile_over_http_on_rank_card_and_among(runtime):
    """every card and rank answer over HTTP carries it; among too."""
    from starlette.testclient import TestClient

    from worker.entrypoints.api.app import create_app

    seed(runtime.leaderboard_redis, TIES)
    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app) as client:
        assert 80.0 == client.get(f"/ladders/{L}/players/amy/rank").json()["percentile"]
        assert 20.0 == client.get(f"/ladders/{L}/players/dan").json()["percentile"]
        found = client.get(f"/ladders/{L}/among", params={"ids": "eve,amy,ghost"}).json()
        assert [("amy", 1, 80.0), ("eve", 5, 0.0)] == [
            (e["player_id"], e["rank"], e["percentile"]) for e in found["entries"]
        ]
        assert ["ghost"] == found["missing"]
        too_many = ",".join(f"p{i}" for i in range(101))
        assert 400 == client.get(f"/ladders/{L}/among", params={"ids": too_many}).status_code
        assert (
            404
            == client.get(f"/ladders/{L}/among", params={"ids": "a", "board": "active"}).status_code
        )


# -- the active board ------------------------------------------------------------------------


def with_active_days(
    make_runtime: Any, tmp_path: Path, days: int = 7, ladder: str = "gammon42"
) -> Any:
    """The runtime on the shipped ladders, ``ladder`` with ``[ladders.<ladder>.board]``."""
    text = default_config_path().read_text(encoding="utf-8")
    path = tmp_path / "ladders.toml"
    path.write_text(text + f"\n[ladders.{ladder}.board]\nactive_days = {days}\n", encoding="utf-8")
    return make_runtime(ladder_config=path)


def player(pid: str, rating: float, last: datetime | None, version: int = 1) -> Player:
    return Player(L, pid, rating, 1, 1, True, version=version, last_game_at=last, updated_at=NOW)


def test_the_active_board_under_a_test_clock(runtime, make_runtime, tmp_path):
    """only players whose last rated game ended within N days; the worker's write
    puts them on or off it, and the sweep takes off a player who stopped playing with no
    event, as time passes (a test clock, not sleeping). The rating board keeps everyone."""
    rt = with_active_days(make_runtime, tmp_path)
    clock = [NOW]
    projection = Projection(rt.leaderboard_redis, clock=lambda: clock[0])
    projection.write(
        [
            player("fresh", 1600.0, NOW - timedelta(days=1)),
            player("edge", 1550.0, NOW - timedelta(days=7)),
            player("stale", 1500.0, NOW - timedelta(days=7, seconds=1)),
            player("never", 1450.0, None),
        ],
        rt.config,
    )
    assert {"fresh": 1600.0, "edge": 1550.0} == board(rt, L, "active")
    assert 4 == len(board(rt, L, "rating"))
    clock[0] = NOW + timedelta(seconds=1)
    assert {L: 1} == active.sweep(rt.leaderboard_redis, rt.config, clock[0])
    assert {"fresh": 1600.0} == board(rt, L, "active")
    clock[0] = NOW + timedelta(days=5)
    assert {L: 0} == active.sweep(rt.leaderboard_redis, rt.config, clock[0])
    projection.write([player("stale", 1510.0, clock[0], version=2)], rt.config)
    assert {"fresh": 1600.0, "stale": 1510.0} == board(rt, L, "active")
    clock[0] = NOW + timedelta(days=8)
    active.sweep(rt.leaderboard_redis, rt.config, clock[0])
    assert {"stale": 1510.0} == board(rt, L, "active")
    assert [b"stale"] == rt.leaderboard_redis.zrange(keys.active_since(L), 0, -1)
    assert 4 == len(board(rt, L, "rating"))


def test_the_worker_rebuild_and_reconcile_keep_the_active_board(runtime, make_runtime, tmp_path):
    """kept right by the worker on every write, rebuilt by `ladder rebuild`,
    checked (and repaired) by `ladder reconcile`; reads take board=active."""
    rt = with_active_days(make_runtime, tmp_path)
    old = datetime.now(UTC) - timedelta(days=9)
    publish(rt, game("amy", "bob"), game("cat", "dan", ended_at=old))
    drain(rt)
    assert {"amy", "bob"} == set(board(rt, L, "active"))
    assert 4 == len(board(rt, L, "rating"))
    assert ["amy", "bob"] == [
        e.player_id for e in reader.top(rt.leaderboard_redis, L, 10, "active")
    ]
    ladder_config = rt.config.ladders[L]
    assert reconcile.check(rt.engine, rt.leaderboard_redis, ladder_config).clean
    rt.leaderboard_redis.zadd(keys.active(L), {"cat": 1500.0})
    rt.leaderboard_redis.zrem(keys.active(L), "amy")
    drift = reconcile.check(rt.engine, rt.leaderboard_redis, ladder_config)
    assert {("cat", "extra"), ("amy", "missing")} == {
        (d.player, kind) for kind in ("extra", "missing") for d in getattr(drift, kind)
    }
    rt.leaderboard_redis.delete(keys.active(L), keys.active_since(L))
    report = rebuild.rebuild(rt.engine, rt.leaderboard_redis, ladder_config)
    assert 2 == report.boards["active"]
    assert {"amy", "bob"} == set(board(rt, L, "active"))
    assert reconcile.check(rt.engine, rt.leaderboard_redis, ladder_config).clean


def test_a_ladder_without_active_days_has_no_active_board(runtime):
    """off by default; asking for it is refused like any missing board."""
    publish(runtime, game("amy", "bob"))
    drain(runtime)
    assert 0 == runtime.leaderboard_redis.exists(keys.active(L))
    assert not reader.board_available(runtime.config.ladders[L], "active")


def test_active_days_must_be_a_whole_number_of_days():
    """`[ladders.<name>.board] active_days = N`: anything else is refused naming the field."""
    from worker.ladders import ConfigError, parse_config

    text = default_config_path().read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="board.active_days"):
        parse_config(text + "\n[ladders.gammon42.board]\nactive_days = 0\n")
    with pytest.raises(ConfigError, match="board.since"):
        parse_config(text + "\n[ladders.gammon42.board]\nsince = 3\n")
    assert (
        7
        == parse_config(text + "\n[ladders.fibs.board]\nactive_days = 7\n")
        .ladders["fibs"]
        .active_days
    )


# -- export ----------------------------------------------------------------------------------


def cli(rt: Any, *argv: str, capsys: Any) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ladder")
    cli_boards.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    capsys.readouterr()
    code = dispatch(rt, args)
    out, err = capsys.readouterr()
    return code, out, err


def test_export_equals_the_board(runtime, capsys):
    """every player of the board in rank order with rank, rating, games,
    experience, provisional, percentile and last game; a page boundary changes nothing."""
    scores = {f"p{i:03d}": float(1400 + (i * 37) % 11) for i in range(45)}
    seed(runtime.leaderboard_redis, scores)
    lines = list(export.lines(runtime.leaderboard_redis, L, size=7))
    assert model(scores) == [(x["rank"], x["player_id"], x["rating"]) for x in lines]
    assert [direct_percentile(scores, x["player_id"]) for x in lines] == [
        x["percentile"] for x in lines
    ]
    assert {(3, 7, False, None)} == {
        (x["games"], x["experience"], x["provisional"], x["last_game_at"]) for x in lines
    }
    code, out, _ = cli(runtime, "export", L, capsys=capsys)
    assert (0, lines) == (code, [json.loads(line) for line in out.splitlines()])
    code, out, _ = cli(runtime, "export", L, "--format", "csv", capsys=capsys)
    rows = out.splitlines()
    header = "player_id,rank,rating,games,experience,provisional,percentile,last_game_at"
    assert header + ",deviation,volatility" == rows[0]
    assert [x["player_id"] for x in lines] == [row.split(",")[0] for row in rows[1:]]


def test_the_boosted_board_exported_as_csv_heads_its_score_column_points(runtime, capsys):
    """Issue 36: the boosted-board CSV export labels its points column `points`, not
    `rating` (SPEC 2.1: boosted games add points to a separate board), in whole numbers."""
    from worker import keys

    runtime.leaderboard_redis.zadd(keys.boosted(L), {"ann": 12.0, "ben": 4.0})
    code, out, _ = cli(runtime, "export", L, "--board", "boosted", "--format", "csv", capsys=capsys)
    header, *rows = out.splitlines()
    assert (0, "player_id,rank,points") == (code, ",".join(header.split(",")[:3]))
    assert ["ann,1,12", "ben,2,4"] == [",".join(row.split(",")[:3]) for row in rows]


def test_export_over_http_streams_json_lines(runtime):
    """`GET /ladders/{ladder}/export` streams the same as JSON lines."""
    from starlette.testclient import TestClient

    from worker.entrypoints.api.app import create_app

    seed(runtime.leaderboard_redis, TIES)
    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app) as client:
        response = client.get(f"/ladders/{L}/export")
        assert response.headers["content-type"].startswith("application/x-ndjson")
        got = [json.loads(line) for line in response.text.splitlines()]
        assert list(export.lines(runtime.leaderboard_redis, L)) == got
        assert (
            404 == client.get(f"/ladders/{L}/export", params={"board": "season:none"}).status_code
        )


def test_cli_among_prints_the_friends_and_the_missing(runtime, capsys):
    """`ladder among L ID... [--json]`."""
    seed(runtime.leaderboard_redis, TIES)
    code, out, _ = cli(runtime, "among", L, "eve", "amy", "ghost", "--json", capsys=capsys)
    found = json.loads(out)
    assert (0, ["amy", "eve"], ["ghost"]) == (
        code,
        [e["player_id"] for e in found["entries"]],
        found["missing"],
    )
    code, out, _ = cli(runtime, "among", L, "eve", "ghost", capsys=capsys)
    assert 0 == code and "not on the board: ghost" in out
    code, _, err = cli(runtime, "among", L, "eve", "--board", "active", capsys=capsys)
    assert (2, "ladder: ladder 'gammon42' has no active board\n") == (code, err)


def test_the_workers_maintenance_sweeps_with_the_clock_it_is_given(runtime, make_runtime, tmp_path):
    """The rule ("swept periodically in the workers' maintenance"): the sweep a worker runs
    reads the clock it is given."""
    rt = with_active_days(make_runtime, tmp_path)
    Projection(rt.leaderboard_redis, clock=lambda: NOW).write(
        [player("gone", 1500.0, NOW - timedelta(days=6))], rt.config
    )
    active.sweeper(rt.leaderboard_redis, rt.config, clock=lambda: NOW + timedelta(days=2))()
    assert {} == board(rt, L, "active")
    assert {"gone": 1500.0} == board(rt, L, "rating")


def test_the_workers_maintenance_loads_the_board_script_on_a_ladder_without_active_board(
    runtime, monkeypatch
):
    """The reader ACL user may run the board script but not load it: every worker's
    maintenance loads it, each time (a restarted Redis has emptied the cache)."""
    redis = runtime.leaderboard_redis
    loaded: list[str] = []
    original = redis.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        if args[0] == "SCRIPT LOAD":
            loaded.append(original(*args, **options))
            return loaded[-1]
        return original(*args, **options)

    monkeypatch.setattr(redis, "execute_command", counted)
    maintain = active.sweeper(redis, runtime.config)
    maintain()
    maintain()
    assert [reader.SCRIPT_SHA] * 2 == [str(sha) for sha in loaded]


def test_the_maintenance_thread_runs_the_sweep(runtime):
    """The maintenance chore runs on a thread of the worker as soon as it starts."""
    import threading

    from worker.queue.liveness import Liveness

    ran = threading.Event()
    worker = argparse.Namespace(name="w-test")
    liveness = Liveness(runtime.redis, argparse.Namespace(), worker, ran.set)  # type: ignore[arg-type]
    liveness._threads = [t for t in liveness._threads if t.name == "ladder-maintenance"]
    liveness.start()
    try:
        assert ran.wait(5)
    finally:
        liveness.close()
