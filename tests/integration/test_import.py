"""`ladder import` against a real PostgreSQL and Redis: refusals by line, one transaction per
file, idempotent re-import, the boards as if the players had played, and `ladder verify`."""

from __future__ import annotations

import argparse
import io
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board, card, ledger, stored_players
from worker.boards import reader
from worker.entrypoints.cli import boards as cli_boards
from worker.entrypoints.cli.main import dispatch
from worker.ops import import_lines, importer, rebuild, verify
from worker.ops.progress import Progress

L = "fibs"


def write(path: Path, *lines: Any) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def run(rt: Any, path: Path, **options: Any) -> importer.ImportReport:
    config = rt.config.ladders[L]
    return importer.import_file(rt.engine, rt.leaderboard_redis, config, path, **options)


def cli(rt: Any, *argv: str, capsys: Any) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ladder")
    cli_boards.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    capsys.readouterr()
    code = dispatch(rt, args)
    out, err = capsys.readouterr()
    return code, out, err


GOOD = [
    {"player_id": "ann", "rating": 1712.5, "games": 40, "experience": 300},
    {"player_id": "ben", "rating": 1490, "experience": 10, "email_verified": True},
    {
        "player_id": "cy",
        "rating": 1601.25,
        "games": 3,
        "experience": 60,
        "last_game_at": "2026-11-20T10:00:00+01:00",
        "email_verified": True,
        "display_name_chosen": True,
    },
]


def test_imported_players_appear_on_the_boards_as_if_they_had_played(runtime, tmp_path):
    """each imported player is on the boards with their card, and has one ledger
    row of kind import from the ruleset's start to the imported rating."""
    report = run(runtime, write(tmp_path / "players.jsonl", *GOOD))
    assert (3, 3, 0, True) == (report.lines, report.imported, report.refused, report.committed)
    assert {"ann": 1712.5, "ben": 1490.0, "cy": 1601.25} == board(runtime, L, "rating")
    assert {"cy": 1601.25} == board(runtime, L, "public")  # verified, named, experience >= 20
    found = reader.card(runtime.leaderboard_redis, L, "cy")
    assert (3, 60, False, "2026-11-20T09:00:00+00:00", 2) == (
        found.games,
        found.experience,
        found.provisional,
        found.last_game_at,
        found.rank,
    )
    assert card(runtime, L, "ben")["provisional"] == "1"  # experience 10 < 50
    rows = ledger(runtime, L, "ann")
    assert [("import", 1500.0, 1712.5, 212.5, report.event_id)] == [
        (r["kind"], r["rating_before"], r["rating_after"], r["delta"], r["event_id"]) for r in rows
    ]


def test_every_refusal_names_its_line_and_nothing_is_imported(runtime, tmp_path):
    """refused line by line with the line number (existing player, duplicate in
    the file, a rating that is not finite, an id the contract refuses); then nothing at all."""
    publish(runtime, game("old", "timer", ladder=L))
    drain(runtime)
    path = write(
        tmp_path / "players.jsonl",
        {"player_id": "ok1", "rating": 1500},
        {"player_id": "old", "rating": 1600},
        {"player_id": "ok1", "rating": 1510},
        {"player_id": "nan", "rating": float("nan")},
        "",
        '{"player_id": "inf", "rating": 1e999}',
        {"player_id": "\u202eevil", "rating": 1500},
        {"player_id": "x" * 129, "rating": 1500},
        {"player_id": "str", "rating": "high"},
        "not json",
        {"player_id": "neg", "rating": 1500, "games": -1},
        {"player_id": "late", "rating": 1500, "last_game_at": "2099-01-01T00:00:00Z"},
        {"player_id": "ok2", "rating": 1400},
    )
    before = stored_players(runtime, L)
    report = run(runtime, path)
    assert [2, 3, 4, 6, 7, 8, 9, 10, 11, 12] == [n for n, _ in report.refusals]
    reasons = dict(report.refusals)
    assert "player already exists on the ladder" == reasons[2]
    assert "player already named on line 1" == reasons[3]
    assert reasons[4].startswith("rating: not a finite number")
    assert reasons[6].startswith("rating: not a finite number")
    assert reasons[7].startswith("player_id: must not contain")
    assert reasons[8].startswith("player_id:")
    assert "not a JSON object" == reasons[10]
    assert reasons[12] == "last_game_at: in the future"
    assert (False, 0, 10) == (report.committed, report.imported, report.refused)
    assert before == stored_players(runtime, L)
    assert "ok1" not in board(runtime, L, "rating")


def test_a_ladder_that_keeps_whole_ratings_refuses_a_fraction_as_adjust_does(runtime, tmp_path):
    """One meaning for whole ratings: gammon42 keeps them (``ladder adjust --delta 10.5`` is
    refused), so an import line of 1450.5 is refused too; fibs keeps fractions and takes it."""
    path = write(tmp_path / "players.jsonl", {"player_id": "half", "rating": 1450.5})
    config = runtime.config.ladders["gammon42"]
    report = importer.import_file(runtime.engine, runtime.leaderboard_redis, config, path)
    assert [(1, "rating: the ladder keeps whole ratings: 1450.5")] == report.refusals
    assert "half" not in stored_players(runtime, "gammon42")
    assert 0 == report.imported
    assert 1 == run(runtime, path).imported  # fibs
    assert 1450.5 == board(runtime, L, "rating")["half"]


def test_dry_run_reports_everything_and_changes_nothing(runtime, tmp_path):
    """--dry-run reports everything it would refuse and changes nothing."""
    path = write(tmp_path / "p.jsonl", *GOOD, {"player_id": "ann", "rating": 1})
    report = run(runtime, path, dry_run=True)
    assert (3, [(4, "player already named on line 1")], False) == (
        report.imported,
        report.refusals,
        report.committed,
    )
    assert {} == stored_players(runtime, L)
    assert {} == board(runtime, L, "rating")


def test_skip_invalid_imports_the_rest(runtime, tmp_path):
    """with --skip-invalid the lines not refused are imported."""
    path = write(tmp_path / "p.jsonl", *GOOD, {"player_id": "bad", "rating": None})
    report = run(runtime, path, skip_invalid=True)
    assert (3, 1, True) == (report.imported, report.refused, report.committed)
    assert {"ann", "ben", "cy"} == set(stored_players(runtime, L))


def test_importing_the_same_file_twice_changes_nothing_the_second_time(runtime, tmp_path):
    """ "Importing the same file twice changes nothing the second time", even
    after the players have played since."""
    path = write(tmp_path / "p.csv", "player_id,rating,games", "ann,1700,4", "ben,1450,")
    first = run(runtime, path)
    assert 2 == first.imported
    publish(runtime, game("ann", "ben", ladder=L))
    drain(runtime)
    players = stored_players(runtime, L)
    ratings = board(runtime, L, "rating")
    again = run(runtime, path)
    assert (0, 2, 0, True) == (again.imported, again.unchanged, again.refused, again.committed)
    assert (players, ratings) == (stored_players(runtime, L), board(runtime, L, "rating"))
    assert 1 == sum(1 for r in ledger(runtime, L, "ann") if r["kind"] == "import")
    changed = write(tmp_path / "q.csv", "player_id,rating,games", "ann,1800,4")
    assert [(2, "player already exists on the ladder")] == run(runtime, changed).refusals


def test_import_then_verify_is_clean(runtime, tmp_path):
    """`ladder verify` treats import rows as the start of a player's history:
    imported players, then games between them and new players, replay to the stored numbers."""
    report = run(runtime, write(tmp_path / "p.jsonl", *GOOD))
    assert 3 == report.imported
    publish(
        runtime,
        game("ann", "ben", ladder=L, match_length=5),
        game("cy", "newbie", ladder=L, match_length=3),
        game("newbie", "ann", ladder=L),
    )
    drain(runtime)
    found = verify.verify(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders[L])
    assert (0, [], 4) == (found.mismatch_count, found.mismatches, found.players)
    assert 3 + 6 == found.ledger_rows


def test_verify_notices_a_tampered_import_row(runtime, tmp_path):
    """The check above can fail: an import row whose rating no longer matches the player."""
    from sqlalchemy import update

    from worker.store.tables import imported_players

    run(runtime, write(tmp_path / "p.jsonl", *GOOD))
    with runtime.engine.begin() as conn:
        conn.execute(
            update(imported_players)
            .where(imported_players.c.player_id == "ann")
            .values(rated_games=41)
        )
    found = verify.verify(runtime.engine, None, runtime.config.ladders[L])
    assert [("ann", "rated_games", 40, 41)] == [
        (m.player_id, m.field, m.stored, m.derived) for m in found.mismatches
    ]


def test_cli_import_prints_refusals_by_line_and_exits_1(runtime, tmp_path, capsys):
    """`ladder import L FILE`: one line per refusal on stderr; 1 when nothing was imported."""
    path = write(tmp_path / "p.jsonl", *GOOD, {"player_id": "ann", "rating": 2})
    code, _, err = cli(runtime, "import", L, str(path), capsys=capsys)
    assert 1 == code
    assert f"ladder: {path}, line 4: player already named on line 1" in err.splitlines()
    code, out, _ = cli(runtime, "import", L, str(path), "--skip-invalid", "--json", capsys=capsys)
    assert (0, 3) == (code, json.loads(out)["imported"])
    code, _, err = cli(runtime, "import", "nope", str(path), capsys=capsys)
    configured = "(configured: fibs, gammon42, prostriker)"
    assert (2, f"ladder: no ladder named 'nope' {configured}\n") == (code, err)
    code, _, err = cli(runtime, "import", L, str(tmp_path / "p.txt"), capsys=capsys)
    assert 2 == code and "give --format" in err


def test_a_csv_without_the_needed_columns_is_refused(runtime, tmp_path):
    """A CSV header must name player_id and rating."""
    path = write(tmp_path / "p.csv", "id,score", "ann,1500")
    with pytest.raises(importer.ImportRefused, match="line 1"):
        run(runtime, path)


def test_import_streams_in_chunks_with_a_progress_bar(runtime, tmp_path, monkeypatch):
    """The rule ("streamed, bounded memory, with a progress bar"): a file larger than a
    chunk is staged chunk by chunk, every line counted by the progress."""
    monkeypatch.setattr(import_lines, "CHUNK", 100)
    path = importer.sample_file(tmp_path / "big.jsonl", 1050)
    progress = Progress("import", stream=io.StringIO(), every=0)
    report = run(runtime, path, progress=progress)
    assert (1050, 1050, 1050) == (report.imported, progress.done, progress.total)
    assert 1050 == len(board(runtime, L, "rating"))


def _count(rt: Any, table: Any) -> int:
    from sqlalchemy import func, select

    with rt.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


@pytest.mark.parametrize("late", ["named twice", "exists", "unreadable"])
def test_a_refusal_after_chunks_were_created_leaves_nothing_of_them(
    runtime, tmp_path, monkeypatch, late
):
    """The chunks before a refused line are created before it is seen (parsing and
    PostgreSQL overlap): the refusal, in the last chunk, still leaves nothing of them, and
    the report and the progress are those of the file checked line by line."""
    from worker.store.tables import imported_players, players, rating_changes

    monkeypatch.setattr(import_lines, "CHUNK", 100)
    if late == "exists":
        publish(runtime, game("old", "timer", ladder=L))
        drain(runtime)
    before = (_count(runtime, players), _count(runtime, rating_changes))
    path = importer.sample_file(tmp_path / "big.jsonl", 1050)
    bad = {
        "named twice": '{"player_id": "imp7", "rating": 1500}',
        "exists": '{"player_id": "old", "rating": 1500}',
        "unreadable": "not json",
    }[late]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(bad + "\n")
    reason = {
        "named twice": "player already named on line 8",
        "exists": "player already exists on the ladder",
        "unreadable": "not a JSON object",
    }[late]
    progress = Progress("import", stream=io.StringIO(), every=0)
    report = run(runtime, path, progress=progress)
    assert ([(1051, reason)], 0, False) == (report.refusals, report.imported, report.committed)
    assert (1051, 1051) == (report.lines, progress.done)
    assert before == (_count(runtime, players), _count(runtime, rating_changes))
    assert 0 == _count(runtime, imported_players)
    assert "imp0" not in board(runtime, L, "rating")
    kept = run(runtime, path, skip_invalid=True)
    assert (1050, 1, True, True) == (
        kept.imported,
        kept.refused,
        kept.committed,
        kept.boards_written,
    )
    assert 1050 == len(set(board(runtime, L, "rating")) - {"old", "timer"})
    assert (1050, before[1] + 1050) == (
        _count(runtime, imported_players),
        _count(runtime, rating_changes),
    )


def test_a_file_of_new_players_is_created_as_it_is_parsed(runtime, tmp_path, monkeypatch):
    """Every line a new player: created chunk by chunk, never staged whole and checked."""
    from worker.store import imports

    monkeypatch.setattr(import_lines, "CHUNK", 100)

    def never(self: Any) -> Any:
        raise AssertionError("checked line by line")

    monkeypatch.setattr(imports.Staging, "check", never)
    report = run(runtime, importer.sample_file(tmp_path / "big.jsonl", 1050))
    assert (1050, 1050, True) == (report.lines, report.imported, report.boards_written)
    assert ["import"] == [r["kind"] for r in ledger(runtime, L, "imp1049")]


def test_a_failure_while_creating_a_chunk_is_raised_and_leaves_nothing(
    runtime, tmp_path, monkeypatch
):
    """An error in the thread that creates the chunks (not a refusal) is raised by the
    import, after that thread stopped; nothing is committed."""
    from worker.store import imports
    from worker.store.tables import players

    monkeypatch.setattr(import_lines, "CHUNK", 100)
    created = imports.Staging.create
    calls = []

    def failing(self: Any, lines: Any, *args: Any) -> bool:
        calls.append(len(lines))
        if len(calls) == 3:
            raise RuntimeError("disk full")
        return created(self, lines, *args)

    monkeypatch.setattr(imports.Staging, "create", failing)
    path = importer.sample_file(tmp_path / "big.jsonl", 1050)
    with pytest.raises(RuntimeError, match="disk full"):
        run(runtime, path)
    assert 0 == _count(runtime, players)
    assert [100, 100, 100] == calls[:3] and len(calls) == 3


def test_recent_imports_are_on_the_active_board(make_runtime, tmp_path):
    """an imported last game within active_days puts them on it."""
    from tests.integration.test_boards import with_active_days

    (tmp_path / "config").mkdir()
    rt = with_active_days(make_runtime, tmp_path / "config")
    ladder_config = rt.config.ladders["gammon42"]
    recent = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    path = write(
        tmp_path / "p.jsonl",
        {"player_id": "a", "rating": 1500, "last_game_at": recent},
        {"player_id": "b", "rating": 1500, "last_game_at": "2020-01-01T00:00:00Z"},
    )
    importer.import_file(rt.engine, rt.leaderboard_redis, ladder_config, path)
    assert {"a": 1500.0} == board(rt, "gammon42", "active")


def test_an_import_whose_boards_cannot_be_written_says_it_is_imported_and_how_to_show_it(
    runtime, make_runtime, tmp_path, capsys
):
    """PostgreSQL is the record: an import that committed stays imported when Redis fails
    right after; the command says so in one line, exits 1, and names the rebuild that puts
    the players on the boards (a second import would find nothing to do)."""
    away = make_runtime(leaderboard_redis_url="redis://127.0.0.1:1/0")
    path = write(tmp_path / "players.jsonl", *GOOD)
    code, out, err = cli(away, "import", L, str(path), "--json", capsys=capsys)
    shown = json.loads(out)
    assert (1, True, False, 3) == (
        code,
        shown["committed"],
        shown["boards_written"],
        shown["imported"],
    )
    assert shown["boards_error"]
    assert "Traceback" not in err
    assert f"run 'ladder rebuild {L}' once Redis answers" in err.strip().splitlines()[-1]
    assert {"ann", "ben", "cy"} == set(stored_players(runtime, L))
    assert {} == board(runtime, L, "rating")
    again = run(runtime, path)
    assert (0, 3) == (again.imported, again.unchanged)
    rebuild.rebuild(runtime.engine, runtime.leaderboard_redis, runtime.config.ladders[L])
    assert {"ann": 1712.5, "ben": 1490.0, "cy": 1601.25} == board(runtime, L, "rating")


def test_the_created_mode_writes_what_newer_writes(make_runtime, tmp_path):
    """The boards script's mode for an import's players (a hash that does not exist is
    written and its board entries sent together, after the loop) leaves Redis exactly as
    ``newer``, one row at a time, would: a worker's newer hash is kept, an older one replaced,
    a stale entry of a player with no hash taken off the boards the player is not on."""
    from engine import Player
    from tests.integration.test_boards import with_active_days
    from worker import keys
    from worker.boards.projection import WRITE, BoardRows, as_row, boards, write_rows

    rt = with_active_days(make_runtime, tmp_path)
    ladder = "gammon42"
    config = rt.config.ladders[ladder]
    r = rt.leaderboard_redis
    now = datetime.now(UTC)
    recent = now - timedelta(days=1)
    shown = [
        Player(ladder, "worker", 1800.0, 9, 90, True, version=5, last_game_at=now),
        Player(ladder, "older", 1200.0, 1, 1, True, version=0, last_game_at=recent),
    ]
    imported = [
        Player(ladder, "worker", 1500.0, 3, 30, True, version=1, updated_at=now),
        Player(ladder, "older", 1510.0, 3, 30, True, version=1, updated_at=now),
        Player(ladder, "stale", 1520.0, 0, 0, True, version=1, updated_at=now),
        Player(ladder, "new", 1530.0, 2, 60, True, 0, True, True, None, 1, recent, now),
        Player(ladder, "old", 1540.0, 2, 60, True, version=1, last_game_at=now - timedelta(300)),
    ]

    def after(mode: str) -> dict[Any, Any]:
        r.flushdb()
        maker = BoardRows(config)
        script = r.register_script(WRITE)
        write_rows(
            r, script, boards(ladder), ladder, [maker.row(as_row(p)) for p in shown], "newer"
        )
        for name in (keys.public, keys.active):  # a player erased from PostgreSQL, not Redis
            r.zadd(name(ladder), {"stale": 1.0})
        r.zadd(keys.active_since(ladder), {"stale": 1.0})
        written = write_rows(
            r, script, boards(ladder), ladder, [maker.row(as_row(p)) for p in imported], mode
        )
        state: dict[Any, Any] = {"written": written}
        for key in sorted(r.keys("*")):
            kind = r.type(key)
            state[key] = (
                r.hgetall(key) if kind == b"hash" else r.zrange(key, 0, -1, withscores=True)
            )
        return state

    newer = after("newer")
    assert newer == after("created")
    assert 4 == newer["written"]
    assert b"5" == newer[keys.player(ladder, "worker").encode()][b"version"]
    assert [(b"stale", 1520.0)] == [
        m for m in newer[keys.rating(ladder).encode()] if m[0] == b"stale"
    ]
    assert keys.public(ladder).encode() not in newer  # gammon42 shows no public board
    assert {b"new", b"worker"} == {m for m, _ in newer[keys.active(ladder).encode()]}


def test_the_boards_of_an_import_are_what_a_rebuild_from_postgresql_writes(make_runtime, tmp_path):
    """The boards of players created at once are sent from the rows prepared while they were
    parsed, not read back: every key, card field and score is what ``ladder rebuild`` then
    writes from PostgreSQL (offsets turned to UTC, the active board, the provisional flag)."""
    from tests.integration.test_boards import with_active_days

    (tmp_path / "config").mkdir()
    rt = with_active_days(make_runtime, tmp_path / "config", ladder=L)  # fractions kept
    ladder_config = rt.config.ladders[L]
    recent = (datetime.now(UTC) - timedelta(days=1)).astimezone(timezone(timedelta(hours=5)))
    path = write(
        tmp_path / "p.jsonl",
        *GOOD,
        {"player_id": "dee", "rating": 1e3 / 3, "games": 7, "last_game_at": recent.isoformat()},
        {"player_id": "ed", "rating": 1500, "last_game_at": "2020-01-01T00:00:00-08:00"},
    )
    r = rt.leaderboard_redis

    def everything() -> dict[bytes, Any]:
        found: dict[bytes, Any] = {}
        for key in sorted(r.keys("*")):
            kind = r.type(key)
            found[key] = (
                r.hgetall(key) if kind == b"hash" else r.zrange(key, 0, -1, withscores=True)
            )
        return found

    report = importer.import_file(rt.engine, r, ladder_config, path)
    assert (5, True) == (report.imported, report.boards_written)
    imported = everything()
    assert {"dee": 1e3 / 3} == board(rt, L, "active")
    r.flushdb()
    rebuild.rebuild(rt.engine, r, ladder_config)
    assert everything() == imported


def test_the_sample_file_imports_whole_on_every_shipped_ladder(runtime, tmp_path):
    """``make bench`` times the import of ``sample_file`` on gammon42, which keeps whole
    ratings (SPEC 7): every line of it is importable on every shipped ladder, in JSON lines and
    in CSV, so the benchmark times an import that happened."""
    for fmt in ("jsonl", "csv"):
        for n, name in enumerate(("gammon42", "fibs", "prostriker")):
            prefix = f"s{fmt}{n}-"
            path = importer.sample_file(tmp_path / f"{prefix}.{fmt}", 40, fmt=fmt, prefix=prefix)
            config = runtime.config.ladders[name]
            report = importer.import_file(runtime.engine, runtime.leaderboard_redis, config, path)
            assert (40, []) == (report.imported, report.refusals), (fmt, name)
