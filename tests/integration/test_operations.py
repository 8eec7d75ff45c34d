"""Operations against real Redis and PostgreSQL: dead-letter queue, rebuild, reconcile, seasons."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rq import Queue
from rq.registry import FailedJobRegistry, ScheduledJobRegistry

from schemas import InvalidEvent
from tests.conftest import drain, publish
from tests.events import game, link, player_updated
from tests.integration.helpers import audit, board, card, ledger, stored_players
from worker import keys
from worker.boards import projection
from worker.entrypoints.cli import dlq as cli_dlq
from worker.entrypoints.cli import ops as cli_ops
from worker.entrypoints.cli.main import dispatch
from worker.ladders import default_config_path
from worker.ops import rebuild, reconcile, seasons

# -- helpers ----------------------------------------------------------------------------------


def ladder(rt: Any, *argv: str) -> int:
    """Run one operator command the way ``ladder`` does, against this runtime."""
    parser = argparse.ArgumentParser(prog="ladder")
    commands = parser.add_subparsers(dest="command", required=True)
    cli_dlq.register(commands)
    cli_ops.register(commands)
    return dispatch(rt, parser.parse_args(list(argv)))


def ladder_json(rt: Any, capsys: Any, *argv: str) -> Any:
    capsys.readouterr()
    assert 0 == ladder(rt, *argv, "--json")
    return json.loads(capsys.readouterr().out)


def config_with_arena(tmp_path: Path) -> Path:
    """The shipped configuration plus a ladder named ``arena`` (a copy of prostriker)."""
    text = default_config_path().read_text(encoding="utf-8")
    prostriker = text[text.index("[ladders.prostriker]") :]
    path = tmp_path / "ladders.toml"
    path.write_text(text + "\n" + prostriker.replace("ladders.prostriker", "ladders.arena"))
    return path


# -- dead-letter queue --------------------------------------------------------------------------


def test_a_permanent_failure_goes_to_the_dlq_at_once_and_is_never_retried(runtime):
    """Unknown ladder: one dead letter, one attempt, nothing scheduled for a retry."""
    publish(runtime, game("alice", "bob", event_id="lost", ladder="arena"))
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    assert ("lost", "arena", "unknown_ladder", 1) == (
        letter.event_id,
        letter.ladder,
        letter.reason,
        letter.attempts,
    )
    assert 0 == ScheduledJobRegistry(queue=runtime.inbox.queue).count
    assert [] == audit(runtime)


def test_dlq_list_json_filters_by_reason_ladder_and_age(runtime, capsys):
    """--json is an array of objects with event_id (null without one) and reason; filters apply."""
    publish(
        runtime,
        game("alice", "bob", event_id="bad-cube", cube=3),
        "{not json",
        game("alice", "bob", event_id="lost", ladder="arena"),
    )
    drain(runtime)
    rows = ladder_json(runtime, capsys, "dlq", "list")
    assert {("bad-cube", "invalid_cube"), (None, "invalid_json"), ("lost", "unknown_ladder")} == {
        (r["event_id"], r["reason"]) for r in rows
    }
    assert all(r["attempts"] == 1 and r["age_seconds"] is not None for r in rows)
    assert ["lost"] == [
        r["event_id"] for r in ladder_json(runtime, capsys, "dlq", "list", "--ladder", "arena")
    ]
    only = ladder_json(runtime, capsys, "dlq", "list", "--reason", "invalid_cube")
    assert ["bad-cube"] == [r["event_id"] for r in only]
    assert [] == ladder_json(runtime, capsys, "dlq", "list", "--older-than", "10m")
    assert 3 == len(ladder_json(runtime, capsys, "dlq", "list", "--newer-than", "1h"))


def test_dlq_age_accepts_seconds_minutes_hours_days_and_weeks():
    """Ages like 90s, 10m, 2h, 3d, 1w."""
    assert [90, 600, 7200, 259200, 604800] == [
        cli_dlq.age(a).total_seconds() for a in ("90s", "10m", "2h", "3d", "1w")
    ]
    with pytest.raises(argparse.ArgumentTypeError):
        cli_dlq.age("10 minutes")


def test_dlq_show_accepts_an_event_id_and_prints_payload_reason_and_traceback(runtime, capsys):
    """show: by dead-letter id or by an unambiguous event id."""
    publish(runtime, game("alice", "bob", event_id="lost", ladder="arena"))
    drain(runtime)
    shown = ladder_json(runtime, capsys, "dlq", "show", "lost")
    assert "unknown_ladder" == shown["reason"]
    assert "lost" == json.loads(shown["payload"])["event_id"]
    assert "arena" in shown["traceback"]
    again = ladder_json(runtime, capsys, "dlq", "show", shown["id"])
    assert {**shown, "age_seconds": None} == {**again, "age_seconds": None}  # read apart


def test_a_dead_letter_id_that_names_nothing_is_exit_1(runtime, capsys):
    """Issue 36: `dlq show <unknown>` exits 1, "nothing matched" by the README's table (1
    could not do it / nothing matched, 2 asked wrongly); so do replay and discard of it."""
    for command in (("show",), ("replay",), ("discard", "--yes")):
        capsys.readouterr()
        assert 1 == ladder(runtime, "dlq", *command, "no-such-event")
        assert "ladder: no dead letter 'no-such-event'\n" == capsys.readouterr().err


def test_dlq_show_refuses_an_event_id_that_names_two_dead_letters(runtime, capsys):
    """Two payloads with one event id: the operator must pick by dead-letter id."""
    publish(
        runtime,
        game("alice", "bob", event_id="twice", ladder="arena"),
        game("carol", "dave", event_id="twice", ladder="arena2"),
    )
    drain(runtime)
    assert 2 == ladder(runtime, "dlq", "show", "twice")
    assert "names 2 dead letters" in capsys.readouterr().err


def test_an_event_for_an_unknown_ladder_is_applied_once_when_replayed_after_the_fix(
    runtime, make_runtime, tmp_path
):
    """Dead-lettered for unknown_ladder; the ladder is configured; replay applies it once."""
    event = player_updated("arena", "alice", True, True)
    publish(runtime, event)
    drain(runtime)
    assert [event["event_id"]] == [d.event_id for d in runtime.dead_letters.list()]

    fixed = make_runtime(ladder_config=config_with_arena(tmp_path))
    assert 0 == ladder(fixed, "dlq", "replay", event["event_id"])
    assert 0 == fixed.dead_letters.count()
    drain(fixed)
    assert [] == fixed.dead_letters.list()
    assert [(event["event_id"], "applied")] == [
        (row["event_id"], row["outcome"]) for row in audit(fixed, "arena")
    ]
    assert stored_players(fixed, "arena")["alice"]["email_verified"] is True
    # Replaying an event that is already applied changes nothing.
    fixed.dead_letters.add(json.dumps(event), InvalidEvent("retries_exhausted", "test"))
    version = stored_players(fixed, "arena")["alice"]["version"]
    assert 0 == ladder(fixed, "dlq", "replay", "--all")
    drain(fixed)
    assert 1 == len(audit(fixed, "arena"))
    assert version == stored_players(fixed, "arena")["alice"]["version"]
    assert [] == fixed.dead_letters.list()


def test_a_dead_lettered_game_is_applied_once_when_replayed_after_the_fix(
    runtime, make_runtime, tmp_path
):
    """A game for an unknown ladder keeps its payload in the DLQ and scores when replayed."""
    publish(runtime, game("alice", "bob", event_id="arena-1", ladder="arena"))
    drain(runtime)
    fixed = make_runtime(ladder_config=config_with_arena(tmp_path))
    assert 0 == ladder(fixed, "dlq", "replay", "arena-1")
    drain(fixed)
    assert [] == [(d.reason, d.detail) for d in fixed.dead_letters.list()]
    assert {"alice": 1220.0, "bob": 1180.0} == board(fixed, "arena")
    assert 1 == len(ledger(fixed, "arena", "alice"))


def test_an_event_still_invalid_when_replayed_returns_to_the_dlq_with_one_more_attempt(runtime):
    """Replay of a still-unknown ladder fails again and stays in the DLQ."""
    event = player_updated("arena", "alice", True, True)
    publish(runtime, event)
    drain(runtime)
    assert 0 == ladder(runtime, "dlq", "replay", "--reason", "unknown_ladder", "--ladder", "arena")
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    assert (event["event_id"], "unknown_ladder", 2) == (
        letter.event_id,
        letter.reason,
        letter.attempts,
    )
    _, trace = runtime.dead_letters.get(letter.id)
    assert "EventStillInvalid" in trace


def test_dlq_replay_needs_ids_all_or_a_filter(runtime, capsys):
    """A bare replay selects nothing and says so."""
    assert 2 == ladder(runtime, "dlq", "replay")
    assert "replay what?" in capsys.readouterr().err


def test_dlq_discard_refuses_without_yes_when_not_on_a_terminal(runtime, capsys, monkeypatch):
    """Discard deletes for good: on a pipe it needs --yes."""
    publish(runtime, game("alice", "bob", event_id="lost", ladder="arena"))
    drain(runtime)
    monkeypatch.setattr(cli_dlq, "is_terminal", lambda stream: False)
    assert 2 == ladder(runtime, "dlq", "discard", "lost")
    assert 1 == runtime.dead_letters.count()
    assert 0 == ladder(runtime, "dlq", "discard", "lost", "--yes")
    assert 0 == runtime.dead_letters.count()


def test_dlq_discard_asks_on_a_terminal(runtime, monkeypatch):
    """On a terminal, anything but yes keeps the dead letter."""
    publish(runtime, game("alice", "bob", event_id="lost", ladder="arena"))
    drain(runtime)
    monkeypatch.setattr(cli_dlq, "is_terminal", lambda stream: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert 2 == ladder(runtime, "dlq", "discard", "lost")
    assert 1 == runtime.dead_letters.count()
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert 0 == ladder(runtime, "dlq", "discard", "lost")
    assert 0 == runtime.dead_letters.count()


def test_rq_info_still_shows_the_dead_letters_as_failed_jobs(runtime):
    """RQ's own tools see the DLQ: its failed registry and ``rq info``."""
    publish(runtime, game("a", "b", event_id="x1", ladder="arena"), "{not json")
    drain(runtime)
    assert 2 == FailedJobRegistry(queue=Queue(keys.QUEUE_NAME, connection=runtime.redis)).count
    rq = Path(sys.executable).with_name("rq")
    info = subprocess.run(
        [str(rq), "info", "--url", runtime.settings.redis_url, keys.QUEUE_NAME],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 0 == info.returncode, info.stderr
    assert keys.QUEUE_NAME in info.stdout


def test_dead_letters_do_not_expire_for_at_least_thirty_days(runtime):
    """The registry entry and the job hash both outlive 30 days."""
    publish(runtime, game("a", "b", event_id="x1", ladder="arena"))
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    registry = runtime.dead_letters.registry
    expires = runtime.redis.zscore(registry.key, letter.id)
    assert expires >= time.time() + 30 * 86400 - 60
    assert runtime.redis.ttl(f"rq:job:{letter.id}") >= 30 * 86400 - 60


def test_a_dlq_ttl_of_zero_days_keeps_dead_letters_until_an_operator_acts(make_runtime):
    """LADDER_DLQ_TTL_DAYS=0: no expiry at all."""
    keep = make_runtime(dead_letter_ttl_days=0)
    job_id = keep.dead_letters.add("{not json", InvalidEvent("invalid_json", "test"))
    assert -1 == keep.redis.ttl(f"rq:job:{job_id}")
    assert -1 == keep.redis.zscore(keep.dead_letters.registry.key, job_id)
    assert [job_id] == [d.id for d in keep.dead_letters.list()]


# -- rebuild ------------------------------------------------------------------------------------


def _busy_ladders(rt: Any) -> None:
    publish(
        rt,
        game("alice", "bob"),
        game("alice", "carol"),
        game("dave", "bob", mode="boosted", cube=2),
        game("anon-1", "erin"),
        link("gammon42", "anon-1", "frank"),
        game("fay", "gus", ladder="fibs", match_length=5),
        player_updated("fibs", "fay", True, True),
        game("p1", "p2", ladder="prostriker"),
    )
    drain(rt)


def _redis_state(rt: Any, ladder_name: str) -> dict[str, Any]:
    state: dict[str, Any] = {k: board(rt, ladder_name, k) for k in ("rating", "public", "boosted")}
    for pid in stored_players(rt, ladder_name):
        state[pid] = card(rt, ladder_name, pid)
    return state


def test_a_deleted_leaderboard_is_rebuilt_equal_to_postgresql(runtime, monkeypatch, capsys):
    """Every key of the ladder deleted; rebuild writes exactly what the workers had written."""
    _busy_ladders(runtime)
    before = _redis_state(runtime, "gammon42")
    assert before["rating"] and before["boosted"]
    for key in runtime.redis.scan_iter(match="ladder:{gammon42}:*"):
        runtime.redis.delete(key)
    runtime.redis.hset(keys.player("gammon42", "ghost"), mapping={"rating": "1", "version": "9"})
    monkeypatch.setattr(rebuild, "CATCH_UP_MARGIN", timedelta(seconds=-3600))  # build path only
    report = ladder_json(runtime, capsys, "rebuild", "gammon42")
    assert (len(stored_players(runtime, "gammon42")), 1, 0) == (
        report["players"],
        report["stale_hashes"],
        report["caught_up"],
    )
    assert before == _redis_state(runtime, "gammon42")
    assert not runtime.redis.exists(keys.player("gammon42", "ghost"))
    assert [] == list(runtime.redis.scan_iter(match="ladder:{gammon42}:rebuild:*"))
    assert -1 == runtime.redis.ttl(keys.rating("gammon42"))
    assert reconcile.check(runtime.engine, runtime.redis, runtime.config.ladders["gammon42"]).clean


def test_rebuild_swaps_atomically_and_keeps_the_version_guard(runtime, monkeypatch):
    """Readers never see an empty board; a later stale projection is still refused."""
    _busy_ladders(runtime)
    seen: list[int] = []
    real_send = projection.write_rows

    def spy(client: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(int(runtime.redis.zcard(keys.rating("gammon42"))))
        return real_send(client, *args, **kwargs)

    monkeypatch.setattr(rebuild, "write_rows", spy)
    rebuild.rebuild(runtime.engine, runtime.redis, runtime.config.ladders["gammon42"])
    assert seen and all(n == seen[0] > 0 for n in seen)
    from engine import Player as PlayerRecord

    version = int(card(runtime, "gammon42", "alice")["version"])
    stale = PlayerRecord("gammon42", "alice", rating=1.0, listed=True, version=version - 1)
    runtime.projection.write([stale], runtime.config)
    assert board(runtime, "gammon42")["alice"] > 1.0


def test_rows_equal_card_and_is_public_for_every_ruleset(runtime):
    """What the projection script is given (``BoardRows``, the fast path used by workers, rebuild
    and reconcile) is exactly ``projection.card`` / ``is_public`` for every ruleset."""
    from worker.boards.projection import BoardRows, as_row, is_public
    from worker.boards.projection import card as projected_card
    from worker.store.statements import load_players

    _busy_ladders(runtime)
    publish(runtime, *(game(f"x{i}", f"y{i}", ladder="fibs", match_length=i) for i in (1, 9)))
    drain(runtime)
    for name, ladder_config in runtime.config.ladders.items():
        rows = BoardRows(ladder_config)
        with runtime.engine.connect() as conn:
            records = load_players(conn, [(name, p) for p in stored_players(runtime, name)])
        assert records
        for record in records.values():
            pid, version, on_board, rating, public, boosted, flat, *_ = rows.row(as_row(record))
            assert (pid, rating) == (record.player_id, repr(float(record.rating)))
            assert on_board == (1 if record.listed and not record.linked_to else 0)
            assert public == (1 if is_public(ladder_config, record) else 0)
            assert str(0 if record.linked_to else record.boosted_points) == boosted
            assert str(record.version) == version
            assert projected_card(ladder_config, record) == dict(
                zip(flat[::2], flat[1::2], strict=True)
            )


def test_rebuild_restores_season_archives(runtime):
    """A lost season archive comes back from PostgreSQL."""
    _busy_ladders(runtime)
    ladder_config = runtime.config.ladders["gammon42"]
    seasons.close(runtime.engine, runtime.redis, ladder_config, "s0", seasons.Policy())
    archived = runtime.redis.zrange(keys.season("gammon42", "s0"), 0, -1, withscores=True)
    runtime.redis.delete(keys.season("gammon42", "s0"))
    report = rebuild.rebuild(runtime.engine, runtime.redis, ladder_config)
    assert 1 == report.seasons
    assert archived == runtime.redis.zrange(keys.season("gammon42", "s0"), 0, -1, withscores=True)


# -- reconcile ----------------------------------------------------------------------------------


def test_reconcile_reports_planted_drift_and_repair_fixes_it(runtime, capsys):
    """Missing, extra and wrong entries are each named by ladder, key and player."""
    _busy_ladders(runtime)
    assert {"missing": [], "extra": [], "wrong": []} == {
        k: v
        for k, v in ladder_json(runtime, capsys, "reconcile").items()
        if k in ("missing", "extra", "wrong")
    }
    r = runtime.redis
    r.zrem(keys.rating("gammon42"), "alice")  # missing
    r.delete(keys.player("gammon42", "carol"))  # missing hash
    r.zadd(keys.rating("gammon42"), {"intruder": 2000})  # extra: no such player
    r.zadd(keys.public("fibs"), {"gus": 1500})  # extra: not eligible for the public list
    r.zadd(keys.rating("gammon42"), {"bob": 1.0})  # wrong score
    r.hset(keys.player("prostriker", "p1"), "games", "99")  # wrong hash field

    capsys.readouterr()
    assert 1 == ladder(runtime, "reconcile", "--json")
    found = json.loads(capsys.readouterr().out)
    named = {
        kind: {(d["ladder"], d["key"], d["player"]) for d in found[kind]}
        for kind in ("missing", "extra", "wrong")
    }
    assert {
        ("gammon42", keys.rating("gammon42"), "alice"),
        ("gammon42", keys.player("gammon42", "carol"), "carol"),
    } == named["missing"]
    assert {
        ("gammon42", keys.rating("gammon42"), "intruder"),
        ("fibs", keys.public("fibs"), "gus"),
    } == named["extra"]
    assert {
        ("gammon42", keys.rating("gammon42"), "bob"),
        ("prostriker", keys.player("prostriker", "p1"), "p1"),
    } == named["wrong"]
    (games,) = [d for d in found["wrong"] if d["player"] == "p1"]
    assert ({"games": "1"}, {"games": "99"}) == (games["expected"], games["actual"])

    assert 0 == ladder(runtime, "reconcile", "--repair")
    assert "Redis is now clean" in capsys.readouterr().out
    again = ladder_json(runtime, capsys, "reconcile", "gammon42")
    assert ([], [], []) == (again["missing"], again["extra"], again["wrong"])
    assert 0 == ladder(runtime, "reconcile", "fibs")
    assert 0 == ladder(runtime, "reconcile", "prostriker")
    assert "intruder" not in board(runtime, "gammon42")
    assert "1" == card(runtime, "prostriker", "p1")["games"]


def test_reconcile_skips_a_player_a_worker_is_writing_right_now(runtime):
    """A Redis hash newer than the row read is in flight, not drift."""
    _busy_ladders(runtime)
    version = int(card(runtime, "gammon42", "alice")["version"])
    runtime.redis.hset(keys.player("gammon42", "alice"), "version", str(version + 1))
    report = reconcile.check(runtime.engine, runtime.redis, runtime.config.ladders["gammon42"])
    assert (True, 1) == (report.clean, report.skipped)


def test_reconcile_of_an_unknown_ladder_is_refused(runtime):
    assert 2 == ladder(runtime, "reconcile", "nowhere")


# -- seasons ------------------------------------------------------------------------------------


def test_closing_a_season_archives_standings_resets_and_a_second_close_is_a_no_op(runtime, capsys):
    """Season 0 closes into ladder:{prostriker}:season:S0; ratings move halfway to 1200."""
    publish(
        runtime,
        game("p1", "p2", ladder="prostriker"),
        game("p1", "p3", ladder="prostriker"),
        game("p4", "p5", ladder="prostriker", mode="boosted"),
    )
    drain(runtime)
    before = board(runtime, "prostriker")
    closed = ladder_json(
        runtime,
        capsys,
        "season",
        "close",
        "prostriker",
        "--name",
        "S0",
        "--reset",
        "toward-start",
        "--fraction",
        "0.5",
    )
    assert (0, 3, False) == (closed["number"], closed["players_archived"], closed["already_closed"])
    archive = {
        m.decode(): s
        for m, s in runtime.redis.zrange(keys.season("prostriker", "S0"), 0, -1, withscores=True)
    }
    assert before == archive
    ranks = {
        s["player_id"]: s["rank"] for s in seasons.standings(runtime.engine, "prostriker", "S0")
    }
    assert 1 == ranks["p1"] and {1, 2, 3} >= set(ranks.values())
    # p1: 1200 + 20 + 19 = 1239 -> halfway to 1200 = 1219.5 -> 1220 (half away from zero)
    after = board(runtime, "prostriker")
    assert before["p1"] == 1239.0 and after["p1"] == 1220.0
    assert {pid: (1200 + r) / 2 for pid, r in before.items()} == {
        pid: after[pid] - (0.5 if (1200 + before[pid]) % 2 else 0) for pid in after
    }
    (change,) = [c for c in ledger(runtime, "prostriker", "p1") if c["kind"] == "season"]
    assert ("season:S0", 1239.0, 1220.0) == (
        change["event_id"],
        change["rating_before"],
        change["rating_after"],
    )
    assert card(runtime, "prostriker", "p1")["rating"] == "1220.0"
    assert reconcile.check(
        runtime.engine, runtime.redis, runtime.config.ladders["prostriker"]
    ).clean

    second = ladder_json(
        runtime, capsys, "season", "close", "prostriker", "--name", "S0", "--reset", "start"
    )
    assert second["already_closed"] is True
    assert after == board(runtime, "prostriker")
    listed = ladder_json(runtime, capsys, "season", "list", "prostriker")
    assert [("S0", False), ("Season 1", True)] == [(s["name"], s["open"]) for s in listed]
    assert 0 == ladder(runtime, "season", "close", "prostriker", "--name", "S0")
    assert "already closed" in capsys.readouterr().out


def test_season_list_keeps_its_columns_aligned(runtime, capsys):
    """Issue 36: `season list` aligns its columns: every row's cells start where the
    header's do, with names of any length and times with microseconds stored."""
    publish(runtime, game("p1", "p2", ladder="prostriker"))
    drain(runtime)
    long_name = "The long autumn season of 2026"
    assert 0 == ladder(runtime, "season", "close", "prostriker", "--name", long_name)
    capsys.readouterr()
    assert 0 == ladder(runtime, "season", "list", "prostriker")
    header, *rows = capsys.readouterr().out.splitlines()
    starts = [header.index(word) for word in ("name", "state", "opened", "closed", "players")]
    assert 2 == len(rows)
    for row in rows:
        for start in starts:
            assert row[start - 1] == " " and row[start] != " ", (header, row)
    assert rows[0].split()[0] == "0" and long_name in rows[0]
    assert re.search(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b", rows[0])


def test_a_season_reset_to_start_and_a_game_after_it_chain_the_ledger(runtime):
    """Reset "start": every rating back to 1500; the next game starts from there."""
    publish(runtime, game("alice", "bob", event_id="g-1"))
    drain(runtime)
    ladder_config = runtime.config.ladders["gammon42"]
    closed = seasons.close(
        runtime.engine, runtime.redis, ladder_config, "one", seasons.Policy("start")
    )
    assert 2 == closed.reset
    assert {"alice": 1500.0, "bob": 1500.0} == board(runtime, "gammon42")
    publish(runtime, game("alice", "bob", event_id="g-2"))
    drain(runtime)
    entries = ledger(runtime, "gammon42", "alice")
    assert ["game", "season", "game"] == [e["kind"] for e in entries]
    assert all(
        a["rating_after"] == b["rating_before"] for a, b in zip(entries, entries[1:], strict=False)
    )
    assert {"alice": 1516.0, "bob": 1484.0} == board(runtime, "gammon42")


def test_season_policy_comes_from_the_ladder_configuration_unless_the_flag_overrides():
    """[ladders.<name>.season] decides (none when the table is absent); the flag wins."""
    from worker.ladders import default_config_path, load_config, parse_config

    base = load_config().ladders["gammon42"]
    assert (seasons.Policy("none"), "configuration") == seasons.choose_policy(base, None, None)
    text = (
        default_config_path()
        .read_text(encoding="utf-8")
        .replace(
            "[ladders.fibs]",
            '[ladders.gammon42.season]\nreset = "toward_start"\nfraction = 0.25\n\n[ladders.fibs]',
            1,
        )
    )
    configured = parse_config(text).ladders["gammon42"]
    assert (seasons.Policy("toward_start", 0.25), "configuration") == seasons.choose_policy(
        configured, None, None
    )
    assert (seasons.Policy("start", 0.5), "command line") == seasons.choose_policy(
        configured, "start", None
    )
    with pytest.raises(seasons.SeasonError):
        seasons.Policy.parse("toward-start", 1.5)
    with pytest.raises(seasons.SeasonError):
        seasons.check_name("a:b{c}")
