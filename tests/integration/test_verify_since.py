"""``verify --since``: the part of a ladder's log processed since an instant, replayed from the
state its log recorded at that instant (``worker.store.boundary``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import func, select, update

from tests.integration.test_archive import _Clock, _lived
from worker.ops.archiving import archive, checkpoint
from worker.ops.verify import verify
from worker.store import boundary
from worker.store.tables import events, rating_changes

NOV = datetime(2026, 11, 1, tzinfo=UTC)


def _since(rt: Any, ladder: str, since: datetime) -> Any:
    return verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[ladder], since=since)


def _row(rt: Any, processed: str, since: datetime) -> tuple[int, str, str]:
    """A ledger row of a game processed before (``processed="before"``) or after ``since``:
    its id, event id and player."""
    side = events.c.processed_at < since if processed == "before" else events.c.processed_at > since
    query = (
        select(rating_changes.c.id, rating_changes.c.event_id, rating_changes.c.player_id)
        .join(events, events.c.event_id == rating_changes.c.event_id)
        .where(rating_changes.c.ladder == "gammon42", rating_changes.c.kind == "game", side)
        .order_by(rating_changes.c.id)
        .limit(1)
    )
    with rt.engine.connect() as conn:
        found = conn.execute(query).one()
    return int(found[0]), str(found[1]), str(found[2])


def _tamper(rt: Any, row_id: int) -> None:
    with rt.engine.begin() as conn:
        conn.execute(
            update(rating_changes)
            .where(rating_changes.c.id == row_id)
            .values(rating_after=rating_changes.c.rating_after + 0.5)
        )


def test_the_state_the_log_recorded_is_the_replays_checkpoint(runtime, monkeypatch):
    """The checkpoint read from the log at an instant (no replay) holds what the one replay
    up to that instant holds, for every player the log names after it, their windows too; only
    the version and its time, which the log does not record, are left unset, and the events
    before the instant are not counted (the count is the archive's: none)."""
    _lived(runtime, _Clock(monkeypatch))
    for ladder in ("gammon42", "fibs"):
        cfg = runtime.config.ladders[ladder]
        with runtime.engine.connect() as conn:
            last, count = conn.execute(
                select(func.max(events.c.seq), func.count()).where(
                    events.c.ladder == ladder, events.c.processed_at < NOV
                )
            ).one()
            read = boundary.at(conn, ladder, NOV, cfg.rules_at(NOV).start, None)
        replayed = checkpoint(runtime.engine, cfg, NOV, int(last), int(count))
        named = {p.player_id for p in read.players}
        assert named, ladder
        by_id = {p.player_id: p for p in replayed.players}
        assert [
            replace(by_id[p.player_id], version=0, updated_at=None) for p in read.players
        ] == list(read.players)
        assert (read.after_seq, read.links, read.settled) == (
            replayed.after_seq,
            replayed.links,
            replayed.settled,
        )
        assert 0 == read.events
        assert read.ranked == {p: t for p, t in replayed.ranked.items() if t and p in named}
        assert read.rated_pairs == {
            (a, b): t for (a, b), t in replayed.rated_pairs.items() if t and {a, b} <= named
        }


def test_since_verifies_the_part_after_and_catches_a_row_tampered_there(runtime, monkeypatch):
    """A ladder with games before and after the instant verifies clean since it, replaying only
    the events after it; a ledger row altered after it is reported, one altered before it is
    (as documented) not looked at, while the whole verify reports both."""
    lived = _lived(runtime, _Clock(monkeypatch))
    report = _since(runtime, "gammon42", NOV)
    assert [] == report.mismatches
    assert report.events == len(lived["nov"]) + 1 and report.since == NOV
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert whole.events > report.events and whole.since is None

    early, early_event, early_player = _row(runtime, "before", NOV)
    _tamper(runtime, early)
    assert [] == _since(runtime, "gammon42", NOV).mismatches
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert (early_event, early_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in whole.mismatches
    }

    late, late_event, late_player = _row(runtime, "after", NOV)
    _tamper(runtime, late)
    found = _since(runtime, "gammon42", NOV).mismatches
    assert (late_event, late_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in found
    }


def test_since_before_the_start_is_the_whole_verify(runtime, monkeypatch):
    lived = _lived(runtime, _Clock(monkeypatch))
    report = _since(runtime, "gammon42", datetime(2020, 1, 1, tzinfo=UTC))
    whole = verify(runtime.engine, None, runtime.config.ladders["gammon42"])
    assert [] == report.mismatches and report.since is None
    assert report.events == whole.events == sum(len(lived[m]) for m in ("sep", "oct", "nov")) + 1


def test_since_after_an_archive_starts_from_the_checkpoint_and_the_log_after_it(
    runtime, monkeypatch
):
    """After ``ladder archive`` the instant's state is the checkpoint plus what the log
    recorded between them; an instant before the checkpoint is the whole verify (from it)."""
    lived = _lived(runtime, _Clock(monkeypatch))
    archive(runtime.engine, runtime.config, date(2026, 11, 1))
    later = datetime(2026, 11, 29, 12, tzinfo=UTC)
    report = _since(runtime, "gammon42", later)
    assert [] == report.mismatches and report.since == later
    assert report.events < len(lived["nov"])
    before = _since(runtime, "gammon42", datetime(2026, 10, 1, tzinfo=UTC))
    assert [] == before.mismatches and before.events == len(lived["nov"]) + 1
    late, late_event, late_player = _row(runtime, "after", later)
    _tamper(runtime, late)
    found = _since(runtime, "gammon42", later).mismatches
    assert (late_event, late_player, "rating_after") in {
        (m.event_id, m.player_id, m.field) for m in found
    }


@pytest.mark.parametrize("voided", ["after", "before"])
def test_a_void_since_the_instant_is_derived(runtime, monkeypatch, voided):
    """A void taken after the instant verifies clean since it: of a game after the instant
    from the instant, of a game before it from that game (the replay starts there)."""
    from worker.ops.void import void

    lived = _lived(runtime, _Clock(monkeypatch))
    cfg = runtime.config.ladders["gammon42"]
    chosen = lived["nov"][5] if voided == "after" else lived["oct"][-3]
    done = void(
        runtime.engine,
        runtime.leaderboard_redis,
        cfg,
        [chosen["event_id"]],
        "t",
        "op",
        receipt_sink=runtime.receipts,
    )
    assert [chosen["event_id"]] == done.done
    report = _since(runtime, "gammon42", NOV)
    assert [] == report.mismatches
    if voided == "after":
        assert report.since == NOV
    else:
        assert report.since is not None and report.since < NOV
    whole = verify(runtime.engine, None, cfg)
    assert [] == whole.mismatches
