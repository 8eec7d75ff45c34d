"""The one replay: a ladder's history turned into the ladder's state at any point.

SPEC 6 "One history": a ladder's history is its audit log in scoring order plus the moderation
actions and imports that apply to it. Its entries, as values:

- a stored event, with the moment it was processed (it places events without ``ended_at`` in
  time and chooses their ruleset version, as it did live);
- a *recorded* ledger row, whose new rating is the record itself rather than something an
  event derives: an import (the start of an imported player's history, with what else the
  import gave them: their ``Imported`` profile), an operator's adjustment, a void's
  correction;
- a ``Season`` closed, with its reset policy, which follows the stored event numbered
  ``after_seq`` as an action does: the reset is derived there, from every player as the
  replay has them (its ledger rows are what it derived when it was taken, as an event's are);
- a moderation ``Action`` (void, ban, unban, adjust, erase), which follows the stored event
  numbered ``after_seq`` (the last one scored when it was taken).

``Replay`` applies them in that order. Its ``voided`` set is the games it skips: a replay
that knows every void of the history is the ladder *as moderated*, exactly as if the voided
games had never been published, bans, unbans and adjustments applied where they fall (the
ladder every reader shows: backtest, calibrate, the console, cards). A void's corrections are
derived, not replayed: in a replay that already skips the voided games they change nothing.

``Lived`` is the same replay seen as the worker lived it (``ladder verify``): each event as it
was scored at the time, i.e. by the replay that knew the voids taken before it; at each void it
switches to the replay that knows that void too, and derives the void's correction rows and
changed outcomes by comparing the two (``rerate``). The replay that knows a void is the same
as the one before it up to the first game that void takes back, so it starts there, as a
``fork`` of the replay it equals at that point. A fork holds only the players it changed: a
game none of whose players a void has reached yet is decided the same by both, so the lived
replay alone applies it. The history is replayed once, plus, for each void, the games of the
players it reached before it was taken (what the void changed).

A replay keeps the players, links, settled tournaments and window counts of one ladder; it
forgets event ids as it goes (stored ids are unique). A player once created is never
forgotten: a player named only by voided games stays, at the start, off every board.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import TypeVar

from engine.ladder import (
    Decision,
    Event,
    GameFinished,
    LadderState,
    LedgerChange,
    Policy,
    apply,
    players_of,
    when,
    window_pair,
)
from engine.player import STATE_FIELDS, Player, PlayerKey
from engine.reasons import LedgerKind, Outcome, Reason
from engine.rulesets import Ruleset

__all__ = [
    "KINDS",
    "RECORDED_KINDS",
    "Action",
    "Effect",
    "Imported",
    "Lived",
    "Replay",
    "Rerating",
    "Season",
    "in_order",
    "last_rerate",
    "placed",
    "rerate",
    "switched",
    "same_state",
    "voided_by",
]

KINDS = ("void", "ban", "unban", "adjust", "erase", "rerate")
# Ledger kinds whose rows are an action of their own, not derived from an event or a
# moderation action (an adjustment and a correction are the rows of an ``Action``).
RECORDED_KINDS = frozenset({LedgerKind.SEASON, LedgerKind.IMPORT})
# What a correction compares: everything but the bookkeeping of changes.
_COMPARED = tuple(f for f in STATE_FIELDS if f not in ("version", "updated_at"))
_COMPARED_OF = operator.attrgetter(*_COMPARED)
_FIELDS_OF = operator.attrgetter(*(f.name for f in fields(Player)))  # a copy's arguments

Verdict = tuple[str, str | None]  # (outcome, reason) as the audit row holds them
_NO_LINKS: Mapping[str, str] = {}  # a ladder without links


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import gave a player besides the rating its ledger row records."""

    games: int = 0
    experience: int = 0
    last_game_at: datetime | None = None
    email_verified: bool = False
    display_name_chosen: bool = False


@dataclass(frozen=True, slots=True)
class Action:
    """One moderation action of the history."""

    number: int
    kind: str  # one of KINDS
    at: datetime
    after_seq: int  # it follows the stored event with this scoring number
    voided: frozenset[str] = frozenset()  # event ids a void takes back
    player_id: str | None = None  # the target of a ban, unban, adjustment or erase
    delta: float = 0.0  # an adjustment's change
    since: datetime | None = None  # a rerate's switch: the version it re-rated under begins


@dataclass(frozen=True, slots=True)
class Season:
    """A season's close: every player's reset by ``reset`` (``Ruleset.season_reset``). Like
    an action it follows the stored event numbered ``after_seq``."""

    name: str
    at: datetime
    reset: str = "none"  # "none", "start" or "toward_start"
    fraction: float = 0.5
    after_seq: int = 0

    @property
    def event_id(self) -> str:
        """The event id of its ledger rows."""
        return f"season:{self.name}"


@dataclass(frozen=True, slots=True)
class Effect:
    """An event whose outcome a void changed: ``outcome`` is ``voided`` for a voided game."""

    event_id: str
    outcome: str
    reason: str | None


@dataclass
class Rerating:
    """What a void changes: corrected players, their correction rows, and changed outcomes."""

    players: list[Player] = field(default_factory=list)
    changes: list[LedgerChange] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)


def same_state(a: Player, b: Player) -> bool:
    """Equal in every stored field a void can change (not the version or its time)."""
    return bool(_COMPARED_OF(a) == _COMPARED_OF(b))


E = TypeVar("E")  # a stored event as the caller reads it
R = TypeVar("R")  # a recorded ledger row as the caller reads it


def in_order(
    events: Iterable[E],
    recorded: Sequence[R],
    actions: Sequence[Action | Season],
    event_place: Callable[[E], tuple[datetime, int]],
    recorded_at: Callable[[R], datetime],
    *,
    tail: bool = True,
) -> Iterator[E | R | Action | Season]:
    """The history's entries in the order every replay applies them: before each stored
    event (``event_place``: when it was processed, its scoring number) the recorded rows
    made before it was processed and the actions that follow an earlier event, the two in
    the order they were taken (by their times; a row first at the same instant); after the
    last event the rest of them, in that order too (unless ``tail`` is false: a replay run in
    pieces takes them once the log is whole). ``actions``: the moderation actions and the
    season closes in the order they were taken (``placed``)."""
    rows, taken = list(recorded), list(actions)
    r = a = 0

    def due(
        row_before: datetime | None, action_before: int | None
    ) -> Iterator[R | Action | Season]:
        nonlocal r, a
        while True:
            row = r < len(rows) and (row_before is None or recorded_at(rows[r]) < row_before)
            act = a < len(taken) and (action_before is None or taken[a].after_seq < action_before)
            if row and not (act and taken[a].at < recorded_at(rows[r])):
                yield rows[r]
                r += 1
            elif act:
                yield taken[a]
                a += 1
            else:
                return

    for event in events:
        if r < len(rows) or a < len(taken):  # none left: nothing is due before any event
            yield from due(*event_place(event))
        yield event
    if tail:
        yield from due(None, None)


def switched(
    rules_at: Callable[[datetime], Ruleset], since: datetime
) -> Callable[[datetime], Ruleset]:
    """The rules a rerate re-rates the history before it by: those in force at ``since``
    (its switch's instant) or later, for every time."""
    return lambda at: rules_at(at if at >= since else since)


def last_rerate(actions: Iterable[Action]) -> Action | None:
    """The history's latest rerate: the ladder as moderated is its re-rating up to it."""
    found = None
    for action in actions:
        if action.kind == "rerate":
            found = action
    return found


def placed(actions: Sequence[Action], seasons: Iterable[Season]) -> list[Action | Season]:
    """The moderation actions (in the order they were taken) with the season closes among
    them, each close after the actions of a lower ``after_seq`` and, at the same one, of an
    earlier time: an adjustment, then a season's reset with no event between them, is the
    adjustment first (the reset started from the rating it made)."""
    steps: list[Action | Season] = list(actions)
    for season in sorted(seasons, key=lambda s: (s.after_seq, s.at)):
        key = (season.after_seq, season.at)
        where = next(
            (i for i, step in enumerate(steps) if (step.after_seq, step.at) > key), len(steps)
        )
        steps.insert(where, season)
    return steps


def voided_by(actions: Iterable[Action]) -> frozenset[str]:
    """Every game the actions void."""
    found: set[str] = set()
    for action in actions:
        if action.kind == "void":
            found |= action.voided
    return frozenset(found)


class Replay:
    """The ladder replayed from its history, skipping the ``voided`` games.

    ``imported``: each imported player's profile, applied at their import row. ``verdicts``
    collects, when ``track`` is set, each event's decision that differs from the one given as
    stored (``event(..., stored=...)``), and every voided event.
    """

    def __init__(
        self,
        policy: Policy,
        rules_at: Callable[[datetime], Ruleset],
        imported: Mapping[str, Imported] | None = None,
        voided: frozenset[str] = frozenset(),
        *,
        track: bool = False,
        rerated: Action | None = None,
    ) -> None:
        self.policy = policy
        # ``rerated``: a rerate whose re-rating this replay is up to that action (every event
        # before it by the rules of its switch, ``switched``), then by ``rules_at``.
        self.rules_at = rules_at if rerated is None else switched(rules_at, _since(rerated))
        self.lived_rules = rules_at
        self.rerated = None if rerated is None else rerated.number
        self.imported: Mapping[str, Imported] = {} if imported is None else imported
        self.voided = voided
        self.track = track
        self.state = LadderState()
        self.verdicts: dict[str, tuple[Verdict, Verdict]] = {}  # id -> (should, stored)
        # When set, collects the key of every player this replay changes or creates.
        self.noted: set[PlayerKey] | None = None
        # A fork's players are those it ``took`` (copied from ``base`` as they were when it
        # first needed them, or found missing there) and made; any other player is ``base``'s.
        self.base: Replay | None = None
        self.taken: set[PlayerKey] = set()

    @property
    def players(self) -> dict[PlayerKey, Player]:
        return self.state.players

    def fork(
        self,
        voided: frozenset[str],
        verdicts: Mapping[str, tuple[Verdict, Verdict]],
        rerated: Action | None = None,
    ) -> Replay:
        """A tracking replay from this point on that also skips ``voided``, starting with
        ``verdicts`` (what differs from the stored decisions so far); ``rerated``: with the
        rules of that rerate up to it (a fork at the history's start). It copies no player:
        before each entry, ``take`` the players it names (``Lived`` does), then apply it to
        the fork before this replay changes them (and their window counts, ``Windows.take``).
        Links and settled tournaments are copied; the window counts are a layer over this
        replay's (``Windows.overlay``): the fork reads this replay's counts of every player it
        has not taken, including what this replay adds to them later."""
        other = Replay(
            self.policy, self.lived_rules, self.imported, voided, track=True, rerated=rerated
        )
        state = self.state
        other.state = LadderState(
            links={ladder: dict(links) for ladder, links in state.links.items()},
            linked_accounts={a: set(ids) for a, ids in state.linked_accounts.items()},
            settled=set(state.settled),
            windows=state.windows.overlay(),
        )
        other.base = self
        other.verdicts = dict(verdicts)
        other.noted = self.noted
        return other

    def found(self, key: PlayerKey) -> Player | None:
        """The player as this replay has it now (``None``: it has no such player)."""
        replay = self
        while replay.base is not None and key not in replay.taken:
            if key in replay.state.players:  # made by the fork itself
                break
            replay = replay.base
        return replay.state.players.get(key)

    def shares(self, event_id: str, keys: Sequence[PlayerKey]) -> bool:
        """Whether this fork would apply the event to its base's players as they are: it
        does not skip it, and has taken none of them."""
        if event_id in self.voided or self.rerated is not None:
            return False  # skipped, or decided by other rules
        players, taken = self.state.players, self.taken
        return not any(key in taken or key in players for key in keys)

    def take(
        self, keys: Iterable[PlayerKey], pairs: Iterable[tuple[PlayerKey, PlayerKey]] = ()
    ) -> None:
        """Copy from ``base`` the players of ``keys`` this fork has not taken yet, and keep
        their window counts (and those of ``pairs``, each a game's two players) as its own,
        before the base changes them."""
        base, taken, players = self.base, self.taken, self.state.players
        if base is None:
            return
        windows = self.state.windows
        for key in keys:
            windows.take(key)
            if key not in taken:
                taken.add(key)
                if key not in players and (player := base.found(key)) is not None:
                    players[key] = Player(*_FIELDS_OF(player))
        for (ladder, a), (_, b) in pairs:
            windows.take_pair(ladder, a, b)

    def event(
        self, event: Event, processed_at: datetime, stored: Verdict | None = None
    ) -> Decision | None:
        """Apply one stored event exactly as the worker did when it processed it; ``None``
        for a voided game (it never happened)."""
        if event.event_id in self.voided:
            if self.track and stored is not None:
                self.verdicts[event.event_id] = ((str(Outcome.VOIDED), None), stored)
            return None
        rules = self.rules_at(when(event, processed_at))
        decision = apply(event, self.state, rules, self.policy, processed_at)
        self.state.seen.clear()
        if self.noted is not None:
            self.noted |= self.state.touched
        self.state.touched.clear()
        if self.track and stored is not None:
            made = (str(decision.outcome), _text(decision.reason))
            if made != stored:
                self.verdicts[event.event_id] = (made, stored)
        return decision

    def action(self, ladder: str, action: Action) -> LedgerChange | None:
        """A ban, unban, adjustment or erase where it falls (an erase bans the pseudonym the
        stored history names instead of the id); a void is the skip set, nothing here; at the
        rerate it re-rates by, the replay goes on by the ladder's rules of each time.
        Returns an adjustment's ledger row as derived."""
        if action.kind == "rerate" and action.number == self.rerated:
            self.rules_at, self.rerated = self.lived_rules, None  # re-rated up to here
        if action.player_id is None or action.kind in ("void", "rerate"):
            return None
        state = self.state
        state.claim(ladder, action.player_id, self.rules_at(action.at), action.at)
        if self.noted is not None:
            self.noted.add((ladder, action.player_id))
        player = state.players[(ladder, action.player_id)]
        if action.kind == "adjust":
            change = LedgerChange(action.player_id, LedgerKind.ADJUSTMENT, 0.0, 0.0, action.delta)
            return self.recorded(ladder, change, action.at)
        banned = action.kind in ("ban", "erase")
        if player.banned != banned:
            player.banned = banned
            player.changed(action.at)
        return None

    def season(self, ladder: str, season: Season) -> list[LedgerChange]:
        """A season's close: each player of the ladder not linked to an account reset by its
        policy under the rules of its instant, one version later; returns a ``season`` row
        per player it moved, in player order. A fork resets the players it holds; the others
        are its base's, which resets them the same."""
        if season.reset == "none":
            return []
        rules, at, players = self.rules_at(season.at), season.at, self.state.players
        changes: list[LedgerChange] = []
        for key in sorted(players):
            player = players[key]
            if key[0] != ladder or player.linked_to is not None:
                continue
            rating, deviation = rules.season_reset(
                player.rating, player.deviation, season.reset, season.fraction
            )
            if rating == player.rating and deviation == player.deviation:
                continue
            changes.append(
                LedgerChange(
                    player.player_id,
                    LedgerKind.SEASON,
                    player.rating,
                    rating,
                    rating - player.rating,
                    deviation=deviation if rules.keeps_deviation else None,
                    volatility=player.volatility if rules.keeps_deviation else None,
                )
            )
            player.rating, player.deviation = rating, deviation
            player.changed(at)
            if self.noted is not None:
                self.noted.add(key)
        return changes

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        """Apply a recorded rating change; returns it with ``before`` and ``delta`` as derived."""
        match change.kind:
            case LedgerKind.IMPORT:
                # The start of an imported player's history: listed at the rating (and the
                # deviation, volatility) it records, with the games, experience, last game and
                # flags of their profile.
                derived = self._set(ladder, change, change.after, at, claim=True)
                player = self.state.players[(ladder, change.player_id)]
                player.listed = True
                if change.deviation is not None or change.volatility is not None:
                    player.deviation, player.volatility = change.deviation, change.volatility
                    derived = derived._replace(
                        deviation=change.deviation, volatility=change.volatility
                    )
                profile = self.imported.get(change.player_id)
                if profile is not None:
                    player.rated_games = profile.games
                    player.experience = profile.experience
                    player.last_game_at = profile.last_game_at
                    player.email_verified = profile.email_verified
                    player.display_name_chosen = profile.display_name_chosen
                return derived
            case LedgerKind.ADJUSTMENT:
                # An operator's change: the delta is the record, the before is today's rating.
                rating = self.state.players[(ladder, change.player_id)].rating
                return self._set(ladder, change, rating + change.delta, at, delta=change.delta)
            case _:
                raise ValueError(f"kind: {change.kind!r} is derived, not recorded")

    def _set(
        self,
        ladder: str,
        change: LedgerChange,
        after: float,
        at: datetime,
        *,
        delta: float | None = None,
        claim: bool = False,
    ) -> LedgerChange:
        """Set the player's rating to ``after``; ``claim`` creates them at the start first."""
        if self.noted is not None:
            self.noted.add((ladder, change.player_id))
        if claim:
            self.state.claim(ladder, change.player_id, self.rules_at(at), at)
        player = self.state.players[(ladder, change.player_id)]
        derived = LedgerChange(
            change.player_id,
            change.kind,
            player.rating,
            after,
            after - player.rating if delta is None else delta,
        )
        player.rating = after
        player.changed(at)
        return derived


def rerate(
    ladder: str,
    *,
    current: Mapping[PlayerKey, Player],
    should: Mapping[PlayerKey, Player],
    verdicts: Mapping[str, tuple[Verdict, Verdict]],
    effective: Mapping[str, tuple[Verdict, Verdict]],
    rules: Ruleset,
    at: datetime,
) -> Rerating:
    """Compare the ladder as it stands (``current``) with the ladder as it should be.

    A player whose state differs gets the state it should have, one version later, stamped
    ``at``, and a ``correction`` row when the rating moves. A player named only by voided
    events is back where a new player starts (off every board). ``verdicts`` are the
    should-be decisions that differ from the stored ones, ``effective`` the outcomes earlier
    voids changed (both as (now, as stored)): an effect is due where the outcome moves.
    """
    done = Rerating()
    for key in sorted(current):
        now = current[key]
        target = should.get(key)
        if target is None:
            target = replace(rules.newcomer(ladder, key[1]), banned=now.banned)
        if same_state(now, target):
            continue
        fixed = replace(target, version=now.version + 1, updated_at=at, dirty=True)
        done.players.append(fixed)
        if (fixed.rating, fixed.deviation) != (now.rating, now.deviation):
            done.changes.append(
                LedgerChange(
                    key[1],
                    LedgerKind.CORRECTION,
                    now.rating,
                    fixed.rating,
                    fixed.rating - now.rating,
                    deviation=fixed.deviation,
                    volatility=fixed.volatility,
                )
            )
    for event_id in sorted(set(verdicts) | set(effective)):
        stored = (verdicts[event_id] if event_id in verdicts else effective[event_id])[1]
        made = verdicts[event_id][0] if event_id in verdicts else stored
        was = effective[event_id][0] if event_id in effective else stored
        if made != was:
            done.effects.append(Effect(event_id, made[0], made[1]))
    return done


class Lived:
    """The history replayed as the worker lived it: each event by the ``Replay`` that knew the
    voids taken before it, switching to the next at each void.

    ``event`` returns the lived decision (what the worker stored) and leaves in ``moderated``
    the event's decision in the ladder as moderated by every void of the history (``None``:
    voided), with the replay whose players it left (what its receipt says now): the decision
    of the latest void whose replay runs there, else the lived one (a void whose first
    voided game comes later changes nothing here). ``action`` returns what the action
    derived: its ledger rows (an adjustment, or a void's corrections) and, for a void, the
    changed outcomes. ``effective`` holds each event's outcome where a void changed it.

    The replay of a void still ahead starts at the first game it takes back that no earlier
    void took (``_starts``), as a fork of the running replay it equals there: the latest
    earlier void's replay already running, else the lived one.
    """

    def __init__(
        self,
        ladder: str,
        policy: Policy,
        rules_at: Callable[[datetime], Ruleset],
        actions: Iterable[Action],
        imported: Mapping[str, Imported] | None = None,
    ) -> None:
        self.ladder = ladder
        self.rules_at = rules_at
        self.lived = Replay(policy, rules_at, imported)
        self.ahead: dict[int, Replay] = {}  # running replays of voids still ahead, by number
        # The players any replay changed since each running void's replay started: the only
        # ones its void can find changed (every replay notes into ``_noted``).
        self._noted: set[PlayerKey] = set()
        self.lived.noted = self._noted
        self._since: dict[int, set[PlayerKey]] = {}
        self._skips: dict[int, frozenset[str]] = {}  # every void's skip set, by number
        self._starts: dict[str, list[int]] = {}  # event id -> the voids whose replay starts there
        # A rerate's replay, and that of every void after one, starts at the history's start
        # with the rules of the latest rerate up to it (``Replay(rerated=...)``).
        self._rerated: dict[int, Action] = {}
        voided: frozenset[str] = frozenset()
        latest: Action | None = None
        for action in actions:
            if action.kind == "rerate":
                latest = action
            if action.kind == "void" or action.kind == "rerate":
                if latest is not None:
                    self._rerated[action.number] = latest
                elif action.kind == "void":
                    for event_id in action.voided - voided:
                        self._starts.setdefault(event_id, []).append(action.number)
                voided = voided | action.voided
                self._skips[action.number] = voided
        self._begun = not self._rerated
        self.effective: dict[str, tuple[Verdict, Verdict]] = {}  # id -> (now, as stored)

    @property
    def state(self) -> LadderState:
        return self.lived.state

    def _start(self, number: int) -> Replay:
        """The replay of void ``number`` from here on: a fork of the running replay of the
        latest earlier void, else of the lived one (whose differences from the stored
        decisions are the ``effective`` outcomes)."""
        if number in self.ahead:
            return self.ahead[number]
        if number in self._rerated:
            # Its own rules from the start: it holds every player (no base), so nothing
            # another replay does reaches it.
            self._gather()
            started = self.lived.fork(self._skips[number], self.effective, self._rerated[number])
            started.base = None
            started.state.players = {k: Player(*_FIELDS_OF(p)) for k, p in self.players.items()}
            started.state.windows = self.lived.state.windows.copy()
            self.ahead[number] = started
            self._since[number] = set()
            return started
        earlier = [n for n in self.ahead if n < number]
        source = self.ahead[max(earlier)] if earlier else self.lived
        verdicts = source.verdicts if earlier else self.effective
        self._gather()
        started = self.ahead[number] = source.fork(self._skips[number], verdicts)
        self._since[number] = set()
        return started

    def _gather(self) -> None:
        """Add what the replays noted since the last call to each running void's players."""
        if self._noted:
            for since in self._since.values():
                since |= self._noted
            self._noted.clear()

    def _take(
        self, keys: Sequence[PlayerKey], pairs: Sequence[tuple[PlayerKey, PlayerKey]] = ()
    ) -> None:
        """Each running replay of a void ahead takes the players an entry names (and the
        pairs a game of two counts) before any replay applies it (``Replay.fork``)."""
        for ahead in self.ahead.values():
            ahead.take(keys, pairs)

    @property
    def players(self) -> dict[PlayerKey, Player]:
        return self.lived.players

    def _begin(self) -> None:
        """Start, before the history's first entry, the replays that start there."""
        self._begun = True
        for number in sorted(self._rerated):
            self._start(number)

    def event(self, event: Event, processed_at: datetime) -> Decision:
        """The lived decision (stored event ids are unique, so never a voided one yet)."""
        if not self._begun:
            self._begin()
        starting = self._starts.get(event.event_id)
        if starting is not None:
            for number in sorted(starting):
                self._start(number)
        if not self.ahead:
            decision = self.lived.event(event, processed_at)
            assert decision is not None, "an event scored after it was voided"
            self.moderated: tuple[Decision | None, Replay] = (decision, self.lived)
            return decision
        ladder = event.ladder
        lived_links = self.lived.state.links.get(ladder, _NO_LINKS)
        lived = players_of(event, lived_links)
        keys = list(lived)
        links = [lived_links]
        shared = True
        for ahead in self.ahead.values():  # as each replay's links resolve the ids
            theirs_links = ahead.state.links.get(ladder, _NO_LINKS)
            theirs = players_of(event, theirs_links)
            shared = shared and theirs == lived and ahead.shares(event.event_id, lived)
            keys += theirs
            links.append(theirs_links)
        if shared and isinstance(event, GameFinished):
            return self._shared(event, processed_at)
        self._take(keys, _pairs(event, links))
        decision = self.lived.event(event, processed_at)
        assert decision is not None, "an event scored after it was voided"
        self.moderated = (decision, self.lived)
        stored = (str(decision.outcome), _text(decision.reason))
        last = max(self.ahead)
        for number, ahead in self.ahead.items():
            made = ahead.event(event, processed_at, stored)
            if number == last:
                self.moderated = (made, ahead)
        return decision

    def _shared(self, event: GameFinished, processed_at: datetime) -> Decision:
        """A game none of whose players any replay of a void ahead has taken: every replay
        would decide it as the lived one does, from the same players and window counts, so
        only the lived one applies it (its players are theirs, and their window counts are a
        layer over its own: they count it too). A void's replay so costs what it changed,
        not its stretch's length."""
        decision = self.lived.event(event, processed_at)
        assert decision is not None, "an event scored after it was voided"
        self.moderated = (decision, self.lived)
        return decision

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        if not self._begun:
            self._begin()
        self._take(((ladder, change.player_id),))
        derived = self.lived.recorded(ladder, change, at)
        for ahead in self.ahead.values():
            ahead.recorded(ladder, change, at)
        return derived

    def season(self, season: Season) -> list[LedgerChange]:
        """A season's close, in every running replay; returns the lived one's rows."""
        if not self._begun:
            self._begin()
        derived = self.lived.season(self.ladder, season)
        for ahead in self.ahead.values():
            ahead.season(self.ladder, season)
        return derived

    def action(self, action: Action) -> tuple[list[LedgerChange], list[Effect]]:
        if not self._begun:
            self._begin()
        if action.kind not in ("void", "rerate"):
            if action.player_id is not None:
                self._take(((self.ladder, action.player_id),))
            derived = self.lived.action(self.ladder, action)
            for ahead in self.ahead.values():
                ahead.action(self.ladder, action)
            return ([derived] if derived is not None else []), []
        # A void none of whose games was replayed (none stored) starts here: it changes nothing.
        should = self._start(action.number)
        del self.ahead[action.number]
        self._gather()
        changed = self._since.pop(action.number)
        current = self.lived.players
        # The void's ladder where it may differ from the lived one: a player it did not take
        # is the lived one's (the same object).
        view = {key: found for key in changed if (found := should.found(key)) is not None}
        done = rerate(
            self.ladder,
            current={key: current[key] for key in changed if key in current},
            should=view,
            verdicts=should.verdicts,
            effective=self.effective,
            rules=self.rules_at(action.at),
            at=action.at,
        )
        self.effective = dict(should.verdicts)
        # From here the ladder as it should be is the lived one, with the lived bookkeeping:
        # its players changed since the void's replay started are the void's (corrected where
        # it changed them); every player the lived ladder had stays.
        fixed = {p.key: p for p in done.players}
        for key in changed:
            player, was = view.get(key), current.get(key)
            if player is was:
                continue
            if player is None:
                assert was is not None
                current[key] = replace(fixed.get(key, was), dirty=False)
                continue
            if key in fixed:
                player.version, player.updated_at = fixed[key].version, fixed[key].updated_at
            elif was is not None:
                player.version, player.updated_at = was.version, was.updated_at
            current[key] = player
        lived, state = self.lived, self.lived.state
        lived.voided = should.voided
        state.links, state.linked_accounts = should.state.links, should.state.linked_accounts
        state.settled = should.state.settled
        # The void's window counts: its layer's own lists join the lived counts (a rerate's,
        # counts of their own, replace them); a replay ahead over its layer reads the lived.
        windows = state.windows.absorbed(should.state.windows)
        for ahead in self.ahead.values():
            ahead.state.windows.rebase(should.state.windows, windows)
            if ahead.base is should:
                ahead.base = lived
            ahead.action(self.ladder, action)  # a void's after this rerate: its rules from here
        state.windows = windows
        return done.changes, done.effects


def _pairs(event: Event, links: Iterable[Mapping[str, str]]) -> list[tuple[PlayerKey, PlayerKey]]:
    """The pair whose window counts a game of two players may add to (``counted``), as each
    of ``links`` resolves its ids; a game of more players, or another event, counts none."""
    pair = window_pair(event)
    if pair is None:
        return []
    ladder, (a, b) = event.ladder, pair
    return [((ladder, found.get(a, a)), (ladder, found.get(b, b))) for found in links]


def _since(action: Action) -> datetime:
    if action.since is None:
        raise ValueError(f"rerate {action.number} has no switch instant")
    return action.since


def _text(reason: Reason | None) -> str | None:
    return None if reason is None else str(reason)
