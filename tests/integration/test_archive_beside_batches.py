"""An archive and a worker's batch (or an import) placed just before its boundary.

SPEC: "Audit and ledger tables are partitioned by month; `ladder archive --before YYYY-MM`
detaches old partitions and verify then starts from the recorded checkpoint." The checkpoint
is the replay of every row before the boundary, made before the months are detached. A batch
takes its instant when its events are validated, before it holds its players; one validated
in the last moment of a month and stored once the archive had read the log would land in an
archived month without being in its checkpoint. An archive first marks its ladders with its
boundary, holding each as a moderation action does: a batch that finds the mark once it holds
its players starts again at an instant on or after the boundary, and an import taken before
it is refused at its commit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text

from tests.events import game
from tests.integration.test_archive import _Clock, _mismatches, _month_of_games, _verified
from tests.integration.test_import import GOOD, write
from worker.ops import archiving, importer
from worker.ops.archiving import archive
from worker.store import imports, marks
from worker.store.tables import events, ladder_archives

BOUNDARY = datetime(2026, 11, 1, tzinfo=UTC)
LAST_MOMENT = BOUNDARY - timedelta(milliseconds=100)


def _while_checkpointing(monkeypatch: pytest.MonkeyPatch, action: Any) -> list[Any]:
    """``action`` runs once, after the archive made its first checkpoint and before it holds
    its ladders to save them: the moment a worker's commit could fall into."""
    real = archiving.checkpoint
    ran: list[Any] = []

    def checkpoint(*args: Any) -> Any:
        made = real(*args)
        if not ran:
            ran.append(action())
        return made

    monkeypatch.setattr(archiving, "checkpoint", checkpoint)
    return ran


def _late_batch(
    rt: Any, monkeypatch: pytest.MonkeyPatch, ladder: str = "gammon42"
) -> Callable[[], list[str]]:
    """Three October games of gammon42 scored, then a batch of ``ladder`` validated in October's
    last moment: returns what stores it (its outcomes)."""
    clock = _Clock(monkeypatch)
    _month_of_games(rt, clock, datetime(2026, 10, 30, tzinfo=UTC), 3)
    clock.at(LAST_MOMENT)
    ended = LAST_MOMENT - timedelta(minutes=1)
    late = game("p1", "p2", ladder=ladder, ended_at=ended, event_id="late")
    prepared = rt.service.prepare([json.dumps(late)])
    clock.real()

    def store() -> list[str]:
        settled = rt.service.settle(prepared, lambda raw, exc: None)
        rt.service.project(settled)
        return [o.outcome for o in settled.outcomes]

    return store


def test_a_batch_validated_before_the_boundary_and_stored_during_the_archive_starts_again(
    runtime, monkeypatch
):
    """The batch's game is stored after the boundary, not in the archived month without its
    checkpoint: verify agrees (without the mark: the game archived but not replayed, its
    players' ratings a game ahead of the replay)."""
    ran = _while_checkpointing(monkeypatch, _late_batch(runtime, monkeypatch))
    done = archive(runtime.engine, runtime.config, date(2026, 11, 1))
    assert [["rated"]] == ran
    assert {"gammon42": 3} == {p.ladder: p.events for p in done.checkpoints}
    with runtime.engine.connect() as conn:
        stored = conn.execute(select(events.c.processed_at).where(events.c.event_id == "late"))
        assert stored.scalar_one() >= BOUNDARY  # started again on or after the boundary
        marked = conn.execute(select(ladder_archives)).all()
    assert set(runtime.config.ladders) <= {ladder for ladder, _ in marked}
    assert {BOUNDARY} == {before for _, before in marked}
    assert {} == _mismatches(_verified(runtime))


def test_a_batch_stored_before_the_archive_marks_is_in_the_checkpoint(runtime, monkeypatch):
    """The ordinary order: the batch validated in the last moment of the month is stored before
    the archive starts; it keeps its instant and the checkpoint counts its game."""
    assert ["rated"] == _late_batch(runtime, monkeypatch)()
    done = archive(runtime.engine, runtime.config, date(2026, 11, 1))
    assert {"gammon42": 4} == {p.ladder: p.events for p in done.checkpoints}
    with runtime.engine.connect() as conn:
        assert 0 == conn.execute(select(func.count()).select_from(events)).scalar_one()
        kept = "SELECT processed_at FROM archived_events_2026_10 WHERE event_id = 'late'"
        assert LAST_MOMENT == conn.execute(text(kept)).scalar_one()
    assert {} == _mismatches(_verified(runtime))


def test_an_import_taken_before_the_boundary_and_committed_during_the_archive_is_refused(
    runtime, monkeypatch, tmp_path
):
    """Its rows would land in the archived month after its checkpoint was made: it is rolled
    back with a one-line reason, and the archive and verify are as without it."""
    clock = _Clock(monkeypatch)
    _month_of_games(runtime, clock, datetime(2026, 10, 30, tzinfo=UTC), 3, ladder="fibs")
    clock.real()
    path = write(tmp_path / "p.jsonl", *GOOD[:2])  # the third's last game is after the instant

    def imported() -> str:
        config = runtime.config.ladders["fibs"]
        with pytest.raises(importer.ImportRefused) as refused:
            importer.import_file(
                runtime.engine, runtime.leaderboard_redis, config, path, now=LAST_MOMENT
            )
        return str(refused.value)

    ran = _while_checkpointing(monkeypatch, imported)
    done = archive(runtime.engine, runtime.config, date(2026, 11, 1))
    assert 1 == len(ran) and "archived" in ran[0] and "\n" not in ran[0]
    assert {"fibs": 3} == {p.ladder: p.events for p in done.checkpoints}
    with runtime.engine.connect() as conn:
        imported_rows = "SELECT count(*) FROM imported_players"
        assert 0 == conn.execute(text(imported_rows)).scalar_one()
    assert {} == _mismatches(_verified(runtime))


def test_an_import_committing_while_the_archive_detaches_is_refused_and_neither_waits_forever(
    runtime, monkeypatch, tmp_path
):
    """An import taken before the boundary has written its rows and holds its commit while the
    archive runs: the archive marks the ladder without waiting for the import (it waits only
    for imports committing), then waits at the detaching for the import's rows; the import,
    let go, finds the mark at its commit and is refused, and the archive completes."""
    clock = _Clock(monkeypatch)
    _month_of_games(runtime, clock, datetime(2026, 10, 30, tzinfo=UTC), 3, ladder="fibs")
    clock.real()
    path = write(tmp_path / "p.jsonl", *GOOD[:2])
    held, went = threading.Event(), threading.Event()
    real_commit = imports.Staging.commit

    def commit(self: imports.Staging, at: datetime) -> None:
        held.set()
        assert went.wait(30)
        real_commit(self, at)

    monkeypatch.setattr(imports.Staging, "commit", commit)
    said: list[Any] = []

    def importing() -> None:
        config = runtime.config.ladders["fibs"]
        try:
            importer.import_file(
                runtime.engine, runtime.leaderboard_redis, config, path, now=LAST_MOMENT
            )
            said.append("imported")
        except importer.ImportRefused as exc:
            said.append(str(exc))

    done: list[Any] = []
    thread = threading.Thread(target=importing)
    thread.start()
    assert held.wait(30)
    archiving_thread = threading.Thread(
        target=lambda: done.append(archive(runtime.engine, runtime.config, date(2026, 11, 1)))
    )
    archiving_thread.start()
    assert _waiting_to_detach(runtime), "the archive never waited at the detaching"
    went.set()  # only now may the import commit
    thread.join(30)
    archiving_thread.join(30)
    assert 1 == len(said) and "archived before 2026-11" in said[0], said
    assert 1 == len(done) and {"fibs": 3} == {p.ladder: p.events for p in done[0].checkpoints}
    assert {} == _mismatches(_verified(runtime))


def _waiting_to_detach(rt: Any) -> bool:
    """Whether, within 30 s, a backend of this database waits for a lock to detach a
    partition of this test's schema."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query LIKE '%DETACH PARTITION%'"
        " AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with rt.engine.connect() as conn:
            if conn.execute(query).scalar_one():
                return True
        time.sleep(0.02)
    return False


def test_an_import_that_read_no_mark_commits_before_the_archive_reads_the_log(
    runtime, monkeypatch, tmp_path
):
    """The other order: the import, taken before the boundary, reads no mark at its commit, and
    the archive starts right then. The archive waits for that commit before it marks (the
    import holds its ladder's import key while it commits), so its checkpoint replays the
    imported players and verify agrees (without the wait: the import's rows detached with the
    month, outside the checkpoint)."""
    clock = _Clock(monkeypatch)
    _month_of_games(runtime, clock, datetime(2026, 10, 30, tzinfo=UTC), 3, ladder="fibs")
    clock.real()
    path = write(tmp_path / "p.jsonl", *GOOD[:2])
    real_check = marks.refuse_archived
    done: list[Any] = []

    def archiving() -> None:
        done.append(archive(runtime.engine, runtime.config, date(2026, 11, 1)))

    thread = threading.Thread(target=archiving)

    def check(driver: Any, at: datetime) -> None:
        real_check(driver, at)  # no mark yet
        thread.start()
        time.sleep(1.0)  # the archive runs as far as it can while the import commits

    monkeypatch.setattr(marks, "refuse_archived", check)
    config = runtime.config.ladders["fibs"]
    report = importer.import_file(
        runtime.engine, runtime.leaderboard_redis, config, path, now=LAST_MOMENT
    )
    thread.join(30)
    assert 2 == report.imported and 1 == len(done)
    assert {"fibs": 3} == {p.ladder: p.events for p in done[0].checkpoints}
    with runtime.engine.connect() as conn:
        kept = "SELECT player_id FROM checkpoint_players WHERE player_id IN ('ann', 'ben')"
        assert ["ann", "ben"] == sorted(conn.execute(text(kept)).scalars())
    assert {} == _mismatches(_verified(runtime))


def test_a_batch_of_a_ladder_the_archive_does_not_know_also_starts_again(runtime, monkeypatch):
    """A ladder only in a worker's configuration, with no player yet when the archive marks
    its ladders: its first batch, validated in October's last moment and stored while the
    archive makes its checkpoints, finds the archive's boundary all the same (the months are
    the database's) and is stored after it; verify agrees (without it: the game detached
    with October, no checkpoint for its ladder, its players a game ahead of the replay)."""
    ran = _while_checkpointing(monkeypatch, _late_batch(runtime, monkeypatch, "fibs"))
    known = {name: c for name, c in runtime.config.ladders.items() if name != "fibs"}
    done = archive(runtime.engine, replace(runtime.config, ladders=known), date(2026, 11, 1))
    assert [["rated"]] == ran
    assert {"gammon42": 3} == {p.ladder: p.events for p in done.checkpoints}
    with runtime.engine.connect() as conn:
        stored = conn.execute(select(events.c.processed_at).where(events.c.ladder == "fibs"))
        assert stored.scalar_one() >= BOUNDARY
        marked = {ladder for ladder, _ in conn.execute(select(ladder_archives))}
    assert "fibs" not in marked  # the archive never named it
    assert {} == _mismatches(_verified(runtime))
