"""Turn a raw queue payload into a validated event, or an :class:`InvalidEvent`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from schemas.errors import InvalidEvent
from schemas.events import EVENT_MODELS, FORBIDDEN_CHARACTERS, Event

DEFAULT_MAX_BYTES = 65536
DEFAULT_MAX_FUTURE = timedelta(minutes=5)
_LABEL_MAX = 128


def parse_event(
    raw: str | bytes,
    *,
    now: datetime,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_future: timedelta = DEFAULT_MAX_FUTURE,
) -> Event:
    """Validate one event payload.

    Raises :class:`InvalidEvent` (and nothing else) for every bad payload. ``now`` must be
    timezone-aware; a naive ``now`` is a programming error and raises ``ValueError``.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("parse_event: `now` must be timezone-aware")
    obj = _load(raw, max_bytes)
    if not isinstance(obj, dict):
        raise InvalidEvent("not_an_object", f"payload is a JSON {_json_kind(obj)}, not an object")
    event_id = _label(obj.get("event_id"))
    ladder = _label(obj.get("ladder"))

    def invalid(reason: str, detail: str) -> InvalidEvent:
        return InvalidEvent(reason, detail, event_id=event_id, ladder=ladder)

    if "type" not in obj:
        raise invalid("missing_field", "type: field required")
    type_ = obj["type"]
    model = EVENT_MODELS.get(type_) if isinstance(type_, str) else None
    if model is None:
        shown = _label(type_)
        raise invalid(
            "unknown_type",
            f"type: unknown event type {shown!r}" if shown else "type: unknown event type",
        )
    try:
        event = model.model_validate(obj)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise invalid(*_describe(errors)) from None
    except RecursionError:
        raise invalid("invalid_json", "payload is nested too deeply") from None

    ended_at = event.ended_at
    if ended_at is not None and ended_at > now + max_future:
        raise invalid(
            "ended_at_in_future",
            f"ended_at: {ended_at.isoformat()} is more than {max_future} after "
            f"now ({now.isoformat()})",
        )
    return event


def redact(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Return a deep copy of a raw event object without any ``ip`` key, at any depth.

    Use it before storing or logging a raw payload, so raw addresses are never kept.
    Works iteratively, so arbitrarily deep payloads are fine.
    """
    root: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(payload, root)]
    while stack:
        source, target = stack.pop()
        items = (
            ((k, v) for k, v in source.items() if k != "ip")
            if isinstance(source, Mapping)
            else enumerate(source)
        )
        for key, value in items:
            copy: Any
            if isinstance(value, Mapping):
                copy = {}
                stack.append((value, copy))
            elif isinstance(value, list | tuple):
                copy = []
                stack.append((value, copy))
            else:
                copy = value
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


# --- helpers ------------------------------------------------------------------------------


def _load(raw: object, max_bytes: int) -> object:
    if isinstance(raw, str):
        # A str never has fewer UTF-8 bytes than characters: cheap early rejection.
        if len(raw) > max_bytes:
            raise _too_large(len(raw), max_bytes, at_least=True)
        try:
            size = len(raw.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidEvent("invalid_json", "payload is not valid Unicode text") from None
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        text = raw
    elif isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > max_bytes:
            raise _too_large(len(data), max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidEvent(
                "invalid_json", f"payload is not valid UTF-8 (byte {exc.start})"
            ) from None
    else:
        raise InvalidEvent("invalid_json", f"payload must be text, not {type(raw).__name__}")
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(
            "invalid_json", f"not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise InvalidEvent("invalid_json", "payload is nested too deeply") from None
    except ValueError as exc:  # our hooks, and integers longer than Python's digit limit
        raise InvalidEvent("invalid_json", f"not valid JSON: {exc}") from None


def _too_large(size: int, limit: int, *, at_least: bool = False) -> InvalidEvent:
    qualifier = "at least " if at_least else ""
    return InvalidEvent(
        "payload_too_large", f"payload is {qualifier}{size} bytes; the limit is {limit}"
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key in an object")
    return result


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _label(value: object) -> str | None:
    """A payload string that is safe to echo in logs and DLQ metadata, or None."""
    if not isinstance(value, str) or not value.strip() or len(value) > _LABEL_MAX:
        return None
    if FORBIDDEN_CHARACTERS.search(value):
        return None
    return value


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(errors: list[ErrorDetails]) -> tuple[str, str]:
    """Pick the error to report (missing fields first) and map it to (reason, detail)."""
    missing = [e for e in errors if e["type"] == "missing"]
    error = missing[0] if missing else errors[0]
    path = _path(error["loc"]) or "payload"
    message = error["msg"].removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if error["type"] == "missing":
        return "missing_field", f"{path}: field required"
    if error["type"] == "self_play":
        return "self_play", f"{path}: {message}"
    top = error["loc"][0] if error["loc"] else None
    if top == "cube":
        return "invalid_cube", "cube: must be a JSON integer, one of 1, 2, 4, 8, 16, 32, 64"
    if top == "ended_at":
        return "invalid_timestamp", f"{path}: {message}"
    return "invalid_field", f"{path}: {message}"
