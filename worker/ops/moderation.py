"""Moderation: ban and unban players, adjust a rating, each an entry in the log; what every
action shares (its report, its ledger rows, re-projecting its players). Voids are
``worker.ops.void``.

Every action commits in one PostgreSQL transaction that first locks every player of the ladder
in the workers' order (``store.lock_ladder``): a worker's batch of that ladder waits for the
action to commit (and then scores on the corrected state), never fails for it; other ladders go
on. A void's long replay runs before the lock; under it only the events stored since are run
(``LogReplay``), or the whole log again if the log changed in a way that cannot be added.

A void is exact (``engine.replay``): the ladder's whole log is replayed with every voided
event skipped (bans, adjustments, season resets and imports where they fall; an imported
player with what the import gave them), and each player whose
state differs from the stored one gets the state it should have and a ``correction`` ledger
row (before, after, delta); each event whose outcome changes (the voided games, and later ones
whose pair limit or K window the void changed) gets an ``event_effects`` row. The audit rows
themselves are never rewritten. After the commit the changed players are re-projected and the
kept receipts the void changed are rewritten (``worker.ops.void.refresh_after``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisError
from sqlalchemy.engine import Connection, Engine

from engine import LedgerChange, LedgerKind, Player
from engine.replay import Rerating
from worker.boards.projection import as_row
from worker.boards.receipts import ReceiptSink
from worker.ladders import LadderConfig
from worker.ops import reconcile
from worker.ops.rebuild import reproject
from worker.store import moderation as store


class ModerationError(ValueError):
    """Asked wrongly: an unknown event or player, a bad delta (exit 2)."""


@dataclass
class Report:
    """What an action did (or, with ``dry_run``, would do)."""

    ladder: str
    kind: str
    action: int | None = None  # the action's number in the log; None when nothing changed
    dry_run: bool = False
    done: list[str] = field(default_factory=list)  # event ids voided
    refused: dict[str, str] = field(default_factory=dict)  # event id -> why nothing was done
    players: list[tuple[str, float, float]] = field(default_factory=list)  # id, now, after
    effects: int = 0  # events whose outcome changed
    replayed: int = 0  # events replayed
    seconds: float = 0.0
    note: str = ""
    receipts: int = 0  # receipt keys rewritten to what the void made of their event
    warning: str = ""  # one line: what could not be done after the commit

    def as_json(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder,
            "kind": self.kind,
            "action": self.action,
            "dry_run": self.dry_run,
            "voided": self.done,
            "refused": self.refused,
            "players": [
                {"player_id": p, "rating": now, "rating_after": after}
                for p, now, after in self.players
            ],
            "outcomes_changed": self.effects,
            "events_replayed": self.replayed,
            "seconds": round(self.seconds, 3),
            "note": self.note,
            "receipts_refreshed": self.receipts,
            "warning": self.warning or None,
        }


def event_ref(action: int) -> str:
    """The ``event_id`` of an action's ledger rows."""
    return f"moderation:{action}"


def ledger_rows(
    ladder: str, action: int, changes: Iterable[LedgerChange], at: datetime
) -> list[dict[str, Any]]:
    return [
        {
            "ladder": ladder,
            "player_id": c.player_id,
            "event_id": event_ref(action),
            "kind": str(c.kind),
            "rating_before": c.before,
            "rating_after": c.after,
            "delta": c.delta,
            "k": None,
            "expected": None,
            "deviation": c.deviation,
            "volatility": c.volatility,
            "games": None,  # a receipt's columns: a correction belongs to no game's receipt
            "provisional": None,
            "at": at,
        }
        for c in changes
    ]


def record_rerating(
    conn: Connection,
    ladder: str,
    kind: str,
    reason: str,
    by: str,
    at: datetime,
    details: dict[str, Any],
    done: Rerating,
) -> int:
    """Record an action that re-rated the ladder (a void, a rerate), after the last event
    stored: the action, the outcomes it changed, its correction rows and the corrected
    players; returns its number."""
    after_seq = store.last_seq(conn, ladder)
    action = store.NewAction(ladder, kind, reason, by, at, after_seq, details=details)
    number = store.add_action(conn, action)
    effects = [(e.event_id, e.outcome, e.reason) for e in done.effects]
    store.add_effects(conn, action.ladder, number, effects)
    store.write(conn, ledger_rows(action.ladder, number, done.changes, action.at), done.players)
    return number


def project(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    changed: Iterable[Player],
    report: Report,
    *,
    again: bool = True,
    receipts: ReceiptSink | None = None,
) -> bool:
    """Write the changed players to the boards after the commit; False when Redis failed.

    PostgreSQL is the record and the action has committed (SPEC 5: Redis is a projection
    that can always be rebuilt), so a Redis that cannot be reached leaves one warning line
    naming the repair, and the action stays marked not projected: the next worker batch of
    the ladder heals Redis (``reconcile.heal``); ``again``: running the same command again
    does too. Once written, the action's mark is taken off, and an earlier action's that
    failed so is healed here (with ``receipts``, a void's kept receipts too)."""
    if redis is None:
        return True
    ladder = ladder_config.name
    try:
        reproject(redis, ladder_config, [as_row(p) for p in changed])
        if report.action is not None:
            with engine.begin() as conn:
                store.mark_projected(conn, ladder, report.action, datetime.now(UTC), only=True)
        reconcile.heal(engine, redis, ladder_config, receipts=receipts)
    except RedisError as exc:
        report.warning = (
            f"the {report.kind} is committed, but Redis failed ({type(exc).__name__}) and the "
            f"boards still show the ladder before it: run `ladder reconcile {ladder} --repair`"
            + (" (or this command again)" if again else "")
        )
        return False
    return True


def _target(conn: Any, ladder: str, player_id: str) -> Player:
    player = store.load_one(conn, ladder, player_id)
    if player is None:
        raise ModerationError(f"no player {player_id!r} on {ladder}")
    return player


def ban(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    player_id: str,
    reason: str,
    by: str,
    *,
    banned: bool = True,
    dry_run: bool = False,
    receipts: ReceiptSink | None = None,
) -> Report:
    """Ban (or unban) a player: off every board (or back on), later games unrated."""
    started = time.perf_counter()
    ladder = ladder_config.name
    kind = "ban" if banned else "unban"
    report = Report(ladder, kind, dry_run=dry_run)
    with engine.begin() as conn:
        store.lock_ladder(conn, ladder)
        now = datetime.now(UTC)
        player = _target(conn, ladder, player_id)
        report.players = [(player_id, player.rating, player.rating)]
        if player.banned == banned:
            report.note = f"{player_id} is {'already' if banned else 'not'} banned; nothing changed"
        elif not dry_run:
            player.banned = banned
            player.changed(now)
            after = store.last_seq(conn, ladder)
            report.action = store.add_action(
                conn,
                store.NewAction(
                    ladder=ladder,
                    kind=kind,
                    reason=reason,
                    by=by,
                    at=now,
                    after_seq=after,
                    target=player_id,
                ),
            )
            store.set_banned(conn, player)
    if not dry_run:  # already done: written again, which heals a Redis write that failed
        project(engine, redis, ladder_config, [player], report, receipts=receipts)
    report.seconds = time.perf_counter() - started
    return report


def adjust(
    engine: Engine,
    redis: Redis | RedisCluster | None,
    ladder_config: LadderConfig,
    player_id: str,
    delta: float,
    reason: str,
    by: str,
    *,
    dry_run: bool = False,
    receipts: ReceiptSink | None = None,
) -> Report:
    """A manual rating change: one ``adjustment`` ledger row."""
    started = time.perf_counter()
    ladder = ladder_config.name
    report = Report(ladder, "adjust", dry_run=dry_run)
    if delta == 0:
        raise ModerationError("--delta must not be 0")
    with engine.begin() as conn:
        store.lock_ladder(conn, ladder)
        now = datetime.now(UTC)
        player = _target(conn, ladder, player_id)
        before = player.rating
        report.players = [(player_id, before, before + delta)]
        if not dry_run:
            player.rating = before + delta
            player.changed(now)
            after = store.last_seq(conn, ladder)
            number = store.add_action(
                conn,
                store.NewAction(
                    ladder=ladder,
                    kind="adjust",
                    reason=reason,
                    by=by,
                    at=now,
                    after_seq=after,
                    target=player_id,
                    details={"delta": delta},
                ),
            )
            change = LedgerChange(player_id, LedgerKind.ADJUSTMENT, before, player.rating, delta)
            store.write(conn, ledger_rows(ladder, number, [change], now), [player])
            report.action = number
    if report.action is not None:
        # not `again`: run again, an adjustment adjusts again
        project(engine, redis, ladder_config, [player], report, again=False, receipts=receipts)
    report.seconds = time.perf_counter() - started
    return report
