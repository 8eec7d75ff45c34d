"""Switch by exact replay (``ladder rerate``): a ladder whose configuration names another
ruleset from an ``effective_from`` re-rates its whole history under it.

The issue's terms: "A ladder's TOML can name a new ruleset from an effective_from instant;
`ladder rerate LADDER` re-rates the history under it exactly, verify agrees afterwards, and each
changed player gets one correction row and a receipt-visible change. Dry run first, with
counts."

The independent check is a second ladder (``ref``) that ran the new ruleset from the start
and received the same games, void and season close: after the rerate the switched ladder
(``club``) equals it exactly, rating, deviation and volatility, and keeps equal to it as
both score on and are moderated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.helpers import board, command, ledger, stored_players
from tests.ladders import ladder, with_shipped
from worker import keys
from worker.ops import reconcile
from worker.ops.verify import verify
from worker.store import moderation as store
from worker.store.history import history
from worker.store.tables import rating_changes

NOW = datetime.now(UTC).replace(microsecond=0)
SWITCH = NOW - timedelta(days=2)
GAMES = [  # (winner, loser, days before now): three before the switch, three after it
    ("a", "b", 5.0),
    ("c", "d", 4.0),
    ("a", "c", 3.0),
    ("b", "d", 1.5),
    ("d", "a", 1.0),
    ("c", "b", 0.5),
]


SWITCHED = {"version": "g-1", "ruleset": "glicko2", "tau": 0.5}
LADDERS = ladder("club", "gammon42", {"version": "1.3.1"}, {**SWITCHED, "effective_from": SWITCH})
LADDERS += ladder("ref", "glicko2", {"version": "g-1", "tau": 0.5})
LATER = NOW + timedelta(days=30)  # a switch not in force yet
LADDERS += ladder("later", "gammon42", {"version": "1.3.1"}, {**SWITCHED, "effective_from": LATER})


@pytest.fixture
def rt(make_runtime: Any, tmp_path: Path) -> Any:
    return make_runtime(ladder_config=with_shipped(tmp_path, LADDERS))


def both(rt: Any, index: int, winner: str, loser: str, days_ago: float) -> None:
    """The same game on the switched ladder and on the reference."""
    at = NOW - timedelta(days=days_ago)
    for name in ("club", "ref"):
        publish(rt, game(winner, loser, ladder=name, ended_at=at, event_id=f"{name}-{index}"))


def states(rt: Any, name: str) -> dict[str, tuple[Any, ...]]:
    fields = ("rating", "deviation", "volatility", "rated_games", "listed", "banned")
    return {pid: tuple(p[f] for f in fields) for pid, p in sorted(stored_players(rt, name).items())}


def clean(rt: Any, name: str) -> None:
    """``ladder verify`` (whole, receipts kept included, and ``--since`` an instant before the
    last action) and ``ladder reconcile`` find nothing."""
    cfg = rt.config.ladders[name]
    kept = (rt.redis, NOW - timedelta(days=30))
    assert [] == verify(rt.engine, rt.leaderboard_redis, cfg, receipts=kept).mismatches
    since = datetime.now(UTC) - timedelta(seconds=1)
    assert [] == verify(rt.engine, None, cfg, since=since).mismatches
    assert reconcile.check(rt.engine, rt.leaderboard_redis, cfg).clean


def test_a_rerate_makes_the_ladder_what_the_new_ruleset_would_have_made_it(rt, capsys):
    for index, (winner, loser, days) in enumerate(GAMES):
        both(rt, index, winner, loser, days)
    drain(rt)
    for name in ("club", "ref"):
        assert 0 == command(rt, "void", name, f"{name}-1", "--reason", "t")
        argv = ["--name", "S0", "--reset", "toward-start", "--fraction", "0.5"]
        assert 0 == command(rt, "season", "close", name, *argv)
    clean(rt, "club")  # lived: gammon42 before the switch, glicko2 after it
    lived = states(rt, "club")
    assert lived != states(rt, "ref")
    capsys.readouterr()

    # The dry run: counts, and nothing changed.
    assert 0 == command(rt, "rerate", "club", "--reason", "switch", "--dry-run", "--json")
    shown = json.loads(capsys.readouterr().out)
    assert (shown["kind"], shown["dry_run"], shown["action"]) == ("rerate", True, None)
    assert len(shown["players"]) == 4 and shown["events_replayed"] == len(GAMES)
    assert lived == states(rt, "club")

    assert 0 == command(rt, "rerate", "club", "--reason", "switch to glicko2")
    out = capsys.readouterr().out
    assert "re-rated club: 4 players changed" in out, out
    assert states(rt, "ref") == states(rt, "club")
    assert board(rt, "ref") == board(rt, "club")
    clean(rt, "club")

    # One correction row per changed player, and each receipt kept says what the re-rating
    # made of its game (the reference's numbers for the same game).
    with rt.engine.connect() as conn:
        rows = conn.execute(
            select(rating_changes.c.player_id, rating_changes.c.event_id).where(
                rating_changes.c.ladder == "club", rating_changes.c.kind == "correction"
            )
        ).all()
    rerated = max((r for r in rows), key=lambda r: int(r[1].split(":")[1]))[1]  # the last one
    assert sorted(pid for pid, event_id in rows if event_id == rerated) == ["a", "b", "c", "d"]
    for index in (0, 2, 4, 5):
        club = json.loads(rt.redis.get(keys.receipt(f"club-{index}")))
        ref = json.loads(rt.redis.get(keys.receipt(f"ref-{index}")))
        shown_club = [
            (p["player_id"], p["rating_after"], p.get("deviation")) for p in club["players"]
        ]
        shown_ref = [
            (p["player_id"], p["rating_after"], p.get("deviation")) for p in ref["players"]
        ]
        assert shown_ref == shown_club
    assert "history re-rated under glicko2 g-1" in json.dumps(ledger_notes(rt, "club", "a"))

    # Scored on and moderated after it, the two stay equal and verify agrees.
    both(rt, 10, "b", "a", 0.1)
    drain(rt)
    for name in ("club", "ref"):
        assert 0 == command(rt, "void", name, f"{name}-2", "--reason", "t")  # before the switch
        assert 0 == command(rt, "adjust", name, "c", "--delta", "25", "--reason", "t")
    assert states(rt, "ref") == states(rt, "club")
    clean(rt, "club")

    # Refused with one line: already re-rated under this switch.
    capsys.readouterr()
    assert 2 == command(rt, "rerate", "club", "--reason", "again")
    assert "already" in capsys.readouterr().err
    assert ledger(rt, "club", "a")  # unchanged by the refusal: verify still clean
    clean(rt, "club")


def ledger_notes(rt: Any, name: str, player: str) -> list[str]:
    """What ``ladder history`` says of each moderation row of the player."""
    return [c.note for c in history(rt.engine, name, player, 50) if c.note is not None]


@pytest.mark.parametrize(
    ("ladder", "said"),
    [
        ("gammon42", "no version of gammon42 names another ruleset"),
        ("later", "takes effect at"),
    ],
)
def test_a_rerate_without_a_switch_in_force_is_refused(rt, capsys, ladder, said):
    publish(rt, game("a", "b", ladder=ladder))
    drain(rt)
    assert 2 == command(rt, "rerate", ladder, "--reason", "t")
    assert said in capsys.readouterr().err


def test_games_scored_while_the_rerate_replays_are_re_rated_under_the_lock(rt, monkeypatch):
    """Workers keep scoring during a rerate: the games stored between its replay and its
    lock (one of them ended before the switch, so a worker scored it under gammon42) are run
    under the lock by the new rules too; the ladder equals the reference and verify agrees."""
    for index, (winner, loser, days) in enumerate(GAMES):
        both(rt, index, winner, loser, days)
    drain(rt)
    lock = store.lock_ladder
    raced: list[str] = []

    def scored_meanwhile(conn: Any, ladder: str) -> None:
        if not raced:
            raced.append(ladder)
            both(rt, 20, "d", "c", 2.5)  # ended before the switch
            both(rt, 21, "a", "b", 0.05)
            drain(rt)
        lock(conn, ladder)

    monkeypatch.setattr(store, "lock_ladder", scored_meanwhile)
    assert 0 == command(rt, "rerate", "club", "--reason", "switch")
    assert raced == ["club"]
    assert states(rt, "ref") == states(rt, "club")
    assert board(rt, "ref") == board(rt, "club")
    clean(rt, "club")


def test_a_rerate_over_an_adjustment_on_another_scale_is_refused_and_changes_nothing(rt, capsys):
    """gammon42's odds unit (1200 / ln 10) is not glicko2's (400 / ln 10): an adjustment's
    delta would be read on the new scale, so the rerate is refused and verify stays clean."""
    for index, (winner, loser, days) in enumerate(GAMES):
        both(rt, index, winner, loser, days)
    drain(rt)
    assert 0 == command(rt, "adjust", "club", "a", "--delta", "10", "--reason", "t")
    before = states(rt, "club")
    capsys.readouterr()
    assert 2 == command(rt, "rerate", "club", "--reason", "t")
    assert "0 imports and 1 adjustment on gammon42's scale" in capsys.readouterr().err
    assert before == states(rt, "club")
    clean(rt, "club")
