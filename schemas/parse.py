"""Turn a raw queue payload into a validated event, or an :class:`InvalidEvent`.

The Structs of :mod:`schemas.events` decide: a payload is an event when it decodes into one of
them. The worker's way in, :func:`parse_event`, decodes well-formed JSON with msgspec
directly; a payload that does not decode so is read again step by step (size, UTF-8, JSON,
object, ``type``, missing fields, then the Struct's own check), to name the first thing that
is wrong as one of :data:`schemas.REASONS` and a detail that starts with the field's path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import Any, Final, get_args, get_origin

import msgspec

from schemas import oversized
from schemas.errors import InvalidEvent
from schemas.events import (
    ALREADY_IN_GAME,
    EVENT_MODELS,
    FORBIDDEN_CHARACTERS,
    SELF_PLAY,
    SHAPE_FIELDS,
    Event,
    GameFinished,
    bare_type,
    decode_hook,
    enumeration,
    shape_missing,
    struct_fields,
)

DEFAULT_MAX_BYTES = 65536
DEFAULT_MAX_FUTURE = timedelta(minutes=5)
_LABEL_MAX = 128
# Every JSON string, escapes and all: what is left of valid JSON is its structure, where each
# colon follows a key.
_STRINGS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# With more objects and arrays than this (so possibly deeper), a payload is read step by step.
# The largest team game has 230 (its object, the teams array, 64 teams each with an array of
# players, 100 players).
_MAX_CONTAINERS: Final = 256
# A game's shape field sent as null (no shape: refused) is read step by step as this, a value
# its type refuses too, so that it is reported in field order, as null.
_NULL_STAND_IN: Final = 0
_NOT_SENT: Final = (object(),) * len(SHAPE_FIELDS)  # what obj.get gives for a key not sent
_DECODER: Final = msgspec.json.Decoder(Event, dec_hook=decode_hook)


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
    return parse_event_and_object(raw, now=now, max_bytes=max_bytes, max_future=max_future)[0]


def parse_event_and_object(
    raw: str | bytes,
    *,
    now: datetime,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_future: timedelta = DEFAULT_MAX_FUTURE,
) -> tuple[Event, dict[str, Any]]:
    """:func:`parse_event`, and the JSON object the payload is (unknown fields and all, as
    ``json.loads`` reads it), for a reader of more than the event, such as its signature."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("parse_event: `now` must be timezone-aware")
    if isinstance(raw, str) and (refused := oversized.refusal(raw, max_bytes)) is not None:
        raise refused  # the inbox's stand-in for an event it would not take whole
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
        if len(text) <= max_bytes and len(text.encode("utf-8")) <= max_bytes:
            obj = msgspec.json.decode(text)
            if type(obj) is dict and _plain(obj, text):
                event: Event = _DECODER.decode(text)
                if (event.ended_at is None or event.ended_at <= now + max_future) and not (
                    type(event) is GameFinished and _null_shape(obj)
                ):
                    return event, obj
    except (msgspec.MsgspecError, ValueError, TypeError, RecursionError):
        pass
    return _step_by_step(raw, now, max_bytes, max_future)


def _step_by_step(
    raw: object, now: datetime, max_bytes: int, max_future: timedelta
) -> tuple[Event, dict[str, Any]]:
    """The event and its object, or the InvalidEvent naming the first thing wrong."""
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
    missing = _missing(obj, model)
    if missing is not None:
        raise invalid("missing_field", f"{missing}: field required")
    if model is GameFinished:
        sent = [name for name in (*SHAPE_FIELDS, "result") if name in obj]
        missing = shape_missing(sent, obj.get("result"))
        if missing is not None:
            raise invalid("missing_field", missing)
    ordered = _in_field_order(obj, model)
    # A shape field sent as null stands in as a value its type refuses: reported in field order.
    nulls = [n for n in SHAPE_FIELDS if model is GameFinished and n in obj and obj[n] is None]
    ordered.update(dict.fromkeys(nulls, _NULL_STAND_IN))
    try:
        event: Event = msgspec.convert(ordered, model, dec_hook=decode_hook)
    except msgspec.ValidationError as exc:
        reason, detail = _describe(str(exc), model)
        null = next((n for n in nulls if detail.startswith(f"{n}: ")), None)
        if null is not None:
            reason, detail = (
                "invalid_field",
                f"{null}: expected `{_json_type(model, null)}`, got `null`",
            )
        raise invalid(reason, detail) from None
    except RecursionError:
        raise invalid("invalid_json", "payload is nested too deeply") from None
    ended_at = event.ended_at
    if ended_at is not None and ended_at > now + max_future:
        raise invalid(
            "ended_at_in_future",
            f"ended_at: {ended_at.isoformat()} is more than {max_future} after "
            f"now ({now.isoformat()})",
        )
    return event, obj


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


def _plain(obj: dict[str, Any], text: str) -> bool:
    """No key repeated in any object (msgspec keeps the last one; the contract refuses the
    payload) and no deep nesting: the text has as many keys, each a string before a colon, as
    the decoded objects hold entries."""
    if "\\" in text:  # a string may hold an escaped quote
        structure = _STRINGS.sub("", text)
    else:  # every quote opens or closes a string: strings are the odd pieces
        structure = "".join(text.split('"')[0::2])
    if structure.count("{") + structure.count("[") > _MAX_CONTAINERS:
        return False
    return structure.count(":") == _entries(obj)


def _entries(value: dict[str, Any] | list[Any]) -> int:
    count = len(value) if type(value) is dict else 0
    for item in value.values() if type(value) is dict else value:
        if type(item) is dict or type(item) is list:
            count += _entries(item)
    return count


def _null_shape(obj: dict[str, Any]) -> bool:
    """Whether a game's object sends a shape field as null (no shape: refused)."""
    return None in map(obj.get, SHAPE_FIELDS, _NOT_SENT)


def _json_type(model: type[msgspec.Struct], name: str) -> str:
    """The JSON type a Struct or list field of ``model`` takes: ``object`` or ``array``."""
    (kind,) = (bare_type(f.type)[0] for f in struct_fields(model) if f.name == name)
    return "array" if get_origin(kind) is list else "object"


@cache
def _nested(model: type[msgspec.Struct]) -> dict[str, tuple[type[msgspec.Struct], bool]]:
    """The fields of ``model`` whose type is a Struct or a list of Structs (or either or
    None): the Struct, and whether it is a list's. Worked out once per model (an invalid
    event's path is walked field by field: 1,000 invalid events asked it 6,000 times),
    and only read."""
    out = {}
    for field in struct_fields(model):
        kind = bare_type(field.type)[0]
        listed = get_origin(kind) is list
        if listed:
            kind = bare_type(get_args(kind)[0])[0]
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            out[field.name] = (kind, listed)
    return out


def _items(value: Any, listed: bool, path: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects a nested field's value holds (the value, or a list's items), with their
    paths."""
    if not listed:
        return [(path, value)] if isinstance(value, dict) else []
    if not isinstance(value, list):
        return []
    return [(f"{path}[{i}]", item) for i, item in enumerate(value) if isinstance(item, dict)]


def _missing(obj: dict[str, Any], model: type[msgspec.Struct], prefix: str = "") -> str | None:
    """The path of the first required field ``obj`` lacks, in the Struct's field order."""
    nested = _nested(model)
    for field in struct_fields(model):
        if field.name not in obj:
            if field.required:
                return prefix + field.name
        elif field.name in nested:
            inner, listed = nested[field.name]
            for path, item in _items(obj[field.name], listed, prefix + field.name):
                found = _missing(item, inner, f"{path}.")
                if found is not None:
                    return found
    return None


def _in_field_order(obj: dict[str, Any], model: type[msgspec.Struct]) -> dict[str, Any]:
    """``obj`` with the Struct's fields first, in its order: msgspec checks fields in the
    order it reads them, and the first field found wrong is the one reported."""
    nested = _nested(model)
    names = [f.name for f in struct_fields(model)]
    out = {"type": obj["type"]} if "type" in obj else {}
    for name in names:
        if name in obj:
            value = obj[name]
            if name in nested:
                inner, listed = nested[name]
                if not listed and isinstance(value, dict):
                    value = _in_field_order(value, inner)
                elif listed and isinstance(value, list):
                    value = [
                        _in_field_order(item, inner) if isinstance(item, dict) else item
                        for item in value
                    ]
            out[name] = value
    for name, value in obj.items():
        if name not in out:
            out[name] = value
    return out


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


def _describe(message: str, model: type[msgspec.Struct]) -> tuple[str, str]:
    """A msgspec validation error (``what - at `$.path```) as (reason, detail); a value sent
    is never echoed (it could be anything, a raw address too), except the id of a player
    sent twice, a valid id named so the sender can find it."""
    if message.endswith(f" {ALREADY_IN_GAME}"):  # a game's own check: no "at", an id shown
        return "self_play", message
    head, at, where = message.rpartition(" - at `$")  # a value shown may hold the marker
    what, path = (head, where.removesuffix("`").removeprefix(".")) if at else (message, "")
    field, colon, rest = what.partition(": ")
    if colon and " " not in field and "`" not in field:  # a Struct's own check: "name: what"
        path, what = f"{path}.{field}" if path else field, rest
    elif what.startswith("Object missing required field `"):
        name = what.removeprefix("Object missing required field `").removesuffix("`")
        return (
            "missing_field",
            f"{path}.{name}: field required" if path else f"{name}: field required",
        )
    what = what[:1].lower() + what[1:]
    if what.startswith("field required"):  # a game's own check: a shape not whole
        return "missing_field", f"{path}: {what}"
    if what.startswith("invalid enum value"):
        values = enumeration(model, path) or ()
        what = "must be one of " + ", ".join(repr(value) for value in values)
    path = path or "payload"
    if what == SELF_PLAY:
        return "self_play", f"{path}: {what}"
    top = re.split(r"[.\[]", path, maxsplit=1)[0]
    if top == "cube":
        return "invalid_cube", "cube: must be a JSON integer, one of 1, 2, 4, 8, 16, 32, 64"
    if top == "ended_at":
        return "invalid_timestamp", f"{path}: {what}"
    return "invalid_field", f"{path}: {what}"
