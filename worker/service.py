"""The service: applies a batch of raw events, in arrival order, in one transaction.

Error tree::

    Exception
    +-- InvalidEvent            permanent: that event alone goes to the dead-letter queue
    |                           with its reason; the rest of the batch goes on
    +-- TransientError          the store or Redis is unreachable, a deadlock, a conflict:
        (OperationalError,      raised so RQ retries the whole batch with back-off; a retried
         redis ConnectionError) batch is harmless (duplicate event ids change nothing)

Steps for a batch: validate every event; in one transaction read the links, create the
missing players and lock every player in sorted key order, check the links did not move
meanwhile, drop events already applied, load the window counts, score each event in order in
memory, write audit rows, ledger rows and players; commit; then project every touched player
into Redis (version-guarded, so a late write from a slower worker never overwrites a newer
one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from engine import (
    FairPlayFacts,
    Game,
    Gammon42Rules,
    PlayerState,
    Ruleset,
    network_token,
    rate,
    verdict,
)
from schemas import (
    Event,
    GameFinished,
    IdentityLinked,
    InvalidEvent,
    PlayerRef,
    PlayerUpdated,
    TournamentFinished,
    parse_event,
)
from schemas.signing import PUBLISHER, SIGNATURE, attestation_key, verify
from worker import failpoints, store
from worker.config import Config, LadderConfig
from worker.projection import Projection
from worker.store import PlayerKey, PlayerRecord
from worker.windows import Windows

log = structlog.get_logger("ladder")

RESULT_POINTS = {"single": 1, "gammon": 2, "backgammon": 3}
# Every audit row carries every column: rows are written together (COPY, or executemany on SQLite).
AUDIT_DEFAULTS: dict[str, Any] = dict.fromkeys(
    ("mode", "winner_id", "loser_id", "cube", "coefficient", "match_length")
)
CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Outcome:
    """What happened to one event: logged, and returned to callers and tests."""

    event_id: str | None
    ladder: str | None
    outcome: str  # rated | unrated | applied | refused | duplicate | dead_lettered
    reason: str | None = None
    duration_ms: float = 0.0


@dataclass
class _Batch:
    """In-memory state of one batch transaction."""

    now: datetime
    players: dict[PlayerKey, PlayerRecord]
    seen: set[tuple[str, str]]
    links: dict[str, dict[str, str]]  # ladder -> {anonymous_id: account_id}
    linked_accounts: dict[str, set[str]]  # ladder -> accounts that have a link
    settled: set[tuple[str, str]]
    windows: Windows
    audit: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    new_links: list[dict[str, Any]] = field(default_factory=list)
    new_tournaments: list[dict[str, Any]] = field(default_factory=list)
    touched: set[PlayerKey] = field(default_factory=set)

    def resolve(self, ladder: str, player_id: str) -> str:
        return self.links.get(ladder, {}).get(player_id, player_id)

    def player(self, ladder: str, player_id: str) -> PlayerRecord:
        self.touched.add((ladder, player_id))
        return self.players[(ladder, player_id)]


class Service:
    def __init__(
        self,
        config: Config,
        engine: Engine,
        projection: Projection,
        *,
        network_key: bytes,
        max_event_bytes: int = 65536,
        publisher_secrets: dict[str, bytes] | None = None,
        publisher_ladders: dict[str, frozenset[str]] | None = None,
        require_signature: bool = False,
    ) -> None:
        self.config = config
        self.engine = engine
        self.projection = projection
        self.network_key = network_key
        self.max_event_bytes = max_event_bytes
        self.publisher_secrets = publisher_secrets or {}
        self.publisher_ladders = publisher_ladders or {}
        self.require_signature = require_signature

    # -- validation ---------------------------------------------------------------------

    def parse(self, raw: str | bytes, now: datetime) -> Event:
        event = parse_event(raw, now=now, max_bytes=self.max_event_bytes)
        if self.publisher_secrets or self.require_signature:
            # parse_event accepted it, so it is a JSON object of bounded size and depth
            problem = self._signature_problem(json.loads(raw))
            if problem is not None:
                raise InvalidEvent(
                    "bad_signature", problem, event_id=event.event_id, ladder=event.ladder
                )
        if self.config.ladder(event.ladder) is None:
            raise InvalidEvent(
                "unknown_ladder",
                f"no ladder named {event.ladder!r} is configured",
                event_id=event.event_id,
                ladder=event.ladder,
            )
        return event

    def _signature_problem(self, obj: Any) -> str | None:
        return verify(
            obj,
            self.publisher_secrets,
            required=self.require_signature,
            ladders=self.publisher_ladders,
            attestation=attestation_key(self.network_key),
        )

    def signer(self, raw: str | bytes) -> str | None:
        """The publisher whose signature on ``raw`` is acceptable, or None (best effort).

        Asked when an event is dead-lettered: the verdict is kept with the stored event, whose
        raw addresses are replaced (which breaks the publisher's signature), for its replay.
        """
        if not self.publisher_secrets or len(raw) > self.max_event_bytes:
            return None
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or obj.get(SIGNATURE) is None:
            return None
        if self._signature_problem(obj) is not None:
            return None
        publisher = obj.get(PUBLISHER)
        return publisher if isinstance(publisher, str) else None

    # -- the batch ----------------------------------------------------------------------

    def process(
        self,
        raws: Iterable[str | bytes],
        on_invalid: Callable[[str | bytes, InvalidEvent], None],
    ) -> list[Outcome]:
        started = time.perf_counter()
        now = datetime.now(UTC)
        outcomes: list[Outcome] = []
        valid: list[Event] = []
        for raw in raws:
            try:
                valid.append(self.parse(raw, now))
            except InvalidEvent as exc:
                on_invalid(raw, exc)
                outcomes.append(Outcome(exc.event_id, exc.ladder, "dead_lettered", exc.reason))
        if valid:
            applied, players = self._apply_with_retries(valid, now)
            failpoints.hit("service.after_commit")
            self.projection.write(players, self.config)
            outcomes.extend(applied)
        per_event_ms = (time.perf_counter() - started) * 1000 / max(len(outcomes), 1)
        for outcome in outcomes:
            log.info(
                "event",
                event_id=outcome.event_id,
                ladder=outcome.ladder,
                outcome=outcome.outcome,
                reason=outcome.reason,
                duration_ms=round(per_event_ms, 3),
            )
        return outcomes

    def _apply_with_retries(
        self, events: list[Event], now: datetime
    ) -> tuple[list[Outcome], list[PlayerRecord]]:
        """Conflicts between concurrent workers (deadlock, duplicate insert) are retried here."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                return self._apply(events, now)
            except (IntegrityError, _LinksMoved):
                if attempt == CONFLICT_RETRIES - 1:
                    raise
            except DBAPIError as exc:
                if not _is_conflict(exc) or attempt == CONFLICT_RETRIES - 1:
                    raise
            time.sleep(0.01 * (2**attempt))
        raise AssertionError("unreachable")

    def _apply(
        self, events: list[Event], now: datetime
    ) -> tuple[list[Outcome], list[PlayerRecord]]:
        named = self._named_players(events)
        with self.engine.begin() as conn:
            links = store.load_links(conn, named)
            keys = self._lock_set(named, links)
            players = store.claim_players(conn, self._starts(events, keys), now)
            if store.load_links(conn, named) != links:
                raise _LinksMoved()  # a link committed meanwhile: redo with the new lock set
            batch = _Batch(
                now=now,
                players=players,
                seen=store.existing_events(conn, {(e.ladder, e.event_id) for e in events}),
                links=links,
                linked_accounts={ladder: set(p.values()) for ladder, p in links.items()},
                settled=store.settled_tournaments(
                    conn,
                    {
                        (e.ladder, e.tournament_id)
                        for e in events
                        if isinstance(e, TournamentFinished)
                    },
                ),
                windows=self._load_windows(conn, events, links),
            )
            outcomes = [self._one(event, batch) for event in events]
            dirty = [p for p in batch.players.values() if p.dirty]
            store.write_batch(
                conn, batch.audit, batch.changes, dirty, batch.new_links, batch.new_tournaments
            )
            failpoints.hit("service.before_commit")
        return outcomes, [batch.players[k] for k in sorted(batch.touched)]

    # -- what a batch needs ---------------------------------------------------------------

    @staticmethod
    def _named_players(events: list[Event]) -> dict[str, set[str]]:
        named: dict[str, set[str]] = {}
        for event in events:
            ids = named.setdefault(event.ladder, set())
            if isinstance(event, GameFinished):
                ids.update((event.winner.player_id, event.loser.player_id))
            elif isinstance(event, TournamentFinished):
                ids.update(event.podium)
            elif isinstance(event, IdentityLinked):
                ids.update((event.anonymous_id, event.account_id))
            elif isinstance(event, PlayerUpdated):
                ids.add(event.player_id)
        return named

    @staticmethod
    def _lock_set(named: dict[str, set[str]], links: dict[str, dict[str, str]]) -> set[PlayerKey]:
        keys: set[PlayerKey] = set()
        for ladder, ids in named.items():
            for pid in ids:
                keys.add((ladder, pid))
                keys.add((ladder, links[ladder].get(pid, pid)))
        return keys

    def _starts(self, events: list[Event], keys: set[PlayerKey]) -> dict[PlayerKey, float]:
        first_at: dict[str, datetime] = {}
        for event in events:
            first_at.setdefault(event.ladder, _when(event))
        starts = {}
        for ladder, pid in keys:
            ladder_config = self.config.ladders[ladder]
            starts[(ladder, pid)] = ladder_config.rules_at(first_at[ladder]).start
        return starts

    def _load_windows(
        self, conn: Any, events: list[Event], links: dict[str, dict[str, str]]
    ) -> Windows:
        windows = Windows()
        games = [e for e in events if isinstance(e, GameFinished) and e.mode == "ranked"]
        by_ladder: dict[str, list[GameFinished]] = {}
        for game in games:
            by_ladder.setdefault(game.ladder, []).append(game)
        asks: list[store.WindowAsk] = []
        for ladder, ladder_games in by_ladder.items():
            ladder_config = self.config.ladders[ladder]
            hours = ladder_config.fairplay.pair_window_hours
            for game in ladder_games:
                rules = ladder_config.rules_at(game.ended_at)
                if isinstance(rules, Gammon42Rules) and rules.heavy_volume:
                    hours = max(hours, rules.heavy_window_hours)
            ids = set()
            for game in ladder_games:
                for ref in (game.winner, game.loser):
                    ids.add(links[ladder].get(ref.player_id, ref.player_id))
            since = min(g.ended_at for g in ladder_games) - timedelta(hours=hours)
            until = max(g.ended_at for g in ladder_games)
            asks.append(store.WindowAsk(ladder, sorted(ids), since, until))
        for past in store.window_games(conn, asks):
            windows.add_ranked(past.ladder, past.winner_id, past.ended_at)
            windows.add_ranked(past.ladder, past.loser_id, past.ended_at)
            if past.rated:
                windows.add_rated_pair(past.ladder, past.winner_id, past.loser_id, past.ended_at)
        return windows

    # -- one event ------------------------------------------------------------------------

    def _one(self, event: Event, batch: _Batch) -> Outcome:
        ladder_config = self.config.ladders[event.ladder]
        if (event.ladder, event.event_id) in batch.seen:
            for pid in self._named_players([event]).get(event.ladder, ()):
                batch.player(event.ladder, batch.resolve(event.ladder, pid))
            return Outcome(event.event_id, event.ladder, "duplicate")
        batch.seen.add((event.ladder, event.event_id))
        rules = ladder_config.rules_at(_when(event))
        if isinstance(event, GameFinished):
            outcome, reason, row = self._game(event, ladder_config, rules, batch)
        elif isinstance(event, TournamentFinished):
            outcome, reason, row = self._tournament(event, rules, batch)
        elif isinstance(event, IdentityLinked):
            outcome, reason, row = self._link(event, ladder_config, batch)
        else:
            outcome, reason, row = self._player_updated(event, batch)
        batch.audit.append(
            {
                **AUDIT_DEFAULTS,
                "ladder": event.ladder,
                "event_id": event.event_id,
                "type": event.type,
                "outcome": outcome,
                "reason": reason,
                "ruleset": ladder_config.ruleset,
                "ruleset_version": rules.version,
                "ended_at": getattr(event, "ended_at", None),
                "processed_at": batch.now,
                "payload": _stored_payload(event),
                **row,
            }
        )
        return Outcome(event.event_id, event.ladder, outcome, reason)

    def _network(self, ref: PlayerRef) -> str | None:
        if ref.network is not None:
            return ref.network
        if ref.ip is not None:
            return network_token(ref.ip, self.network_key)
        return None

    def _game(
        self, event: GameFinished, ladder_config: LadderConfig, rules: Ruleset, batch: _Batch
    ) -> tuple[str, str | None, dict[str, Any]]:
        ladder = event.ladder
        winner_id = batch.resolve(ladder, event.winner.player_id)
        loser_id = batch.resolve(ladder, event.loser.player_id)
        winner = batch.player(ladder, winner_id)
        loser = batch.player(ladder, loser_id)
        fairplay = ladder_config.fairplay
        row: dict[str, Any] = {
            "mode": event.mode,
            "winner_id": winner_id,
            "loser_id": loser_id,
            "cube": event.cube,
            "match_length": event.match_length,
        }
        reason: str | None
        if winner_id == loser_id:
            reason = "self_play"  # an anonymous id against the account it is linked to
        else:
            facts = FairPlayFacts(
                mode=event.mode,
                winner_is_bot=event.winner.is_bot,
                loser_is_bot=event.loser.is_bot,
                winner_network=self._network(event.winner),
                loser_network=self._network(event.loser),
                pair_rated_games=batch.windows.rated_pair_games(
                    ladder, winner_id, loser_id, event.ended_at, fairplay.pair_window_hours
                ),
            )
            found = verdict(facts, fairplay)
            reason = None if found is None else str(found)
        if reason is None:
            recent: dict[str, int] = {}
            if isinstance(rules, Gammon42Rules):
                for pid in (winner_id, loser_id):
                    recent[pid] = batch.windows.ranked_games(
                        ladder, pid, event.ended_at, rules.heavy_window_hours
                    )
            change = rate(
                rules,
                _state(winner, recent.get(winner_id, 0)),
                _state(loser, recent.get(loser_id, 0)),
                Game(cube=event.cube, match_length=event.match_length),
            )
            row["coefficient"] = change.coefficient
            for record, side in ((winner, change.winner), (loser, change.loser)):
                self._ledger(
                    batch, record, event.event_id, "game", side.after, side.k, side.expected
                )
                record.rated_games += 1
                record.experience += event.match_length
                record.listed = True
                record.last_game_at = event.ended_at
                record.changed(batch.now)
            batch.windows.add_rated_pair(ladder, winner_id, loser_id, event.ended_at)
        elif event.mode == "boosted" and ladder_config.boosted_board:
            winner.boosted_points += RESULT_POINTS[event.result] * event.cube
            winner.changed(batch.now)
        if event.mode == "ranked":
            batch.windows.add_ranked(ladder, winner_id, event.ended_at)
            batch.windows.add_ranked(ladder, loser_id, event.ended_at)
        return ("rated" if reason is None else "unrated"), reason, row

    def _tournament(
        self, event: TournamentFinished, rules: Ruleset, batch: _Batch
    ) -> tuple[str, str | None, dict[str, Any]]:
        key = (event.ladder, event.tournament_id)
        if key in batch.settled:
            return "refused", "tournament_already_settled", {}
        batch.settled.add(key)
        batch.new_tournaments.append(
            {
                "ladder": event.ladder,
                "tournament_id": event.tournament_id,
                "event_id": event.event_id,
                "public": event.public,
                "settled_at": batch.now,
            }
        )
        if not event.public:
            return "applied", "private_tournament", {}
        prizes = rules.prizes if isinstance(rules, Gammon42Rules) else ()
        if not prizes:
            return "applied", "no_prizes", {}
        for prize, pid in zip(prizes, event.podium, strict=False):
            record = batch.player(event.ladder, batch.resolve(event.ladder, pid))
            self._ledger(batch, record, event.event_id, "prize", record.rating + prize, None, None)
            record.listed = True
            record.changed(batch.now)
        return "applied", None, {}

    def _link(
        self, event: IdentityLinked, ladder_config: LadderConfig, batch: _Batch
    ) -> tuple[str, str | None, dict[str, Any]]:
        ladder, anon_id, account_id = event.ladder, event.anonymous_id, event.account_id
        links = batch.links.setdefault(ladder, {})
        accounts = batch.linked_accounts.setdefault(ladder, set())
        row = {"winner_id": account_id, "loser_id": anon_id}
        if not ladder_config.linking:
            return "refused", "linking_disabled", row
        if anon_id in links:
            return "refused", "anonymous_already_linked", row
        if account_id in accounts:
            return "refused", "account_already_linked", row
        if anon_id in accounts or account_id in links:
            return "refused", "linked_id_reused", row
        anon = batch.player(ladder, anon_id)
        account = batch.player(ladder, account_id)
        adopted = account.rated_games == 0 and (anon.rated_games > 0 or anon.listed)
        if adopted:
            # The account has no rated games: it takes over the anonymous rating and counts.
            # Histories are never added (seed 004): nothing of the account's is summed in.
            self._ledger(batch, account, event.event_id, "link", anon.rating, None, None)
            account.rated_games = anon.rated_games
            account.experience = anon.experience
            account.listed = anon.listed or account.listed
            account.last_game_at = anon.last_game_at
            account.boosted_points = max(account.boosted_points, anon.boosted_points)
            account.changed(batch.now)
        anon.linked_to = account_id
        anon.listed = False
        anon.boosted_points = 0 if adopted else anon.boosted_points
        anon.changed(batch.now)
        links[anon_id] = account_id
        accounts.add(account_id)
        batch.new_links.append(
            {
                "ladder": ladder,
                "anonymous_id": anon_id,
                "account_id": account_id,
                "event_id": event.event_id,
                "adopted": adopted,
                "linked_at": batch.now,
            }
        )
        return "applied", "adopted" if adopted else "account_kept", row

    def _player_updated(
        self, event: PlayerUpdated, batch: _Batch
    ) -> tuple[str, str | None, dict[str, Any]]:
        record = batch.player(event.ladder, batch.resolve(event.ladder, event.player_id))
        record.email_verified = event.email_verified
        record.display_name_chosen = event.display_name_chosen
        record.changed(batch.now)
        return "applied", None, {"winner_id": record.player_id}

    @staticmethod
    def _ledger(
        batch: _Batch,
        record: PlayerRecord,
        event_id: str,
        kind: str,
        after: float,
        k: float | None,
        expected: float | None,
    ) -> None:
        batch.changes.append(
            {
                "ladder": record.ladder,
                "player_id": record.player_id,
                "event_id": event_id,
                "kind": kind,
                "rating_before": record.rating,
                "rating_after": after,
                "delta": after - record.rating,
                "k": k,
                "expected": expected,
                "at": batch.now,
            }
        )
        record.rating = after


class _LinksMoved(Exception):
    """A link was committed between reading links and locking players."""


def _state(record: PlayerRecord, recent_ranked_games: int) -> PlayerState:
    return PlayerState(
        rating=record.rating,
        rated_games=record.rated_games,
        experience=record.experience,
        recent_ranked_games=recent_ranked_games,
    )


def _when(event: Event) -> datetime:
    ended_at = getattr(event, "ended_at", None)
    return ended_at if ended_at is not None else datetime.now(UTC)


def _stored_payload(event: Event) -> dict[str, Any]:
    """The normalised event as stored: raw IP addresses are dropped, never written."""
    data: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    for side in ("winner", "loser"):
        if isinstance(data.get(side), dict):
            data[side].pop("ip", None)
    return data


def _is_conflict(exc: DBAPIError) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return code in {"40001", "40P01", "23505"}
