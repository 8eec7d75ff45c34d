"""Operator actions one after another on one ladder while real workers score it.

An import, then a void of a game an imported player played, then an archive of the months
before this one, each while two ``ladder worker`` processes score a steady stream of the
ladder's games (``tests/e2e/test_operators_racing_history.py`` races each action alone).
Afterwards every event is stored once with one receipt on ``ladder:receipts`` (SPEC 5: "every
event gets a receipt ... on the stream ``ladder:receipts``"), ``ladder verify`` finds no
mismatch (SPEC 5: "replaying the stored events in their scoring order reproduces every stored
number"), reconcile finds no drift and the boards equal PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from redis import Redis
from sqlalchemy import create_engine, select

from tests.e2e.test_operators_racing_history import (
    BOUNDARY,
    LADDER,
    _after_boundary,
    _agrees,
    _beside,
    _lived,
    _race,
)
from worker.store.tables import events, ladder_archives, rating_changes


@pytest.mark.long
def test_an_import_a_void_of_an_imported_players_game_then_an_archive_beside_workers(
    cli, database_url, make_runtime, monkeypatch, request, tmp_path: Path
):
    """docs/import-export.md: verify "starts an imported player's history at their import
    row"; docs/moderation.md: a void re-rates "every later game of the ladder"; docs/
    operations.md: an archive replays each ladder "up to the boundary" and verify then "replays
    each ladder from its checkpoint". Last month's games scored first; then, while two workers
    score this month's games: an import of two players whose games are held until it is done,
    a void of one of their games, an archive before this month. Verify agrees, each event once
    with one receipt, the voided game's receipt says so, and its imported player's history
    starts at the import row."""
    lived = _lived(make_runtime(), monkeypatch, BOUNDARY - timedelta(minutes=10), 120, "old")
    stream = _after_boundary(900, "new", late_from=900)
    named = ["h-n0", "h-n1"]
    for i, event in enumerate(stream):
        if i >= 450 and i % 5 == 0:  # held until the import is done
            event["loser"]["player_id"] = named[i // 5 % 2]
    path = tmp_path / "players.jsonl"
    lines = [
        {"player_id": pid, "rating": 1650 + 50 * n, "games": 40} for n, pid in enumerate(named)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    players = {e["event_id"]: (e["winner"]["player_id"], e["loser"]["player_id"]) for e in stream}
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[str, int]] = []
    voided: list[str] = []

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(300)
        said.append(_beside(engine, LADDER, "import", LADDER, str(path), "--json", cli=cli))
        release()
        scored = wait(600)
        voided.append(next(e for e in scored if named[0] in players.get(e, ())))
        said.append(_beside(engine, LADDER, "void", LADDER, voided[0], "--reason", "x", cli=cli))
        said.append(_beside(engine, LADDER, "archive", "--before", f"{BOUNDARY:%Y-%m}", cli=cli))

    _race(cli, engine, stream, operate, hold=450)
    imported, _, archived = [out for out, _ in said]
    assert 2 == json.loads(imported)["imported"], said
    assert "ladder: detached 2 tables: archived_events_" in archived, said
    scored = [meanwhile for _, meanwhile in said]
    assert all(scored), f"the workers scored {scored} events while each action ran"
    _agrees(cli, database_url, stream, lived + stream)
    redis = Redis.from_url(cli.env["REDIS_URL"], decode_responses=True)
    kept = json.loads(redis.get(f"ladder:receipt:{voided[0]}") or "{}")
    redis.close()
    assert ("voided", []) == (kept.get("outcome"), kept.get("players"))
    with engine.connect() as conn:
        kinds = conn.execute(
            select(rating_changes.c.kind)
            .where(rating_changes.c.player_id == named[0])
            .order_by(rating_changes.c.id)
        ).scalars()
        first = list(kinds)[0]
        left = conn.execute(select(events.c.event_id).where(events.c.event_id.like("old-%")))
        assert [] == left.all()  # last month's games archived
    assert "import" == first


@pytest.mark.long
def test_an_archive_killed_after_its_marks_then_run_again_beside_workers(
    cli, database_url, make_runtime, monkeypatch, request
):
    """docs/operations.md: the archive "first marks every ladder with the boundary"; "It
    refuses, changing nothing but the marks". ``ladder archive`` killed (SIGKILL) right after
    its marks while two workers score: nothing archived, the workers go on, verify agrees; run
    again, it archives, and verify agrees with every event once and one receipt each."""
    lived = _lived(make_runtime(), monkeypatch, BOUNDARY - timedelta(minutes=10), 120, "old")
    stream = _after_boundary(600, "new", late_from=300)
    engine = create_engine(database_url)
    request.addfinalizer(engine.dispose)
    said: list[tuple[int, str]] = []

    def operate(wait: Callable[[int], list[str]], release: Callable[[], None]) -> None:
        wait(200)
        cli.env["LADDER_FAILPOINTS"] = "archive.after_mark=1"  # this command's alone
        try:
            killed = cli.ladder("archive", "--before", f"{BOUNDARY:%Y-%m}", check=False)
        finally:
            del cli.env["LADDER_FAILPOINTS"]
        said.append((killed.returncode, killed.stdout))
        with engine.connect() as conn:
            marked = conn.execute(select(ladder_archives.c.ladder)).scalars().all()
            left = conn.execute(select(events.c.event_id).where(events.c.event_id == "old-0"))
            said.append((len(marked), str(left.scalar_one_or_none())))
        wait(400)
        again = cli.ladder("archive", "--before", f"{BOUNDARY:%Y-%m}")
        said.append((again.returncode, again.stdout))

    _race(cli, engine, stream, operate, hold=len(stream))
    (killed, _), (marked, left), (code, out) = said
    assert -9 == killed, said  # SIGKILL, after the marks
    assert marked >= 1 and "old-0" == left, said  # marked, nothing archived yet
    assert 0 == code and "ladder: detached 2 tables: archived_events_" in out, said
    _agrees(cli, database_url, stream, lived + stream)
