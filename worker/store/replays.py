"""A ladder's history, loaded once for every command that replays it (SPEC 6 "One history").

``ladder verify``, ``backtest``, ``void`` and its receipt repair, and ``archive``'s
checkpoints each replay the same history: where it starts (the ladder's checkpoint when
months were archived, or an instant for ``verify --since``), the moderation actions, the
recorded rows (season resets, imports) and the seasons closed after that start, what
imported players start with, and the events in scoring order with their ledger rows.
``load`` reads the first parts in one transaction; ``History.replay`` and ``History.lived``
give a replay started where the history starts; ``History.entries`` streams the log merged
with the actions, imports and season closes in the order ``engine.replay.in_order`` gives
every replay, and ``History.walk`` runs the actions, imports and season closes through a
replay, yielding the events for the caller to apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection, Engine

from engine import Action, Imported, Lived, Policy, Replay, Ruleset, Season
from engine.replay import last_rerate, placed
from worker.store import boundary, checkpoints, imports, moderation
from worker.store.log import (
    STORED_LEDGER,
    THROUGH_END,
    Entry,
    Logged,
    Recorded,
    audit_rows,
    closed_seasons,
    history,
    recorded_actions,
    recorded_entries,
    season_rows,
    stream_log,
)

RulesAt = Callable[[datetime], Ruleset]


class Since(NamedTuple):
    """Start at an instant (``verify --since``): the state the log recorded there
    (``boundary.start``), new players at ``start_rating``."""

    at: datetime
    start_rating: float
    boosted_board: bool


@dataclass(frozen=True)
class History:
    """One ladder's history from its start (``checkpoints.Start``): the actions after it, the
    recorded rows after it (``recorded_actions``' rows, oldest first), the seasons closed
    after it and the imported players' profiles."""

    ladder: str
    start: checkpoints.Start
    recorded: list[Sequence[Any]]
    imported: dict[str, Imported]
    seasons: list[Season]

    @property
    def recorded_entries(self) -> list[Recorded]:
        """Its imports as entries, oldest first (``recorded_entries``)."""
        return recorded_entries(self.recorded)

    @property
    def steps(self) -> list[Action | Season]:
        """Its moderation actions and season closes in the order they were taken."""
        return placed(self.actions, self.seasons)

    @property
    def season_rows(self) -> dict[str, list[Sequence[Any]]]:
        """The ledger rows each season's reset wrote, by its event id (``season_rows``)."""
        return season_rows(self.recorded)

    @property
    def actions(self) -> list[Action]:
        return self.start.actions

    @property
    def begins(self) -> datetime | None:
        """The instant the log read begins at (every event after the start was processed at
        or after it); None: the first event."""
        point = self.start.checkpoint
        return None if point is None else point.before

    def replay(
        self,
        policy: Policy,
        rules_at: RulesAt,
        voided: frozenset[str] = frozenset(),
        *,
        track: bool = False,
        rerating: Action | None = None,
    ) -> Replay:
        """A replay of the history (``voided`` skipped), started where it starts: the ladder
        as moderated, re-rated by its latest rerate up to that action (``rerating``: by that
        rerate instead, one being taken)."""
        rerated = last_rerate(self.actions) if rerating is None else rerating
        made = Replay(policy, rules_at, self.imported, voided, track=track, rerated=rerated)
        self.start.seed(made)
        return made

    def lived(self, policy: Policy, rules_at: RulesAt) -> Lived:
        """The replay as it was lived (each action where it fell), started where it starts."""
        made = Lived(self.ladder, policy, rules_at, self.actions, self.imported)
        self.start.seed(made)
        return made

    def entries(
        self,
        engine: Engine,
        *,
        ledger: Sequence[str] | None = STORED_LEDGER,
        through: int = THROUGH_END,
    ) -> Iterator[Entry]:
        """The history's entries in replay order: its events from where it starts through
        ``through``, with their ledger rows (``ledger``'s columns; None: none read), merged
        with its recorded rows and actions."""
        first = self.start.after_seq
        logged: Iterable[tuple[Any, Sequence[Any]]]
        if ledger is None:
            logged = ((row, ()) for row in audit_rows(engine, self.ladder, first, through))
        else:
            logged = stream_log(engine, self.ladder, first, ledger, since=self.begins)
        return history(logged, self.recorded_entries, self.steps)

    def walk(self, replay: Replay | Lived, entries: Iterable[Entry]) -> Iterator[Logged]:
        """Run each action and recorded row of ``entries`` through ``replay``; yield each
        logged event, for the caller to apply."""
        for entry in entries:
            if isinstance(entry, Logged):
                yield entry
            elif isinstance(entry, Recorded):
                replay.recorded(self.ladder, entry.change, entry.at)
            elif isinstance(entry, Season):
                if isinstance(replay, Lived):
                    replay.season(entry)
                else:
                    replay.season(self.ladder, entry)
            elif isinstance(replay, Lived):
                replay.action(entry)
            else:
                replay.action(self.ladder, entry)


def load(
    source: Engine | Connection,
    ladder: str,
    *,
    since: Since | None = None,
    before: datetime | None = None,
    earlier: History | None = None,
) -> History:
    """The ladder's history as every replay reads it, read on ``source`` (a connection: in
    its transaction, as a void does under the ladder's lock). ``since``: from that instant;
    ``before``: only the actions and recorded rows before that instant (a checkpoint's);
    ``earlier``: the same ladder's history read before, whose imported players' profiles are
    kept when no row was recorded since (an import records one)."""
    if isinstance(source, Engine):
        with source.connect() as conn:
            return load(conn, ladder, since=since, before=before, earlier=earlier)
    actions = moderation.history_actions(source, ladder)
    if since is None:
        start = checkpoints.start(source, ladder, actions)
    else:
        start = boundary.start(
            source, ladder, actions, since.at, since.start_rating, boosted_board=since.boosted_board
        )
    begins = None if start.checkpoint is None else start.checkpoint.before
    recorded = recorded_actions(source, ladder, since=begins)  # the months left since it
    closed = closed_seasons(source, ladder, since=begins)
    if before is not None:
        start = checkpoints.Start(
            start.checkpoint, start.after_seq, [a for a in start.actions if a.at < before]
        )
        recorded = [r for r in recorded if r[1] < before]
        closed = [c for c in closed if c.at < before]
    if earlier is not None and earlier.recorded == recorded:
        imported = earlier.imported
    else:
        imported = imports.profiles(source, ladder)
    return History(ladder, start, recorded, imported, closed)
