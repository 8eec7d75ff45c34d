"""Moderation (void, ban, unban, adjust): exact re-rating, an append-only log, verify passes."""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from tests.conftest import drain, publish
from tests.e2e.oracle import Oracle
from tests.events import game
from tests.integration.helpers import EVERYONE, audit, board, card, ledger, stored_players
from worker.entrypoints.cli import moderate, read
from worker.entrypoints.cli.main import dispatch
from worker.ops import logreplay, moderation, reconcile, void
from worker.ops.verify import verify
from worker.store import moderation as store
from worker.store import replays, statements

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=20)


def ladder(rt: Any, *argv: str) -> int:
    """Run one command the way ``ladder`` does, against this runtime."""
    parser = argparse.ArgumentParser(prog="ladder")
    commands = parser.add_subparsers(dest="command", required=True)
    read.register(commands)
    moderate.register(commands)
    return dispatch(rt, parser.parse_args(list(argv)))


def ladder_json(rt: Any, capsys: Any, *argv: str) -> Any:
    capsys.readouterr()
    assert 0 == ladder(rt, *argv, "--json")
    return json.loads(capsys.readouterr().out)


def clean(rt: Any, name: str) -> None:
    """``ladder verify`` and ``ladder reconcile`` find nothing."""
    report = verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[name])
    assert [] == report.mismatches
    assert reconcile.check(rt.engine, rt.leaderboard_redis, rt.config.ladders[name]).clean


def continuous(rt: Any, name: str, player: str) -> None:
    """Each ledger row starts where the one before ended (SPEC 5: the ledger is continuous)."""
    rows = ledger(rt, name, player)
    for before, after in zip(rows, rows[1:], strict=False):
        assert before["rating_after"] == after["rating_before"]
    assert rows[-1]["rating_after"] == stored_players(rt, name)[player]["rating"]


def oracle_boards(events: list[dict[str, Any]], name: str) -> dict[str, float]:
    model = Oracle()
    for event in events:
        model.apply(event)
    return model.rating_board(name)


def pair_games(name: str = "gammon42") -> list[dict[str, Any]]:
    """A cheater (c) farms v four times in a day (the 4th hits the pair limit), then both
    play others; x plays v afterwards, so the correction spreads."""
    out = [
        game("c", "v", ladder=name, event_id=f"farm-{i}", ended_at=T0 + timedelta(hours=i))
        for i in range(4)
    ]
    out += [
        game("v", "x", ladder=name, event_id="v-x", ended_at=T0 + timedelta(hours=5)),
        game("x", "y", ladder=name, event_id="x-y", ended_at=T0 + timedelta(hours=6)),
        game("c", "y", ladder=name, event_id="c-y", ended_at=T0 + timedelta(hours=7)),
        game("z", "w", ladder=name, event_id="z-w", ended_at=T0 + timedelta(hours=8)),
    ]
    return out


def test_a_void_rerates_exactly_as_if_the_games_had_never_been_played(runtime, capsys):
    """afterwards every player equals a ladder that never received the voided
    games; the pair limit no longer counts them (farm-3 is rated now); corrections
    keep each ledger continuous and ``ladder verify`` passes; untouched players stay so."""
    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    assert ("unrated", "pair_limit") == next(
        (r["outcome"], r["reason"]) for r in audit(runtime, "gammon42") if r["event_id"] == "farm-3"
    )
    zw_before = stored_players(runtime, "gammon42")["z"]
    shown = ladder_json(
        runtime, capsys, "void", "gammon42", "farm-0", "c-y", "--reason", "cheating", "--by", "mod"
    )
    assert ["farm-0", "c-y"] == shown["voided"] and shown["action"] is not None
    kept = [e for e in events if e["event_id"] not in ("farm-0", "c-y")]
    assert oracle_boards(kept, "gammon42") == board(runtime, "gammon42")
    assert zw_before == stored_players(runtime, "gammon42")["z"]  # not touched at all
    for player in ("c", "v", "x", "y"):
        continuous(runtime, "gammon42", player)
    kinds = [r["kind"] for r in ledger(runtime, "gammon42", "y")]
    assert "correction" == kinds[-1]
    clean(runtime, "gammon42")
    # idempotent: the same void again changes nothing
    again = ladder_json(runtime, capsys, "void", "gammon42", "farm-0", "--reason", "cheating")
    assert (None, {"farm-0": "already void"}) == (again["action"], again["refused"])
    # a later game is scored on the corrected state and the corrected windows
    late = game("c", "v", event_id="late", ended_at=T0 + timedelta(hours=9))
    publish(runtime, late)
    drain(runtime)
    assert oracle_boards([*kept, late], "gammon42") == board(runtime, "gammon42")
    clean(runtime, "gammon42")


def test_a_game_after_a_void_counts_the_pair_limit_without_the_voided_games(runtime, capsys):
    """SPEC 2.4 step 5: "not rated once the pair already has N rated games (default 3) in the
    24 hours before ended_at". Voided games are not among them, and a game the void re-rated
    counts as re-rated: the worker's windows read moderation's effects (here farm-0 and
    farm-1 are voided, farm-3 becomes rated, so c and v have 2 rated games: late is rated;
    read without the effects they would have 3, and late would hit the pair limit)."""
    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "farm-0", "farm-1", "--reason", "cheating")
    late = game("c", "v", event_id="late", ended_at=T0 + timedelta(hours=9))
    publish(runtime, late)
    drain(runtime)
    outcomes = {r["event_id"]: r["outcome"] for r in audit(runtime, "gammon42")}
    assert "rated" == outcomes["late"]
    kept = [e for e in events if e["event_id"] not in ("farm-0", "farm-1")]
    assert oracle_boards([*kept, late], "gammon42") == board(runtime, "gammon42")
    clean(runtime, "gammon42")


def test_a_game_after_a_void_counts_its_7_days_without_the_voided_game(runtime, capsys):
    """SPEC 2.1: K 16 'for a player with >= 50 ranked games in the 7 days before this game's
    ended_at'. A voided game counts in no window: after one of 50 is voided, 49 remain."""
    now = datetime.now(UTC).replace(microsecond=0)
    week = [
        game(
            "p",
            f"bot-{i}",
            event_id=f"w-{i}",
            ended_at=now - timedelta(hours=1 + i),
            loser_extra={"is_bot": True},
        )
        for i in range(50)
    ]
    publish(runtime, *week)
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "w-7", "--reason", "cheating")
    publish(runtime, game("p", "q", event_id="after", ended_at=now))
    drain(runtime)
    assert [32.0] == [row["k"] for row in ledger(runtime, "gammon42", "p") if row["k"]]


@pytest.mark.parametrize("name", ["fibs", "prostriker"])
def test_a_void_is_exact_on_every_ruleset(runtime, capsys, name):
    """Exactness on fibs (experience, multiplier, pair limit) and prostriker (K by games)."""
    events = pair_games(name)
    publish(runtime, *events)
    drain(runtime)
    assert 0 == ladder(runtime, "void", name, "farm-1", "--reason", "cheating")
    kept = [e for e in events if e["event_id"] != "farm-1"]
    expected = oracle_boards(kept, name)
    actual = board(runtime, name)
    assert sorted(expected) == sorted(actual)
    assert all(abs(expected[p] - actual[p]) < 1e-9 for p in expected)
    clean(runtime, name)


def test_dry_run_shows_now_and_after_and_changes_nothing(runtime, capsys):
    """--dry-run shows, per player, the rating now and after."""
    publish(runtime, *pair_games())
    drain(runtime)
    before = (stored_players(runtime, "gammon42"), board(runtime, "gammon42"))
    shown = ladder_json(runtime, capsys, "void", "gammon42", "c-y", "--reason", "x", "--dry-run")
    assert shown["dry_run"] and shown["action"] is None
    c = next(p for p in shown["players"] if p["player_id"] == "c")
    assert c["rating"] == before[0]["c"]["rating"] and c["rating_after"] < c["rating"]
    assert before == (stored_players(runtime, "gammon42"), board(runtime, "gammon42"))


def test_unknown_ladder_event_or_player_is_refused_and_non_games_are_reported(runtime, capsys):
    """unknown ladder, event or player: a clear message and exit 2; an event
    that is not a game is reported and nothing changes for it."""
    publish(
        runtime,
        game("a", "b", event_id="g1"),
        {
            "type": "player.updated",
            "event_id": "p1",
            "ladder": "fibs",
            "player_id": "a",
            "email_verified": True,
            "display_name_chosen": True,
        },
    )
    drain(runtime)
    capsys.readouterr()
    assert 2 == ladder(runtime, "void", "chess", "g1", "--reason", "x")
    assert 2 == ladder(runtime, "void", "gammon42", "g1", "nope", "--reason", "x")
    assert 2 == ladder(runtime, "ban", "gammon42", "nobody", "--reason", "x")
    assert 2 == ladder(runtime, "adjust", "gammon42", "nobody", "--delta", "5", "--reason", "x")
    assert 2 == ladder(runtime, "adjust", "gammon42", "a", "--delta", "2.5", "--reason", "x")
    err = capsys.readouterr().err
    assert "ladder: no ladder named 'chess'" in err and "no event 'nope'" in err
    assert "no player 'nobody'" in err and "Traceback" not in err
    shown = ladder_json(runtime, capsys, "void", "fibs", "p1", "--reason", "x")
    assert shown["action"] is None and "not a game" in shown["refused"]["p1"]
    assert board(runtime, "gammon42") == {"a": 1516.0, "b": 1484.0}


def test_ban_takes_a_player_off_the_boards_and_rates_their_later_games_as_banned(runtime):
    """off every board; later games unrated with reason banned, the opponent
    not rated either; unban puts them back; verify passes throughout."""
    publish(runtime, game("c", "v", event_id="g1"), game("v", "w", event_id="g2"))
    drain(runtime)
    assert 0 == ladder(runtime, "ban", "gammon42", "c", "--reason", "cheating")
    assert "c" not in board(runtime, "gammon42")
    assert "1" == card(runtime, "gammon42", "c")["banned"]
    publish(runtime, game("c", "w", event_id="g3"))
    drain(runtime)
    assert ("unrated", "banned") == next(
        (r["outcome"], r["reason"]) for r in audit(runtime, "gammon42") if r["event_id"] == "g3"
    )
    assert 1 == stored_players(runtime, "gammon42")["w"]["rated_games"]
    clean(runtime, "gammon42")
    assert 0 == ladder(runtime, "unban", "gammon42", "c", "--reason", "appeal upheld")
    assert "c" in board(runtime, "gammon42")
    clean(runtime, "gammon42")


def test_ban_with_void_since_voids_their_games_from_that_time(runtime, capsys):
    """--void-since voids every game of theirs that ended at or after TIME."""
    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    since = (T0 + timedelta(hours=2)).isoformat()
    assert 0 == ladder(runtime, "ban", "gammon42", "c", "--reason", "bot", "--void-since", since)
    kept = [e for e in events if e["event_id"] not in ("farm-2", "farm-3", "c-y")]
    expected = oracle_boards(kept, "gammon42")
    del expected["c"]  # banned: off the boards
    assert expected == board(runtime, "gammon42")
    clean(runtime, "gammon42")


def test_adjust_is_a_ledger_row_of_its_own_and_verify_replays_it_before_a_void(runtime, capsys):
    """a manual change recorded as kind adjustment; any sequence of
    adjustments, voids and bans keeps verify passing."""
    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    assert 0 == ladder(runtime, "adjust", "gammon42", "x", "--delta", "-7", "--reason", "typo")
    row = ledger(runtime, "gammon42", "x")[-1]
    assert ("adjustment", -7.0) == (row["kind"], row["delta"])
    assert 0 == ladder(runtime, "void", "gammon42", "v-x", "--reason", "cheating")
    assert 0 == ladder(runtime, "ban", "gammon42", "y", "--reason", "abuse")
    publish(runtime, game("x", "z", event_id="after", ended_at=T0 + timedelta(hours=10)))
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "farm-0", "--reason", "cheating")
    for player in ("c", "v", "x", "z"):
        continuous(runtime, "gammon42", player)
    clean(runtime, "gammon42")
    assert moderation.Report("gammon42", "void").as_json()["voided"] == []


def test_history_says_which_game_was_voided_and_why(runtime, capsys):
    """``ladder history`` shows "-12, correction: game g-123 voided (cheating)";
    the HTTP history carries the same note."""
    from starlette.testclient import TestClient

    from worker.entrypoints.api.app import create_app

    publish(runtime, *pair_games())
    drain(runtime)
    assert 0 == ladder(runtime, "void", "gammon42", "c-y", "--reason", "cheating")
    assert 0 == ladder(runtime, "adjust", "gammon42", "y", "--delta", "3", "--reason", "typo")
    capsys.readouterr()
    assert 0 == ladder(runtime, "history", "gammon42", "y")
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(" correction " in x and "  game c-y voided (cheating)" in x for x in lines)
    assert any(" adjustment " in x and "  adjusted by" in x and "(typo)" in x for x in lines)
    app = create_app(runtime.config, runtime.leaderboard_redis, runtime.engine, access=EVERYONE)
    with TestClient(app) as client:
        rows = client.get("/ladders/gammon42/players/y/history").json()
    assert ["adjustment", "correction"] == [r["kind"] for r in rows[:2]]
    assert "game c-y voided (cheating)" == rows[1]["note"]


def test_events_and_actions_stored_while_a_void_replays_are_taken_into_account(
    runtime, capsys, monkeypatch
):
    """most of a void's replay runs before it locks the ladder, so workers go
    on meanwhile; what they store in between (a game of the players concerned) and another
    void taken in between are in the result, which stays exact and verifiable."""
    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    late = game("c", "x", event_id="meanwhile", ended_at=T0 + timedelta(hours=9))
    runs = []
    original = logreplay.LogReplay.run

    def run(self: Any) -> None:
        original(self)
        runs.append(self.count)
        if len(runs) == 1:  # between the unlocked pass and the lock: a worker scores a game
            publish(runtime, late)
            drain(runtime)
        elif len(runs) == 3:  # the second void's unlocked pass: the first void commits first
            monkeypatch.setattr(logreplay.LogReplay, "run", original)
            assert 0 == ladder(runtime, "void", "gammon42", "farm-1", "--reason", "first")

    monkeypatch.setattr(logreplay.LogReplay, "run", run)
    assert 0 == ladder(runtime, "void", "gammon42", "c-y", "--reason", "cheating")
    assert [8, 9] == runs  # the tail under the lock: one event stored meanwhile
    kept = [e for e in events if e["event_id"] != "c-y"] + [late]
    assert oracle_boards(kept, "gammon42") == board(runtime, "gammon42")
    clean(runtime, "gammon42")
    monkeypatch.setattr(logreplay.LogReplay, "run", run)
    assert 0 == ladder(runtime, "void", "gammon42", "v-x", "--reason", "second")
    kept = [e for e in kept if e["event_id"] not in ("farm-1", "v-x")]
    assert oracle_boards(kept, "gammon42") == board(runtime, "gammon42")
    clean(runtime, "gammon42")


# Imported players: what the import gave them (games, experience) decides K and the multiplier.
IMPORTED: list[dict[str, Any]] = [
    {"player_id": "vet", "rating": 1400, "games": 250, "experience": 300},
    {"player_id": "mid", "rating": 1300, "games": 29, "experience": 10},
    {"player_id": "sid", "rating": 1250, "games": 5, "experience": 45},
]


def imported_games(name: str) -> list[dict[str, Any]]:
    """Games of the imported players and a new one after the import; ``mid-sid`` is voided."""
    pairs = [("mid", "sid"), ("vet", "mid"), ("nu", "vet"), ("mid", "nu"), ("sid", "vet")]
    return [
        game(
            w,
            lo,
            ladder=name,
            event_id=f"{w}-{lo}",
            match_length=3,
            ended_at=T0 + timedelta(hours=i),
        )
        for i, (w, lo) in enumerate(pairs)
    ]


@pytest.mark.parametrize("name", ["fibs", "prostriker"])
def test_a_void_rerates_imported_players_with_what_the_import_gave_them(runtime, tmp_path, name):
    """A void re-rates "as if the games had never been played", and an imported player has
    played: "K by the player's rated games so far" (SPEC 2.3) and "the player's own experience
    before the match" (SPEC 2.2) count the imported games and experience in the re-rating,
    so every number equals a ladder that never received the voided game and ``ladder
    verify`` passes; a backtest with the stored parameters reproduces the stored ratings."""
    from tests.e2e.oracle import P
    from worker.ops import importer
    from worker.ops.backtest import backtest, parse_overrides

    config = runtime.config.ladders[name]
    path = tmp_path / "players.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in IMPORTED), encoding="utf-8")
    assert (
        3 == importer.import_file(runtime.engine, runtime.leaderboard_redis, config, path).imported
    )
    events = imported_games(name)
    publish(runtime, *events)
    drain(runtime)
    same = "k_established=16" if name == "prostriker" else "value_factor=4"
    tested = backtest(runtime.engine, config, parse_overrides(config, [same]))
    assert {p: (s, s) for p, (s, _) in tested.players.items()} == tested.players
    assert 0 == ladder(runtime, "void", name, "mid-sid", "--reason", "cheating")
    model = Oracle()
    for line in IMPORTED:
        model.ladders[name].players[line["player_id"]] = P(
            float(line["rating"]), line["games"], line["experience"], listed=True
        )
    for event in events:
        if event["event_id"] != "mid-sid":
            model.apply(event)
    stored = stored_players(runtime, name)
    expected = {p: (m.rating, m.games, m.exp) for p, m in model.ladders[name].players.items()}
    actual = {p: (s["rating"], s["rated_games"], s["experience"]) for p, s in stored.items()}
    assert sorted(expected) == sorted(actual)
    for player, (rating, games, experience) in expected.items():
        assert (games, experience) == actual[player][1:]
        assert abs(rating - actual[player][0]) < 1e-9
    clean(runtime, name)


def receipt_key(rt: Any, event_id: str) -> dict[str, Any]:
    from worker import keys

    found: dict[str, Any] = json.loads(rt.redis.get(keys.receipt(event_id)))
    return found


def unranked(receipt: dict[str, Any]) -> dict[str, Any]:
    return {**receipt, "players": [{**p, "rank_after": None} for p in receipt["players"]]}


def test_a_void_makes_the_receipts_it_changed_true(runtime, capsys):
    """ "every event gets a receipt (outcome, reason, each player's before/after/delta and
    rank)" (SPEC 5), and a void re-rates "as if the games had never been played": after it the
    voided games' receipts say ``voided`` with nothing moved, a later game's says what the
    re-rating made of it (the pair-limited farm-3 is rated now; c-y, the last game of both
    c and y, ends at their corrected ratings), in Redis (expiry kept) and over HTTP; an
    untouched game's receipt is left as it was, and the output says how many were refreshed."""
    from starlette.testclient import TestClient

    from worker import keys
    from worker.entrypoints.api.app import create_app

    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    ids = [e["event_id"] for e in events]
    before = {e: receipt_key(runtime, e) for e in ids}
    assert ("unrated", []) == (before["farm-3"]["outcome"], before["farm-3"]["players"])
    shown = ladder_json(
        runtime, capsys, "void", "gammon42", "farm-0", "x-y", "--reason", "cheating"
    )
    after = {e: receipt_key(runtime, e) for e in ids}
    for voided in ("farm-0", "x-y"):
        assert ("voided", None, []) == tuple(
            after[voided][k] for k in ("outcome", "reason", "players")
        )
    assert ("rated", 2) == (after["farm-3"]["outcome"], len(after["farm-3"]["players"]))
    stored = stored_players(runtime, "gammon42")
    assert [stored["c"]["rating"], stored["y"]["rating"]] == [
        p["rating_after"] for p in after["c-y"]["players"]
    ]
    assert after["c-y"]["players"] != before["c-y"]["players"]
    assert before["z-w"] == after["z-w"]
    assert 0 < runtime.redis.ttl(keys.receipt("c-y")) <= runtime.settings.receipt_ttl
    changed = [e for e in ids if before[e] != after[e]]
    assert {"farm-0", "x-y", "farm-3", "c-y"} <= set(changed)
    assert len(changed) == shown["receipts_refreshed"]
    app = create_app(
        runtime.config, runtime.leaderboard_redis, runtime.engine, runtime.redis, access=EVERYONE
    )
    with TestClient(app) as client:
        for event_id in ids:
            answer = client.get(f"/ladders/gammon42/events/{event_id}").json()
            assert unranked(after[event_id]) == unranked(answer)
        runtime.redis.delete(keys.receipt("farm-0"))  # expired: PostgreSQL still says voided
        answer = client.get("/ladders/gammon42/events/farm-0").json()
    assert ("voided", []) == (answer["outcome"], answer["players"])
    # the same void again: nothing changes, nothing is refreshed
    again = ladder_json(runtime, capsys, "void", "gammon42", "x-y", "--reason", "cheating")
    assert (None, 0) == (again["action"], again["receipts_refreshed"])
    clean(runtime, "gammon42")


def test_a_void_succeeds_and_warns_once_when_the_receipts_redis_is_down(runtime, capsys):
    """ "PostgreSQL is the source of truth" (SPEC 1): with the receipts' Redis unreachable
        after the commit the void stands, one warning line says the receipts were not refreshed (the
    progress bar aside)."""
    from redis import Redis

    from worker.boards.receipts import ReceiptSink

    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    down = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    runtime.__dict__["receipts"] = ReceiptSink(down, ttl=60, maxlen=10)
    capsys.readouterr()
    assert 0 == ladder(runtime, "void", "gammon42", "farm-0", "--reason", "cheating", "--json")
    out, err = capsys.readouterr()
    assert 0 == json.loads(out)["receipts_refreshed"]
    (line,) = [line for line in err.splitlines() if line.startswith("ladder:")]
    assert line.startswith("ladder: warning: receipts not refreshed: Redis unreachable")
    assert "Traceback" not in err
    kept = [e for e in events if e["event_id"] != "farm-0"]
    assert oracle_boards(kept, "gammon42") == board(runtime, "gammon42")
    clean(runtime, "gammon42")


def test_a_void_asks_an_unreachable_receipts_redis_once_and_keeps_what_it_made(
    runtime, monkeypatch
):
    """With the copies' Redis away while the log is replayed, the receipts made are compared
    with nothing and all held for the refresh; Redis is asked once, not once a chunk."""
    from redis import Redis

    events = pair_games()
    publish(runtime, *events)
    drain(runtime)
    config = runtime.config.ladders["gammon42"]
    calls: list[int] = []

    class Down(Redis):
        def mget(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return super().mget(*args, **kwargs)

    down = Down(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    told = replays.load(runtime.engine, "gammon42")  # no action, nothing recorded
    should = told.replay(config.policy, config.rules_at, track=True)
    since = datetime.now(UTC) - timedelta(days=1)
    log = logreplay.LogReplay(
        runtime.engine,
        told,
        should,
        receipts_since=since,
        voiding=frozenset(["*"]),
        kept=down,
    )
    log.against_ledger = False
    log._collecting = True
    monkeypatch.setattr(logreplay, "RECEIPT_CHUNK", 2)  # several chunks
    log.run()
    assert len(log.receipts) == len(events) > 2
    assert calls == [1]


def test_refreshing_receipts_goes_in_chunks_and_writes_only_kept_copies_that_differ(runtime):
    """The rule ("bounded: pipelined, chunked") on its own: copies that differ are rewritten
    chunk by chunk, their expiry kept; an expired key is not written again, an equal copy is
    left alone, and a copy of another processing of the id (another ladder's) is not touched."""
    from worker import keys
    from worker.boards.receipts import encode, refresh

    events = [game("a", f"b{i}", event_id=f"r-{i}") for i in range(7)]
    publish(runtime, *events)
    drain(runtime)
    copies = [receipt_key(runtime, e["event_id"]) for e in events]
    made = [{**c, "outcome": "voided", "players": []} for c in copies]
    made[1] = unranked(copies[1])  # the same numbers (a rewrite has no ranks): left alone
    runtime.redis.delete(keys.receipt("r-2"))  # expired: stays gone
    made[3] = {**made[3], "ladder": "fibs"}  # another ladder's event of that id
    runtime.redis.expire(keys.receipt("r-4"), 500)
    assert 4 == refresh(runtime.redis, [(m["event_id"], encode(m)) for m in made], chunk=3)
    assert [True, False, None, False, True, True, True] == [
        None
        if runtime.redis.get(keys.receipt(e)) is None
        else receipt_key(runtime, e)["outcome"] == "voided"
        for e in (f"r-{i}" for i in range(7))
    ]
    assert 0 < runtime.redis.ttl(keys.receipt("r-4")) <= 500


def _true_receipts(rt: Any, ladder: str, kept: Any = None) -> dict[str, dict[str, Any]]:
    """Every event's receipt as the ladder now stands (its log replayed with every recorded
    void), built for each event rather than only for those that differ; with ``kept`` (the
    Redis of the copies), only those a refresh may still write, as a void holds them."""
    config = rt.config.ladders[ladder]
    told = replays.load(rt.engine, ladder)
    voided = frozenset().union(*(a.voided for a in told.actions))
    should = told.replay(config.policy, config.rules_at, voided, track=True)
    since = datetime.now(UTC) - timedelta(days=1)
    log = logreplay.LogReplay(
        rt.engine,
        told,
        should,
        receipts_since=since,
        voiding=frozenset(["*"]),
        kept=kept,
    )
    log.against_ledger = False
    log._collecting = True  # from the first event on
    log.run()
    return {event_id: json.loads(text) for event_id, text in log.receipts}


def test_after_voids_every_kept_receipt_of_the_mix_is_what_the_ladder_now_says(
    runtime, capsys, monkeypatch
):
    """A void makes the receipts it changed true, and only those need writing: over the
    benchmark mix, after a first void (receipts compared with the ledger) and a second one
    (compared with the kept copies), every kept copy equals the event's receipt as the
    re-rated ladder scores it (ranks aside)."""
    from bench.events import generate

    raws, _ = generate(1500, seed=11, players=120)
    publish(runtime, *raws)
    drain(runtime)
    games = [
        r["event_id"]
        for r in audit(runtime, "gammon42")
        if r["type"] == "game.finished" and r["outcome"] == "rated"
    ]
    from worker.boards.receipts import refresh as writes

    held: list[int] = []

    def refresh(redis: Any, made: Any) -> int:
        held.append(len(made))
        return writes(redis, made)

    monkeypatch.setattr(void, "refresh", refresh)
    for chosen in (games[3:5], games[40:41]):
        shown = ladder_json(runtime, capsys, "void", "gammon42", *chosen, "--reason", "t")
        assert shown["receipts_refreshed"] > 0
        true = _true_receipts(runtime, "gammon42")
        kept = {e: receipt_key(runtime, e) for e in true}
        assert {e: unranked(kept[e]) for e in true} == {e: unranked(r) for e, r in true.items()}
        # Every copy is now true, so a replay comparing as it goes holds none of them.
        assert _true_receipts(runtime, "gammon42", kept=runtime.receipts.redis) == {}
    # The second void (after an earlier one: compared with the copies, not the ledger) held
    # only the receipts it rewrote, not one for every event after its game.
    assert held[1] == shown["receipts_refreshed"]
    assert held[1] < len([g for g in true if g not in games[:41]])
    clean(runtime, "gammon42")


def test_the_ladder_lock_waits_for_a_batch_in_flight_and_holds_the_players_it_created(runtime):
    """docs/moderation.md: a moderation action locks its ladder, so "a worker's batch of that
    ladder waits for the action to commit". A batch has claimed an existing player and
    created a new one when the action asks for the lock: the action waits for the batch to
    commit, then holds every player of the ladder, the one the batch created too (a row
    lock alone takes the rows of its snapshot, where that player is not), so no later game
    of theirs is scored under the action."""
    publish(runtime, game("p0", "p1"))
    drain(runtime)
    now = datetime.now(UTC)
    ours = "ladder-lock-" + uuid.uuid4().hex[:8]
    locked, release = threading.Event(), threading.Event()

    def action() -> None:
        with runtime.engine.begin() as conn:
            conn.exec_driver_sql(f"SET application_name = '{ours}'")
            store.lock_ladder(conn, "gammon42")
            locked.set()
            release.wait(30)

    def waiting(conn: Any) -> bool:
        query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %(name)s"
        query += " AND wait_event_type = 'Lock'"
        found = bool(conn.exec_driver_sql(query, {"name": ours}).scalar())
        conn.rollback()  # the activity view is read once a transaction
        return found

    with runtime.engine.connect() as batch, runtime.engine.connect() as probe:
        claim = batch.begin()
        statements.claim_players(
            batch, {("gammon42", "p1"): 1500.0, ("gammon42", "p2"): 1500.0}, now
        )
        thread = threading.Thread(target=action)
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while not waiting(probe):
                assert time.monotonic() < deadline and not locked.is_set()
                time.sleep(0.02)
            claim.commit()
            assert locked.wait(30)
            for player in ("p1", "p2"):
                with pytest.raises(OperationalError, match="could not obtain lock"):
                    with probe.begin():
                        probe.exec_driver_sql(
                            "SELECT 1 FROM players WHERE ladder = 'gammon42'"
                            f" AND player_id = '{player}' FOR UPDATE NOWAIT"
                        )
        finally:
            release.set()
            thread.join(30)
