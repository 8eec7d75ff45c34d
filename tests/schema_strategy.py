"""Hypothesis strategies for the values a JSON Schema file allows.

Covers the keywords the published event schemas use (type, const, enum, anyOf, $ref, pattern,
format, lengths, ranges, items, uniqueItems, required/properties, extra properties, and an
object's oneOf of branches that each add required fields, narrow a property and forbid others
with ``not: {anyOf: [{required: [...]}]}``: the shapes of a game). The ``date-time`` format is
drawn both from its pattern and from real instants in any offset, so generated events are not
all in the far future. Arrays are drawn with at most 6 items (a team game of 64 teams of 64
players would be slow to draw and is over its 100 players anyway, a rule of its own).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
MAX_ITEMS = 6


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return _node(schema, schema)


def _node(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        return _node(root["$defs"][name], root)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node and "type" not in node:
        return st.one_of([_node(option, root) for option in node["anyOf"]])
    kind = node.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(node.get("minimum", -(2**53)), node.get("maximum", 2**53))
    if kind == "number":
        low = node.get("exclusiveMinimum", node.get("minimum"))
        high = node.get("exclusiveMaximum", node.get("maximum"))
        floats = st.floats(
            low,
            high,
            exclude_min="exclusiveMinimum" in node,
            exclude_max="exclusiveMaximum" in node,
            allow_nan=False,
            allow_infinity=False,
        )
        return floats | _integers_within(node)  # JSON has one number type: 1 is a weight
    if kind == "string":
        return _string(node)
    if kind == "array":
        items = _node(node.get("items", {}), root)
        return st.lists(
            items,
            min_size=node.get("minItems", 0),
            max_size=min(node.get("maxItems", 5), MAX_ITEMS),
            unique_by=(lambda v: json.dumps(v, sort_keys=True))
            if node.get("uniqueItems")
            else None,
        )
    if kind == "object":
        return _object(node, root)
    raise NotImplementedError(f"schema node not covered: {sorted(node)}")


def _integers_within(node: dict[str, Any]) -> st.SearchStrategy[int]:
    """The integers in a number node's range (none when it holds none)."""
    first, last = -(2**53), 2**53
    if "minimum" in node:
        first = math.ceil(node["minimum"])
    if "exclusiveMinimum" in node:
        first = math.floor(node["exclusiveMinimum"]) + 1
    if "maximum" in node:
        last = math.floor(node["maximum"])
    if "exclusiveMaximum" in node:
        last = math.ceil(node["exclusiveMaximum"]) - 1
    return st.integers(first, last) if first <= last else st.nothing()


def _string(node: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = node.get("minLength", 0), node.get("maxLength", 64)
    if "anyOf" in node:  # the ip field: one of two formats
        formats = [option["format"] for option in node["anyOf"]]
        return st.one_of([_format(f) for f in formats]).filter(lambda s: low <= len(s) <= high)
    if node.get("format") == "date-time":
        return (_instants() | st.from_regex(node["pattern"], fullmatch=True)).filter(_real_date)
    if "pattern" in node:
        return st.from_regex(node["pattern"], fullmatch=True).filter(
            lambda s: low <= len(s) <= high
        )
    return st.text(min_size=low, max_size=high)


def _format(name: str) -> st.SearchStrategy[str]:
    return st.ip_addresses(v=4 if name == "ipv4" else 6).map(str)


def _instants() -> st.SearchStrategy[str]:
    offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
    moments = st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
    )
    return st.builds(lambda m, tz: m.astimezone(tz).isoformat(), moments, offsets)


def _real_date(text: str) -> bool:
    """format date-time: the day exists in its month (a pattern cannot say Feb 30)."""
    try:
        datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    except ValueError:
        return False
    return True


def _object(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    if "oneOf" in node:  # one branch, whose properties narrow the object's own
        base = {key: value for key, value in node.items() if key != "oneOf"}
        return st.one_of([_branch(base, branch, root) for branch in node["oneOf"]])
    return _fields(node, root, forbidden=set())


def _branch(
    base: dict[str, Any], branch: dict[str, Any], root: dict[str, Any]
) -> st.SearchStrategy[dict[str, Any]]:
    forbidden = {
        name for option in branch.get("not", {}).get("anyOf", ()) for name in option["required"]
    }
    merged = {
        **base,
        "properties": {**base.get("properties", {}), **branch.get("properties", {})},
        "required": [*base.get("required", ()), *branch.get("required", ())],
    }
    return _fields(merged, root, forbidden)


def _fields(
    node: dict[str, Any], root: dict[str, Any], forbidden: set[str]
) -> st.SearchStrategy[dict[str, Any]]:
    """The object's required properties, some of its optional ones (never a forbidden one),
    and a few extra ones of no property's name."""
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", ()))
    fixed = {name: _node(properties[name], root) for name in required}
    optional = {
        name: _node(spec, root)
        for name, spec in properties.items()
        if name not in required and name not in forbidden
    }
    extra = st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in properties), JSON_SCALARS, max_size=2
    )

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        value = draw(st.fixed_dictionaries(fixed, optional=optional))
        return {**draw(extra), **value}

    return build()
