"""Archive checkpoints: a ladder's state at its archive boundary (``ladder archive``).

When the audit log's months before a boundary are detached (``worker.ops.archiving``), each
ladder that had events in them keeps, in ``checkpoints`` and ``checkpoint_players``, what the
one replay had made of them: every player, the links, the settled tournaments and the games
still inside a window (those that ended ``WINDOW_DAYS`` or less before the boundary), with the
scoring number of the last event archived. ``verify`` then replays from it (``seed``) instead
of from the first game: the events numbered after it, the recorded rows and moderation
actions that follow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection, Engine

from engine import LadderState, Player, Windows
from engine.player import STATE_FIELDS, STORED_FIELDS, stored_player
from engine.replay import Action, Lived, Replay
from worker.store.tables import checkpoint_players, checkpoints

# A game that ended this long before the boundary counts in no window after it (the longest
# window of the shipped rulesets is 7 days; a ladder configured with longer ones needs more).
WINDOW_DAYS = 60


@dataclass(frozen=True)
class Checkpoint:
    """A ladder's state at its archive boundary."""

    ladder: str
    before: datetime  # the boundary: every event processed before it is archived
    after_seq: int  # the scoring number of the last event archived (0: none)
    events: int  # events archived, every archive together
    players: tuple[Player, ...]
    links: dict[str, str]  # anonymous id -> account id
    settled: frozenset[str]  # tournament ids settled
    ranked: dict[str, list[datetime]]  # player -> ranked games in a window, ended_at
    rated_pairs: dict[tuple[str, str], list[datetime]]  # (a, b), a <= b -> rated games

    def state(self) -> LadderState:
        """A fresh ``LadderState`` (its own copies) as the checkpoint holds it."""
        ladder = self.ladder
        windows = Windows()
        for player_id, times in self.ranked.items():
            for at in times:
                windows.add_ranked(ladder, player_id, at)
        for (a, b), times in self.rated_pairs.items():
            for at in times:
                windows.add_rated_pair(ladder, a, b, at)
        return LadderState(
            players={(ladder, p.player_id): _copy(p) for p in self.players},
            links={ladder: dict(self.links)},
            linked_accounts={ladder: set(self.links.values())},
            settled={(ladder, t) for t in self.settled},
            windows=windows,
        )


def of_state(
    ladder: str, state: LadderState, before: datetime, after_seq: int, events: int
) -> Checkpoint:
    """The checkpoint of ``state``, a replay of ``ladder`` through ``after_seq``."""
    windows = state.windows.since(before - timedelta(days=WINDOW_DAYS))
    return Checkpoint(
        ladder=ladder,
        before=before,
        after_seq=after_seq,
        events=events,
        players=tuple(_copy(p) for (lad, _), p in sorted(state.players.items()) if lad == ladder),
        links=dict(state.links.get(ladder, {})),
        settled=frozenset(t for lad, t in state.settled if lad == ladder),
        ranked={p: t for (lad, p), t in windows.ranked_times().items() if lad == ladder},
        rated_pairs={
            (a, b): t for (lad, a, b), t in windows.rated_pair_times().items() if lad == ladder
        },
    )


def seed(replay: Lived | Replay, checkpoint: Checkpoint) -> None:
    """Start ``replay`` at ``checkpoint``: a ``Replay``, or a ``Lived`` one (the lived replay and
    each one ahead of a void)."""
    if isinstance(replay, Replay):
        replay.state = checkpoint.state()
        return
    replay.lived.state = checkpoint.state()
    for ahead in replay.ahead.values():
        ahead.state = checkpoint.state()


@dataclass(frozen=True)
class Start:
    """Where every replay of a ladder's history starts: its checkpoint when months were
    archived (``ladder archive``), else its first event. ``after_seq``: the scoring number the
    log left begins after; ``actions``: the moderation actions that fall after the start (the
    earlier ones are in the checkpoint)."""

    checkpoint: Checkpoint | None
    after_seq: int
    actions: list[Action]

    def seed(self, replay: Lived | Replay) -> None:
        if self.checkpoint is not None:
            seed(replay, self.checkpoint)


def start(source: Engine | Connection, ladder: str, actions: Sequence[Action]) -> Start:
    """The start of the ladder's history (``Start``) for a replay of ``actions``."""
    point = load(source, ladder)
    if point is None:
        return Start(None, 0, list(actions))
    return Start(point, point.after_seq, [a for a in actions if a.at >= point.before])


def save(conn: Connection, checkpoint: Checkpoint, now: datetime) -> None:
    """Record ``checkpoint``, replacing the ladder's earlier one (in the caller's transaction)."""
    ladder = checkpoint.ladder
    conn.execute(delete(checkpoints).where(checkpoints.c.ladder == ladder))
    conn.execute(delete(checkpoint_players).where(checkpoint_players.c.ladder == ladder))
    # ``ranked`` and ``rated_pairs`` are read in SQL too, by the workers' windows
    # (``worker.store.windows.archived``): their shapes are theirs as much as ``load``'s
    state = {
        "links": checkpoint.links,
        "settled": sorted(checkpoint.settled),
        "ranked": {p: [t.isoformat() for t in ts] for p, ts in sorted(checkpoint.ranked.items())},
        "rated_pairs": [
            [a, b, [t.isoformat() for t in ts]]
            for (a, b), ts in sorted(checkpoint.rated_pairs.items())
        ],
    }
    conn.execute(
        insert(checkpoints).values(
            ladder=ladder,
            before=checkpoint.before,
            after_seq=checkpoint.after_seq,
            events=checkpoint.events,
            state=state,
            made_at=now,
        )
    )
    for part in _chunks(checkpoint.players, 5000):
        conn.execute(
            insert(checkpoint_players),
            [{"ladder": ladder, "player_id": p.player_id, **_fields(p)} for p in part],
        )


def load(source: Engine | Connection, ladder: str) -> Checkpoint | None:
    """The ladder's checkpoint, or None when none of its months was archived."""
    if isinstance(source, Engine):
        with source.connect() as conn:
            return load(conn, ladder)
    row = source.execute(select(checkpoints).where(checkpoints.c.ladder == ladder)).first()
    if row is None:
        return None
    columns = [checkpoint_players.c[c] for c in STORED_FIELDS]
    players = source.execute(
        select(*columns)
        .where(checkpoint_players.c.ladder == ladder)
        .order_by(checkpoint_players.c.player_id)
    )
    state: dict[str, Any] = row.state
    return Checkpoint(
        ladder=ladder,
        before=row.before,
        after_seq=int(row.after_seq),
        events=int(row.events),
        players=tuple(stored_player(r) for r in players),
        links=dict(state["links"]),
        settled=frozenset(state["settled"]),
        ranked={p: [datetime.fromisoformat(t) for t in ts] for p, ts in state["ranked"].items()},
        rated_pairs={
            (a, b): [datetime.fromisoformat(t) for t in ts] for a, b, ts in state["rated_pairs"]
        },
    )


def _copy(player: Player) -> Player:
    return Player(player.ladder, player.player_id, *(getattr(player, f) for f in STATE_FIELDS))


def _fields(player: Player) -> dict[str, Any]:
    return {f: getattr(player, f) for f in STATE_FIELDS}


def _chunks(items: Iterable[Player], size: int) -> Iterable[list[Player]]:
    part: list[Player] = []
    for item in items:
        part.append(item)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part
