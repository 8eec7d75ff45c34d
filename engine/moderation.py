"""Moderation by replay: a void re-rates the ladder exactly, as if the games had never been played.

A moderation action has a place in the ladder's log: it follows the stored event numbered
``after_seq`` (the last one scored when it was taken). Bans, unbans and adjustments change the
ladder there and then; a void changes the past: the ladder *as it should be* is the replay of the
whole log with every voided event skipped, bans and adjustments (and season resets) applied where
they fall. ``Ladder`` is that replay; ``rerate`` compares the ladder as it stands with it and
returns, per player whose state differs, the corrected state and the ``correction`` ledger row,
and per event whose outcome differs, its new outcome (``voided`` for the voided games).

``Lived`` replays the log as it was lived, for ``ladder verify``: every event as the worker
scored it, and at each void the switch to the ladder as it should be from then on. It runs one
``Ladder`` per void still ahead beside the lived one, so each void's corrections are derived,
not trusted.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from engine.ladder import Decision, Event, LadderState, LedgerChange, Policy
from engine.player import STATE_FIELDS, Player, PlayerKey
from engine.reasons import LedgerKind, Outcome, Reason
from engine.replay import Imported, Replay
from engine.rulesets import Ruleset

__all__ = [
    "KINDS",
    "Action",
    "Effect",
    "Ladder",
    "Lived",
    "Rerating",
    "rerate",
    "same_state",
]

KINDS = ("void", "ban", "unban", "adjust", "erase")
# What a correction compares: everything but the bookkeeping of changes.
_COMPARED = tuple(f for f in STATE_FIELDS if f not in ("version", "updated_at"))

Verdict = tuple[str, str | None]  # (outcome, reason) as the audit row holds them


@dataclass(frozen=True, slots=True)
class Action:
    """One moderation action as the engine replays it."""

    number: int
    kind: str  # one of KINDS
    at: datetime
    after_seq: int  # it follows the stored event with this scoring number
    voided: frozenset[str] = frozenset()  # event ids a void takes back
    player_id: str | None = None  # the target of a ban, unban or adjustment
    delta: float = 0.0  # an adjustment's change


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
    return all(getattr(a, f) == getattr(b, f) for f in _COMPARED)


class Ladder:
    """The ladder as it should be: a replay that skips the voided events.

    ``verdicts`` collects, when ``track`` is set, each event's decision that differs from the
    one given as it was stored (``event(..., stored=...)``), and every voided event.
    ``imported`` is the ladder's imported profiles (``Replay``).
    """

    def __init__(
        self,
        policy: Policy,
        rules_at: Callable[[datetime], Ruleset],
        voided: frozenset[str],
        *,
        track: bool = True,
        imported: Mapping[str, Imported] | None = None,
    ) -> None:
        self.replay = Replay(policy, rules_at, imported)
        self.rules_at = rules_at
        self.voided = voided
        self.track = track
        self.verdicts: dict[str, tuple[Verdict, Verdict]] = {}  # id -> (should, stored)

    @property
    def players(self) -> dict[PlayerKey, Player]:
        return self.replay.state.players

    def event(
        self, event: Event, processed_at: datetime, stored: Verdict | None = None
    ) -> Decision | None:
        if event.event_id in self.voided:
            if self.track and stored is not None:
                self.verdicts[event.event_id] = ((str(Outcome.VOIDED), None), stored)
            return None
        decision = self.replay.event(event, processed_at)
        if self.track and stored is not None:
            made = (str(decision.outcome), _text(decision.reason))
            if made != stored:
                self.verdicts[event.event_id] = (made, stored)
        return decision

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        return self.replay.recorded(ladder, change, at)

    def action(self, ladder: str, action: Action) -> LedgerChange | None:
        """A ban, unban or adjustment where it falls; a void is the skip set, nothing here.
        An erase bans the pseudonym (the stored log already names it instead of the id)."""
        if action.player_id is None or action.kind not in ("ban", "unban", "adjust", "erase"):
            return None
        state = self.replay.state
        state.claim(ladder, action.player_id, self.rules_at(action.at).start, action.at)
        player = state.players[(ladder, action.player_id)]
        if action.kind == "adjust":
            change = LedgerChange(action.player_id, LedgerKind.ADJUSTMENT, 0.0, 0.0, action.delta)
            return self.replay.recorded(ladder, change, action.at)
        banned = action.kind in ("ban", "erase")
        if player.banned != banned:
            player.banned = banned
            player.changed(action.at)
        return None


def rerate(
    ladder: str,
    current: Mapping[PlayerKey, Player],
    should: Mapping[PlayerKey, Player],
    verdicts: Mapping[str, tuple[Verdict, Verdict]],
    effective: Mapping[str, tuple[Verdict, Verdict]],
    start: float,
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
            target = Player(ladder, key[1], start, banned=now.banned)
        if same_state(now, target):
            continue
        fixed = replace(target, version=now.version + 1, updated_at=at, dirty=True)
        done.players.append(fixed)
        if fixed.rating != now.rating:
            done.changes.append(
                LedgerChange(
                    key[1],
                    LedgerKind.CORRECTION,
                    now.rating,
                    fixed.rating,
                    fixed.rating - now.rating,
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
    """The log replayed as it was lived, with each void switching to the ladder as it should be.

    ``event`` returns the lived decision (what the worker stored); ``action`` returns what the
    action derived: its ledger rows (adjustment or corrections) and, for a void, the changed
    outcomes. ``effective`` holds each event's outcome where a void changed it. ``imported``
    is the ladder's imported profiles, which every replay it runs applies (``Replay``).
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
        self.lived = Ladder(policy, rules_at, frozenset(), track=False, imported=imported)
        self.ahead: dict[int, Ladder] = {}
        voided: frozenset[str] = frozenset()
        for action in actions:
            if action.kind == "void":
                voided = voided | action.voided
                self.ahead[action.number] = Ladder(policy, rules_at, voided, imported=imported)
        self.voided: frozenset[str] = frozenset()
        self.effective: dict[str, tuple[Verdict, Verdict]] = {}  # id -> (now, as stored)

    @property
    def state(self) -> LadderState:
        return self.lived.replay.state

    def event(self, event: Event, processed_at: datetime) -> Decision:
        """As ``Replay.event``: the lived decision (event ids are unique, so never voided)."""
        decision = self.lived.event(event, processed_at)
        assert decision is not None, "an event scored after it was voided"
        stored = (str(decision.outcome), _text(decision.reason))
        for ladder in self.ahead.values():
            ladder.event(event, processed_at, stored)
        return decision

    def recorded(self, ladder: str, change: LedgerChange, at: datetime) -> LedgerChange:
        derived = self.lived.recorded(ladder, change, at)
        for ahead in self.ahead.values():
            ahead.recorded(ladder, change, at)
        return derived

    def action(self, action: Action) -> tuple[list[LedgerChange], list[Effect]]:
        if action.kind != "void":
            derived = self.lived.action(self.ladder, action)
            for ladder in self.ahead.values():
                ladder.action(self.ladder, action)
            return ([derived] if derived is not None else []), []
        should = self.ahead.pop(action.number)
        start = self.rules_at(action.at).start
        current = self.lived.players
        done = rerate(
            self.ladder,
            current,
            should.players,
            should.verdicts,
            self.effective,
            start,
            action.at,
        )
        self.effective = dict(should.verdicts)
        # From here the ladder as it should be is the lived one, with the lived bookkeeping.
        fixed = {p.key: p for p in done.players}
        for key, player in should.players.items():
            was = current.get(key)
            if key in fixed:
                player.version, player.updated_at = fixed[key].version, fixed[key].updated_at
            elif was is not None:
                player.version, player.updated_at = was.version, was.updated_at
        for key, player in fixed.items():
            if key not in should.players:
                should.players[key] = replace(player, dirty=False)
        should.track = False
        should.verdicts = {}
        self.lived = should
        self.voided = should.voided
        return done.changes, done.effects


def _text(reason: Reason | None) -> str | None:
    return None if reason is None else str(reason)
