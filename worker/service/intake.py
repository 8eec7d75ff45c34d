"""What a batch takes in: each raw event validated, mapped to its stored form and to the
engine's event, or refused with the reason that sends it to the dead-letter queue.

An event is decoded by ``schemas.parse_event`` (the contract's Structs, SPEC 3), its
signature checked when publishers sign (``schemas.signing``), and its ladder looked up in
the configuration; the stored payload replaces each raw ``ip`` by its network token and its
digest tells a duplicate from an ``event_id`` conflict (``schemas.records``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.ladder import Event
from schemas import Event as ContractEvent
from schemas import InvalidEvent, records
from schemas.parse import parse_event_and_object
from schemas.signing import PUBLISHER, SIGNATURE, attestation_key, verify
from worker.ladders import Config


@dataclass(frozen=True)
class Valid:
    """A validated event: the raw text, its stored payload and the engine's event."""

    raw: str | bytes
    payload: dict[str, Any]
    event: Event


@dataclass(frozen=True)
class Prepared:
    """A batch's events validated (``Intake.prepare``), before it is settled: each valid
    event's stored form, each invalid one with its reason, in arrival order; ``now``: the
    time they were validated at, which the batch is then applied at."""

    now: datetime
    valid: list[Valid]
    invalid: list[tuple[str | bytes, InvalidEvent]]


class Intake:
    """Validation with the worker's settings: size limit, publisher keys, ladders."""

    def __init__(
        self,
        config: Config,
        *,
        network_key: bytes,
        max_event_bytes: int = 65536,
        publisher_secrets: dict[str, bytes] | None = None,
        publisher_ladders: dict[str, frozenset[str]] | None = None,
        require_signature: bool = False,
    ) -> None:
        self.config = config
        self.network_key = network_key
        self.max_event_bytes = max_event_bytes
        self.publisher_secrets = publisher_secrets or {}
        self.publisher_ladders = publisher_ladders or {}
        self.require_signature = require_signature

    def parse(self, raw: str | bytes, now: datetime) -> ContractEvent:
        """The event, if this worker accepts it; else InvalidEvent with the reason."""
        event, obj = parse_event_and_object(raw, now=now, max_bytes=self.max_event_bytes)
        if self.publisher_secrets or self.require_signature:
            problem = self._signature_problem(obj)
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

    def valid(self, raw: str | bytes, now: datetime) -> Valid:
        """The event's stored payload and engine event (InvalidEvent if it has none)."""
        payload = records.stored_payload(self.parse(raw, now), self.network_key)
        return Valid(raw, payload, records.engine_event(payload, records.digest(payload)))

    def prepare(self, raws: Iterable[str | bytes], now: datetime) -> Prepared:
        """A batch's events validated at ``now``, and nothing else done: no store is read or
        written (``Service.settle`` takes it, and dead-letters its invalid events)."""
        valid: list[Valid] = []
        invalid: list[tuple[str | bytes, InvalidEvent]] = []
        for raw in raws:
            try:
                valid.append(self.valid(raw, now))
            except InvalidEvent as exc:
                invalid.append((raw, _cut(exc)))
        return Prepared(now, valid, invalid)

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


def _cut(exc: InvalidEvent) -> InvalidEvent:
    """``exc`` without its traceback and the exceptions it was raised from: their frames lead
    back to ``prepare``'s, whose batch would then live until the collector finds the cycle
    (a batch validated ahead lives past a collection and waits for an older generation's;
    the worker's peak memory it cost is in bench/results/notes/2026-12-07-validation-ahead.md)."""
    exc.__traceback__ = exc.__context__ = exc.__cause__ = None
    return exc
