"""An import and a worker's batch of the same ladder at the same time.

SPEC 6, "One history": "A ladder's history is its audit log in scoring order plus the
moderation actions and imports that apply to it; one replay in `engine/` turns it into the
ladder's state." A replay places an import's rows before the events processed after the
instant it was taken; a batch takes its instant when its events are validated, which under
load is while the batch before it commits. A batch validated before an import that holds its
players only after the import committed scores them from the imported ratings: it starts again
at an instant after the import's (``worker.store.marks``), so the replay agrees.
"""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from tests.events import game
from tests.integration.test_import import GOOD, L, run, write
from worker.ops import verify
from worker.store.tables import events, imported_players, ladder_imports


def _verified(rt):
    return verify.verify(rt.engine, rt.leaderboard_redis, rt.config.ladders[L])


def test_a_batch_validated_before_an_import_of_its_players_is_scored_after_it(runtime, tmp_path):
    """ann is imported after the batch naming her was validated and before it holds her: the
    game is scored from her imported rating, at an instant after the import's, and verify
    agrees (without the later instant: 22 mismatches, the game replayed before the import)."""
    raw = json.dumps(game("ann", "zed", ladder=L, match_length=5, event_id="g-after"))
    prepared = runtime.service.prepare([raw])  # its instant taken now
    assert 3 == run(runtime, write(tmp_path / "p.jsonl", *GOOD)).imported
    settled = runtime.service.settle(prepared, lambda raw, exc: None)
    runtime.service.project(settled)
    assert ["rated"] == [o.outcome for o in settled.outcomes]
    with runtime.engine.connect() as conn:
        processed = conn.execute(select(events.c.processed_at)).scalar_one()
        at = conn.execute(
            select(imported_players.c.imported_at).where(imported_players.c.player_id == "ann")
        ).scalar_one()
        marked = conn.execute(select(ladder_imports.c.imported_at)).scalar_one()
    assert prepared.now < at == marked < processed <= at + timedelta(seconds=5)
    found = _verified(runtime)
    assert (0, []) == (found.mismatch_count, found.mismatches[:3])
    ann = runtime.leaderboard_redis.hgetall(f"ladder:{{{L}}}:player:ann")
    assert 41 == int(ann[b"games"])  # her 40 imported games, then this one


def test_a_batch_validated_after_the_import_keeps_its_instant(runtime, tmp_path):
    """The ordinary order: an import, then a batch validated after it. Its instant is the one
    it was validated at (no second start), and verify agrees."""
    assert 3 == run(runtime, write(tmp_path / "p.jsonl", *GOOD)).imported
    prepared = runtime.service.prepare([json.dumps(game("ben", "cy", ladder=L, match_length=3))])
    runtime.service.project(runtime.service.settle(prepared, lambda raw, exc: None))
    with runtime.engine.connect() as conn:
        assert prepared.now == conn.execute(select(events.c.processed_at)).scalar_one()
    found = _verified(runtime)
    assert (0, []) == (found.mismatch_count, found.mismatches[:3])


def test_a_later_import_marks_the_ladder_with_its_later_instant(runtime, tmp_path):
    """Two imports: the ladder keeps the latest instant; a dry run marks nothing."""
    run(runtime, write(tmp_path / "a.jsonl", GOOD[0]), dry_run=True)
    with runtime.engine.connect() as conn:
        assert [] == conn.execute(select(ladder_imports)).all()
    run(runtime, write(tmp_path / "a.jsonl", GOOD[0]))
    run(runtime, write(tmp_path / "b.jsonl", GOOD[1]))
    with runtime.engine.connect() as conn:
        latest = conn.execute(select(imported_players.c.imported_at.label("at")).order_by("at"))
        marked = conn.execute(select(ladder_imports.c.ladder, ladder_imports.c.imported_at)).all()
        assert [(L, latest.scalars().all()[-1])] == marked
