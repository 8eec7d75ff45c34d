"""The ladder rules above the rating formulas: one event applied to the ladder state.

Sources: SPEC 2.1 (boosted points, tournament prizes, K by weekly volume), 2.3 (links: the
account adopts the anonymous rating only if it has no rated games; histories are never
added), 2.4 (duplicates, then the fair-play filters in order) and seeds 002-004.

``apply`` takes one validated event (the engine's own event types, not the wire models),
the ladder state it needs (players, links, settled tournaments, window counts, event ids
already applied), the ruleset version in force and the ladder's policy, changes the state
and returns a typed ``Decision``: outcome, reason, every ledger change, boosted points, link
and prize effects. It does no I/O. A worker runs it on the state it loaded and locked for
one batch; a replay (``engine.replay``) runs it on the state it rebuilt from the audit
store, so the two derive the same numbers from the same events.

An event without ``ended_at`` (tournament, link, player update) is placed in time by the
moment it was processed (``processed_at``): the caller passes that moment as ``now``, and it
chooses the ruleset version by ``when(event, now)``.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Final, NamedTuple

from engine.fairplay import FairPlayConfig, FairPlayFacts, verdict
from engine.fairplay import Reason as FairPlayReason
from engine.player import Player, PlayerKey, idle_days
from engine.reasons import LedgerKind, Outcome, Reason
from engine.rulesets import Ruleset
from engine.types import Game, PlayerState, SideChange
from engine.windows import Windows

__all__ = [
    "RESULT_POINTS",
    "Decision",
    "Event",
    "GameFinished",
    "IdentityLinked",
    "LadderState",
    "LedgerChange",
    "LinkEffect",
    "MatchFinished",
    "PlayerUpdated",
    "Policy",
    "Side",
    "Team",
    "TournamentEffect",
    "TournamentFinished",
    "apply",
    "counted",
    "named_ids",
    "on_public_board",
    "on_rating_board",
    "players_again",
    "players_of",
    "unsupported",
    "unsupported_detail",
    "when",
]

# SPEC 2.1 decision: boosted points = result value (1/2/3) x cube, to the winner.
RESULT_POINTS: Final[dict[str, int]] = {"single": 1, "gammon": 2, "backgammon": 3}


# -- events ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Side:
    """One player of a game: the id as sent, and the fair-play facts about them."""

    player_id: str
    is_bot: bool = False
    network: str | None = None  # opaque token (sent, or derived from an IP by the worker)


@dataclass(frozen=True, slots=True)
class GameFinished:
    event_id: str
    ladder: str
    ended_at: datetime
    mode: str  # "ranked" | "boosted" | "tournament"
    winner: Side
    loser: Side
    cube: int = 1
    match_length: int = 1
    result: str = "single"
    digest: str | None = None  # of the normalised payload: tells a duplicate from a conflict
    type: ClassVar[str] = "game.finished"


@dataclass(frozen=True, slots=True)
class Team:
    """One team of a draw or a team game: its finishing rank (1 first; equal ranks tie), its
    players, and the share of the game each played (1: all of it)."""

    rank: int
    players: tuple[Side, ...]
    weights: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class MatchFinished:
    """A ``game.finished`` that is not a 1v1 win (SPEC 7): a draw (two teams of one with the
    same rank) or a team or free-for-all game."""

    event_id: str
    ladder: str
    ended_at: datetime
    mode: str  # "ranked" | "boosted" | "tournament"
    teams: tuple[Team, ...]
    shape: str  # "draw" or "teams" (engine.rulesets.SHAPES)
    digest: str | None = None
    type: ClassVar[str] = "game.finished"


@dataclass(frozen=True, slots=True)
class TournamentFinished:
    event_id: str
    ladder: str
    tournament_id: str
    public: bool
    podium: tuple[str, ...]
    ended_at: datetime | None = None
    digest: str | None = None
    type: ClassVar[str] = "tournament.finished"


@dataclass(frozen=True, slots=True)
class IdentityLinked:
    event_id: str
    ladder: str
    anonymous_id: str
    account_id: str
    ended_at: datetime | None = None
    digest: str | None = None
    type: ClassVar[str] = "identity.linked"


@dataclass(frozen=True, slots=True)
class PlayerUpdated:
    event_id: str
    ladder: str
    player_id: str
    email_verified: bool
    display_name_chosen: bool
    ended_at: datetime | None = None
    digest: str | None = None
    type: ClassVar[str] = "player.updated"


Event = GameFinished | MatchFinished | TournamentFinished | IdentityLinked | PlayerUpdated


def when(event: Event, processed_at: datetime) -> datetime:
    """The moment that chooses the ruleset version: ``ended_at``, else when it was processed."""
    return event.ended_at if event.ended_at is not None else processed_at


def unsupported(event: Event, rules: Ruleset) -> bool:
    """Whether the event is a game of a shape the ruleset cannot rate (SPEC 7): it is
    dead-lettered (``unsupported_shape``) and changes nothing, no player created."""
    return isinstance(event, MatchFinished) and event.shape not in rules.shapes


def unsupported_detail(event: Event, rules: Ruleset) -> str:
    """Why ``unsupported``: what the ruleset rates, and what the event is (one line)."""
    shape = event.shape if isinstance(event, MatchFinished) else "win"
    return f"({rules.kind}) {rules.rates_only(shape)}"


def named_ids(event: Event) -> tuple[str, ...]:
    """The player ids the event names, as sent (before links are resolved)."""
    match event:
        case GameFinished():
            return (event.winner.player_id, event.loser.player_id)
        case MatchFinished():
            return tuple(side.player_id for team in event.teams for side in team.players)
        case TournamentFinished():
            return event.podium
        case IdentityLinked():
            return (event.anonymous_id, event.account_id)
        case PlayerUpdated():
            return (event.player_id,)


def window_pair(event: Event) -> tuple[str, str] | None:
    """The two ids, as sent, whose window counts a game adds to (``counted``): a 1v1 win's
    winner and loser, the two players of any other game of two (a draw's as sent). A game of
    more players, or another event, counts in no window."""
    if isinstance(event, GameFinished):
        return (event.winner.player_id, event.loser.player_id)
    if isinstance(event, MatchFinished):
        ids = named_ids(event)
        return (ids[0], ids[1]) if len(ids) == 2 else None
    return None


def players_of(event: Event, links: Mapping[str, str]) -> list[PlayerKey]:
    """The players an applied event has, created at the start rating if new: every id it
    names has one (and so a card), even when the event is refused, so that the store and the
    boards hold the same players. Each id as sent, then as resolved through the ladder's
    ``links`` (the same id again when it is not linked)."""
    ladder = event.ladder
    found: list[PlayerKey] = []  # a loop: the cheapest way, and apply asks for every event
    for pid in named_ids(event):
        found.append((ladder, pid))
        found.append((ladder, links.get(pid, pid)))
    return found


def players_again(event: Event, links: Mapping[str, str]) -> tuple[PlayerKey, ...]:
    """The players a duplicate projects again if they still exist (a crash may have cut the
    first projection short), its ids as resolved: it creates nobody, so an erased id stays
    erased."""
    ladder = event.ladder
    return tuple((ladder, links.get(pid, pid)) for pid in named_ids(event))


# -- the ladder's settings and state ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Policy:
    """The ladder's switches above the ruleset (its configuration file's ladder table)."""

    fairplay: FairPlayConfig = FairPlayConfig()
    linking: bool = True
    boosted_board: bool = False
    public_board: bool = False


@dataclass
class LadderState:
    """What ``apply`` reads and changes: a batch's share of the ladders, or a whole ladder.

    ``seen`` maps the event ids already applied to their payload digest (``None`` when the
    digest is unknown: then an equal id is taken as a duplicate). ``touched`` collects the
    players the events named, for the projection.
    """

    players: dict[PlayerKey, Player] = field(default_factory=dict)
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # ladder -> {anon: account}
    linked_accounts: dict[str, set[str]] = field(default_factory=dict)
    settled: set[tuple[str, str]] = field(default_factory=set)
    windows: Windows = field(default_factory=Windows)
    seen: dict[tuple[str, str], str | None] = field(default_factory=dict)
    touched: set[PlayerKey] = field(default_factory=set)

    def resolve(self, ladder: str, player_id: str) -> str:
        return self.links.get(ladder, {}).get(player_id, player_id)

    def player(self, ladder: str, player_id: str) -> Player:
        self.touched.add((ladder, player_id))
        return self.players[(ladder, player_id)]

    def claim(self, ladder: str, player_id: str, rules: Ruleset, at: datetime) -> None:
        """A player the ladder has not seen starts as the ruleset's newcomer."""
        if (ladder, player_id) not in self.players:
            self.players[(ladder, player_id)] = rules.newcomer(ladder, player_id, at)


# -- the decision ---------------------------------------------------------------------------
# What ``apply`` answers is named tuples (immutable, typed, the cheapest value to build): a
# decision and its ledger rows are made for every event of every batch and replay.


class LedgerChange(NamedTuple):
    """One ``rating_changes`` row: ``k`` is K (gammon42, prostriker) or the fibs multiplier;
    ``deviation`` and ``volatility`` are the player's after the change, where the ruleset
    keeps them (glicko2, openskill's sigma)."""

    player_id: str
    kind: LedgerKind
    before: float
    after: float
    delta: float
    k: float | None = None
    expected: float | None = None
    deviation: float | None = None
    volatility: float | None = None


class LinkEffect(NamedTuple):
    anonymous_id: str
    account_id: str
    adopted: bool


class TournamentEffect(NamedTuple):
    tournament_id: str
    public: bool
    prizes: tuple[tuple[str, int], ...] = ()  # (player id, prize), first place first


class Decision(NamedTuple):
    """What one event did: the audit row's facts, the ledger rows and the other effects."""

    event_id: str
    ladder: str
    type: str
    outcome: Outcome
    reason: Reason | None = None
    ruleset_version: str | None = None
    mode: str | None = None
    winner_id: str | None = None  # resolved ids; a link's account, a player update's player
    loser_id: str | None = None  # a link's anonymous id
    cube: int | None = None
    coefficient: float | None = None
    match_length: int | None = None
    changes: tuple[LedgerChange, ...] = ()
    boosted: tuple[tuple[str, int], ...] = ()  # (player id, points added)
    link: LinkEffect | None = None
    tournament: TournamentEffect | None = None
    digests: tuple[str | None, str | None] = (None, None)  # event_id_conflict: stored, sent
    # A draw's or team game's players as resolved, each with its team's rank as sent, team by
    # team in the event's order (rated or not): the store's ``game_players`` rows.
    players: tuple[tuple[str, int], ...] = ()

    @property
    def recorded(self) -> bool:
        """Whether the event gets an audit row (not a duplicate, not dead-lettered)."""
        return self.outcome not in (Outcome.DUPLICATE, Outcome.DEAD_LETTERED)


# -- applying one event ---------------------------------------------------------------------

# A fair-play filter's reason as the ladder's reason (the same value).
_REASONS: Final[dict[FairPlayReason, Reason]] = {r: Reason(r.value) for r in FairPlayReason}
_NO_LINKS: Final[Mapping[str, str]] = {}  # a ladder without links


def apply(
    event: Event, state: LadderState, rules: Ruleset, policy: Policy, now: datetime
) -> Decision:
    """Apply one event under ``rules`` (the version in force at ``when(event, now)``)."""
    ladder = event.ladder
    key = (ladder, event.event_id)
    links = state.links.get(ladder, _NO_LINKS)
    if key in state.seen:
        stored = state.seen[key]
        if stored is not None and event.digest is not None and stored != event.digest:
            # SPEC 2.4 step 1: the same id with other content is a conflict, not a duplicate.
            return Decision(
                event.event_id,
                ladder,
                event.type,
                Outcome.DEAD_LETTERED,
                Reason.EVENT_ID_CONFLICT,
                digests=(stored, event.digest),
            )
        state.touched.update(k for k in players_again(event, links) if k in state.players)
        return Decision(event.event_id, ladder, event.type, Outcome.DUPLICATE)
    if unsupported(event, rules):
        return Decision(
            event.event_id, ladder, event.type, Outcome.DEAD_LETTERED, Reason.UNSUPPORTED_SHAPE
        )
    state.seen[key] = event.digest
    players = state.players
    touched = state.touched
    for pkey in players_of(event, links):
        if pkey not in players:
            players[pkey] = rules.newcomer(ladder, pkey[1], now)
        touched.add(pkey)
    match event:
        case GameFinished():
            return _game(event, state, rules, policy, now)
        case MatchFinished():
            return _match(event, state, rules, policy, now)
        case TournamentFinished():
            return _tournament(event, state, rules, now)
        case IdentityLinked():
            return _link(event, state, rules, policy, now)
        case PlayerUpdated():
            return _player_updated(event, state, rules, now)


def _game(
    event: GameFinished, state: LadderState, rules: Ruleset, policy: Policy, now: datetime
) -> Decision:
    ladder = event.ladder
    links = state.links.get(ladder, _NO_LINKS)
    winner_id = links.get(event.winner.player_id, event.winner.player_id)
    loser_id = links.get(event.loser.player_id, event.loser.player_id)
    winner = state.players[(ladder, winner_id)]
    loser = state.players[(ladder, loser_id)]
    windows = state.windows
    fairplay = policy.fairplay
    mode = event.mode
    ended_at = event.ended_at
    reason: Reason | None
    if winner_id == loser_id:
        reason = Reason.SELF_PLAY  # an anonymous id against the account it is linked to
    elif winner.banned or loser.banned:
        reason = Reason.BANNED  # moderation: unrated for both, as against a bot
    else:
        found = verdict(
            FairPlayFacts(
                mode,
                event.winner.is_bot,
                event.loser.is_bot,
                event.winner.network,
                event.loser.network,
                windows.rated_pair_games(
                    ladder, winner_id, loser_id, ended_at, fairplay.pair_window_hours
                ),
            ),
            fairplay,
        )
        reason = None if found is None else _REASONS[found]
    changes: tuple[LedgerChange, ...] = ()
    boosted: tuple[tuple[str, int], ...] = ()
    coefficient: float | None = None
    cube = event.cube
    match_length = event.match_length
    if reason is None:
        winner_recent = loser_recent = 0
        hours = rules.k_window_hours
        if hours is not None:
            # SPEC 2.1: K by the ranked games of the 7 days before ended_at, this one not counted.
            winner_recent, loser_recent = windows.ranked_games_both(
                ladder, winner_id, loser_id, ended_at, hours
            )
        change = rules.rate(
            _state(winner, winner_recent, ended_at),
            _state(loser, loser_recent, ended_at),
            Game(cube, match_length),
        )
        coefficient = change.coefficient
        changes = (_rated(winner, change.winner), _rated(loser, change.loser))
        _played(winner, match_length, ended_at, now)
        _played(loser, match_length, ended_at, now)
    elif mode == "boosted" and policy.boosted_board and reason is not Reason.BANNED:
        points = RESULT_POINTS[event.result] * cube
        winner.boosted_points += points
        winner.changed(now)
        boosted = ((winner_id, points),)
    counted(windows, event, winner_id, loser_id, rated=reason is None)
    return Decision(
        event.event_id,
        ladder,
        event.type,
        Outcome.RATED if reason is None else Outcome.UNRATED,
        reason,
        rules.version,
        mode,
        winner_id,
        loser_id,
        cube,
        coefficient,
        match_length,
        changes,
        boosted,
    )


def _match(
    event: MatchFinished, state: LadderState, rules: Ruleset, policy: Policy, now: datetime
) -> Decision:
    """A draw or a team game (SPEC 7), under a ruleset whose ``shapes`` has it: the fair-play
    filters as for a 1v1 game (SPEC 2.4), with any bot, any two opponents on one network,
    and for two players the pair limit; then every player is rated at once."""
    ladder, ended_at, mode = event.ladder, event.ended_at, event.mode
    links = state.links.get(ladder, _NO_LINKS)
    ids = [[links.get(s.player_id, s.player_id) for s in team.players] for team in event.teams]
    flat = [pid for team in ids for pid in team]
    players = [[state.players[(ladder, pid)] for pid in team] for team in ids]
    windows, fairplay = state.windows, policy.fairplay
    sent = window_pair(event)
    pair = None if sent is None else (links.get(sent[0], sent[0]), links.get(sent[1], sent[1]))
    reason: Reason | None
    if len(set(flat)) != len(flat):
        reason = Reason.SELF_PLAY  # an anonymous id and the account it is linked to
    elif any(p.banned for team in players for p in team):
        reason = Reason.BANNED
    else:
        shared = _shared_network(event.teams)
        found = verdict(
            FairPlayFacts(
                mode,
                any(s.is_bot for team in event.teams for s in team.players),
                False,
                shared,
                shared,  # the token two opponents share, if any: as one network for the filter
                0
                if pair is None
                else windows.rated_pair_games(ladder, *pair, ended_at, fairplay.pair_window_hours),
            ),
            fairplay,
        )
        reason = None if found is None else _REASONS[found]
    changes: list[LedgerChange] = []
    if reason is None:
        done = rules.rate_match(
            [[_state(p, 0, ended_at) for p in team] for team in players],
            [team.rank for team in event.teams],
            [team.weights for team in event.teams],
        )
        for team, moves in zip(players, done, strict=True):
            for player, move in zip(team, moves, strict=True):
                changes.append(_rated(player, move))
                _played(player, 1, ended_at, now)
    if pair is not None:  # the store keeps them as its winner and loser, as the windows count
        counted(windows, event, *pair, rated=reason is None)
    return Decision(
        event.event_id,
        ladder,
        event.type,
        Outcome.RATED if reason is None else Outcome.UNRATED,
        reason,
        rules.version,
        mode,
        pair[0] if pair else None,
        pair[1] if pair else None,
        changes=tuple(changes),
        players=tuple(
            (pid, team.rank) for team, named in zip(event.teams, ids, strict=True) for pid in named
        ),
    )


def _shared_network(teams: tuple[Team, ...]) -> str | None:
    """A network token that players of two different teams both sent, or None."""
    seen: dict[str, int] = {}
    for i, team in enumerate(teams):
        for side in team.players:
            if side.network is None:
                continue
            first = seen.setdefault(side.network, i)
            if first != i:
                return side.network
    return None


def counted(
    windows: Windows,
    event: GameFinished | MatchFinished,
    winner_id: str,
    loser_id: str,
    *,
    rated: bool,
) -> None:
    """What a game adds to the window counts, its players as resolved: a ranked game is one
    of each for K by weekly volume (SPEC 2.1) and, when rated, one between them for the pair
    limit (2.4; the audit store's pair windows hold ranked games only); another mode, none."""
    if event.mode != "ranked":
        return
    ladder, ended_at = event.ladder, event.ended_at
    if rated:
        windows.add_rated_pair(ladder, winner_id, loser_id, ended_at)
    windows.add_ranked_both(ladder, winner_id, loser_id, ended_at)


def _played(player: Player, match_length: int, ended_at: datetime, now: datetime) -> None:
    """A rated game's effect on one side besides the rating."""
    player.rated_games += 1
    player.experience += match_length
    player.listed = True
    player.last_game_at = ended_at
    player.changed(now)


def _tournament(
    event: TournamentFinished, state: LadderState, rules: Ruleset, now: datetime
) -> Decision:
    def decided(
        outcome: Outcome,
        reason: Reason | None,
        effect: TournamentEffect | None = None,
        changes: tuple[LedgerChange, ...] = (),
    ) -> Decision:
        return Decision(
            event.event_id,
            event.ladder,
            event.type,
            outcome,
            reason,
            rules.version,
            changes=changes,
            tournament=effect,
        )

    key = (event.ladder, event.tournament_id)
    if key in state.settled:  # SPEC 2.1: each tournament pays out at most once
        return decided(Outcome.REFUSED, Reason.TOURNAMENT_ALREADY_SETTLED)
    state.settled.add(key)
    if not event.public:  # SPEC 2.1: private tournaments award nothing
        return decided(
            Outcome.APPLIED,
            Reason.PRIVATE_TOURNAMENT,
            TournamentEffect(event.tournament_id, public=False),
        )
    prizes = rules.prizes
    if not prizes:
        return decided(
            Outcome.APPLIED, Reason.NO_PRIZES, TournamentEffect(event.tournament_id, public=True)
        )
    paid = []
    changes = []
    for prize, pid in zip(prizes, event.podium, strict=False):
        player = state.player(event.ladder, state.resolve(event.ladder, pid))
        changes.append(_set(player, LedgerKind.PRIZE, player.rating + prize))
        player.listed = True
        player.changed(now)
        paid.append((player.player_id, prize))
    effect = TournamentEffect(event.tournament_id, public=True, prizes=tuple(paid))
    return decided(Outcome.APPLIED, None, effect, tuple(changes))


def _link(
    event: IdentityLinked, state: LadderState, rules: Ruleset, policy: Policy, now: datetime
) -> Decision:
    ladder, anon_id, account_id = event.ladder, event.anonymous_id, event.account_id
    links = state.links.setdefault(ladder, {})
    accounts = state.linked_accounts.setdefault(ladder, set())

    def decided(
        outcome: Outcome,
        reason: Reason,
        changes: tuple[LedgerChange, ...] = (),
        link: LinkEffect | None = None,
    ) -> Decision:
        return Decision(
            event.event_id,
            ladder,
            event.type,
            outcome,
            reason,
            rules.version,
            winner_id=account_id,
            loser_id=anon_id,
            changes=changes,
            link=link,
        )

    # SPEC 2.3: an anonymous id can be linked once, to one account; a second link of either
    # side is refused and recorded.
    if not policy.linking:
        return decided(Outcome.REFUSED, Reason.LINKING_DISABLED)
    if anon_id in links:
        return decided(Outcome.REFUSED, Reason.ANONYMOUS_ALREADY_LINKED)
    if account_id in accounts:
        return decided(Outcome.REFUSED, Reason.ACCOUNT_ALREADY_LINKED)
    if anon_id in accounts or account_id in links:
        return decided(Outcome.REFUSED, Reason.LINKED_ID_REUSED)
    anon = state.player(ladder, anon_id)
    account = state.player(ladder, account_id)
    adopted = account.rated_games == 0 and (anon.rated_games > 0 or anon.listed)
    changes: tuple[LedgerChange, ...] = ()
    if adopted:
        # The account has no rated games: it takes over the anonymous rating and counts.
        # Histories are never added (seed 004): nothing of the account's is summed in.
        changes = (_set(account, LedgerKind.LINK, anon.rating),)
        account.deviation, account.volatility = anon.deviation, anon.volatility
        changes = (changes[0]._replace(deviation=anon.deviation, volatility=anon.volatility),)
        account.rated_games = anon.rated_games
        account.experience = anon.experience
        account.listed = anon.listed or account.listed
        account.last_game_at = anon.last_game_at
        account.boosted_points = max(account.boosted_points, anon.boosted_points)
        account.changed(now)
    anon.linked_to = account_id
    anon.listed = False
    anon.boosted_points = 0 if adopted else anon.boosted_points
    anon.changed(now)
    links[anon_id] = account_id
    accounts.add(account_id)
    reason = Reason.ADOPTED if adopted else Reason.ACCOUNT_KEPT
    return decided(Outcome.APPLIED, reason, changes, LinkEffect(anon_id, account_id, adopted))


def _player_updated(
    event: PlayerUpdated, state: LadderState, rules: Ruleset, now: datetime
) -> Decision:
    player = state.player(event.ladder, state.resolve(event.ladder, event.player_id))
    player.email_verified = event.email_verified
    player.display_name_chosen = event.display_name_chosen
    player.changed(now)
    return Decision(
        event.event_id,
        event.ladder,
        event.type,
        Outcome.APPLIED,
        None,
        rules.version,
        winner_id=player.player_id,
    )


def _set(
    player: Player,
    kind: LedgerKind,
    after: float,
    k: float | None = None,
    expected: float | None = None,
) -> LedgerChange:
    change = LedgerChange(
        player.player_id, kind, player.rating, after, after - player.rating, k, expected
    )
    player.rating = after
    return change


def _rated(player: Player, change: SideChange) -> LedgerChange:
    """A rated game's ledger row for one side, its new rating (and deviation, volatility)
    set on the player."""
    row = LedgerChange(
        player.player_id,
        LedgerKind.GAME,
        player.rating,
        change.after,
        change.after - player.rating,
        change.k,
        change.expected,
        change.deviation,
        change.volatility,
    )
    player.rating = change.after
    if change.deviation is not None:
        player.deviation = change.deviation
        player.volatility = change.volatility
    return row


def _state(player: Player, recent_ranked_games: int, ended_at: datetime) -> PlayerState:
    return PlayerState(
        player.rating,
        player.rated_games,
        player.experience,
        recent_ranked_games,
        player.deviation,
        player.volatility,
        idle_days(player.last_game_at, ended_at),
    )


# -- the boards a player belongs on (SPEC 4) ------------------------------------------------


def on_rating_board(player: Player) -> bool:
    """Every rated player, until linked to an account (the account carries on) or banned."""
    return player.listed and not player.linked_to and not player.banned


def on_public_board(player: Player, rules: Ruleset, policy: Policy) -> bool:
    """On the public list: on the rating board and eligible under the ruleset (SPEC 2.2:
    fibs lists verified e-mail, chosen display name and experience >= 20)."""
    return policy.public_board and on_rating_board(player) and rules.public_eligible(player)
