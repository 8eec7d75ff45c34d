"""Publish the event contracts as JSON Schema (draft 2020-12) files.

python -m schemas.export            # (re)write schemas/json/<type>.v1.json
python -m schemas.export --check    # exit 1 if the files on disk are stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from pydantic import TypeAdapter

from schemas.events import (
    DEFAULT_RESULT,
    EVENT_MODELS,
    EXAMPLES,
    GAME_SHAPES,
    IDENTIFIER_RULE,
    MAX_GAME_PLAYERS,
    SHAPE_FIELDS,
    TIMESTAMP_RULE,
    GameFinished,
    enumeration,
    schema_hook,
)
from schemas.parse import DEFAULT_MAX_BYTES
from schemas.receipt import DESCRIPTION as RECEIPT_DESCRIPTION
from schemas.receipt import EXAMPLE as RECEIPT_EXAMPLE
from schemas.receipt import Receipt

VERSION = 1
DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_URL = "https://ladder.dev/schemas/"
JSON_DIR = Path(__file__).resolve().parent / "json"

_DESCRIPTIONS = {
    "game.finished": (
        "A game ended, in exactly one of three shapes (`oneOf`): a 1v1 win (`winner`, "
        '`loser`), a 1v1 draw (`"result": "draw"` and its two `players`) or a team or '
        "free-for-all game (`teams`, each with its `rank`: 1 is first, equal ranks tie; a "
        "free-for-all player is a team of one). A ladder whose ruleset cannot rate a shape "
        "dead-letters the game as `unsupported_shape`. Publish with `RPUSH ladder:inbox "
        "'<event json>'`. Unknown extra fields are ignored. Integers must be JSON integers "
        "(no 4.0, no strings). `ended_at` must carry an offset and must not be more than 5 "
        "minutes in the future. No player is in a game twice."
    ),
    "tournament.finished": (
        "A tournament ended; a public tournament's podium (first, second, third) wins "
        "flat prizes. Unknown extra fields are ignored."
    ),
    "identity.linked": (
        "A device-generated anonymous id was linked to a signed-in account (once). "
        "Unknown extra fields are ignored."
    ),
    "player.updated": (
        "A player's profile flags changed (they decide eligibility for the public "
        "leaderboard). Unknown extra fields are ignored."
    ),
}


_SIZE_RULE = (
    f"The payload is at most {DEFAULT_MAX_BYTES} bytes of UTF-8 JSON (64 KiB), "
    "without duplicate keys, NaN or Infinity."
)
#: What the worker checks that JSON Schema cannot say, per event type (``x-ladder-rule``).
RULES: dict[str, list[str]] = {
    "game.finished": [
        _SIZE_RULE,
        "No player_id is in a game twice: winner.player_id and loser.player_id differ, so do "
        "the two players of a draw, and no player is in two teams or twice in one (else the "
        "event is self_play).",
        f"A team game has at most {MAX_GAME_PLAYERS} players, all teams together.",
        "ended_at: " + TIMESTAMP_RULE,
        "Every id: " + IDENTIFIER_RULE,
    ],
    "tournament.finished": [
        _SIZE_RULE,
        "ended_at: " + TIMESTAMP_RULE,
        "Every id: " + IDENTIFIER_RULE,
    ],
    "identity.linked": [
        _SIZE_RULE,
        "account_id differs from anonymous_id.",
        "ended_at: " + TIMESTAMP_RULE,
        "Every id: " + IDENTIFIER_RULE,
    ],
    "player.updated": [_SIZE_RULE, "ended_at: " + TIMESTAMP_RULE, "Every id: " + IDENTIFIER_RULE],
}


def file_name(event_type: str) -> str:
    return f"{event_type}.v{VERSION}.json"


def build_schema(event_type: str) -> dict[str, Any]:
    """The published schema for one event type, generated from its Struct."""
    model = EVENT_MODELS[event_type]
    (ref,), components = msgspec.json.schema_components(
        [model], schema_hook=schema_hook, ref_template="#/$defs/{name}"
    )
    name = ref["$ref"].removeprefix("#/$defs/")
    generated = _tidy(components.pop(name))
    _enums_as_written(model, generated["properties"])
    if model is GameFinished:
        _one_shape(generated)
    # The tag is a field like the others for a publisher: a string that must be the type.
    generated["properties"]["type"] = {"const": event_type, "type": "string"}
    schema: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": BASE_URL + file_name(event_type),
        "title": f"{event_type} v{VERSION}",
        "description": " ".join(
            [_DESCRIPTIONS[event_type], "Rules the schema cannot express:", *RULES[event_type]]
        ),
        "x-ladder-rule": RULES[event_type],
    }
    if components:
        schema["$defs"] = {key: _tidy(value) for key, value in sorted(components.items())}
    for key, value in generated.items():
        if key not in ("title", "description"):
            schema[key] = value
    schema["examples"] = [
        example for key, example in EXAMPLES.items() if key.split("/")[0] == event_type
    ]
    return schema


_SHAPES_SAID = {
    "win": "A 1v1 win: `winner` beat `loser`.",
    "draw": 'A 1v1 draw: `"result": "draw"` and the two `players`.',
    "teams": (
        "A team or free-for-all game: `teams`, each with its `rank` (1 is first; equal ranks "
        "tie) and its players; `result` left out (or its default, `single`)."
    ),
}


def _one_shape(generated: dict[str, Any]) -> None:
    """A game is exactly one shape (``GAME_SHAPES``): the fields it sends, none of the other
    shapes', and a ``result`` it takes (required where the default is not one). A shape field
    is never null: the worker refuses null there, as no shape."""
    properties = generated["properties"]
    for name in SHAPE_FIELDS:
        spec = properties[name]
        (kept,) = (option for option in spec.pop("anyOf") if option != {"type": "null"})
        spec.pop("default")
        properties[name] = _tidy({**kept, **spec})
    branches = []
    for shape in GAME_SHAPES:
        required = [*shape.fields] + ([] if DEFAULT_RESULT in shape.results else ["result"])
        others = [name for name in SHAPE_FIELDS if name not in shape.fields]
        branches.append(
            {
                "description": _SHAPES_SAID[shape.name],
                "not": {"anyOf": [{"required": [name]} for name in others]},
                "properties": {"result": {"enum": list(shape.results)}},
                "required": required,
                "title": shape.name,
            }
        )
    generated["oneOf"] = branches


def _enums_as_written(model: type[msgspec.Struct], properties: dict[str, Any]) -> None:
    """Each enumeration in the order the Struct's ``Literal`` lists it (msgspec sorts it)."""
    for name, spec in properties.items():
        values = enumeration(model, name)
        if values is not None and "enum" in spec:
            spec["enum"] = list(values)


def _tidy(node: Any) -> Any:
    """Each schema node's keywords in alphabetical order (the properties in field order)."""
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key in sorted(node):
        value = node[key]
        if key == "properties":
            out[key] = {name: _tidy(spec) for name, spec in value.items()}
        else:
            out[key] = _tidy(value)
    return out


RECEIPT = "receipt"


def build_receipt_schema() -> dict[str, Any]:
    """The published schema of a receipt (what the worker writes, not what it reads)."""
    generated = TypeAdapter(Receipt).json_schema(mode="serialization")
    _strip_property_titles(generated)
    schema: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": BASE_URL + file_name(RECEIPT),
        "title": f"{RECEIPT} v{VERSION}",
        "description": RECEIPT_DESCRIPTION,
    }
    for key, value in generated.items():
        if key not in ("title", "description"):
            schema[key] = value
    schema["examples"] = [RECEIPT_EXAMPLE]
    return schema


def build_all() -> dict[str, dict[str, Any]]:
    """File name → schema for every event type, and the receipt."""
    built = {file_name(t): build_schema(t) for t in EVENT_MODELS}
    built[file_name(RECEIPT)] = build_receipt_schema()
    return built


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write(directory: Path = JSON_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in build_all().items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


def stale(directory: Path = JSON_DIR) -> list[str]:
    """Names of the files that are missing or differ from a fresh export."""
    out = []
    for name, schema in build_all().items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render(schema):
            out.append(name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.export", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if files are stale")
    parser.add_argument("--dir", type=Path, default=JSON_DIR, help="output directory")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.dir)
        for name in names:
            print(f"stale: {args.dir / name}", file=sys.stderr)
        return 1 if names else 0
    for path in write(args.dir):
        print(path)
    return 0


def _strip_property_titles(node: Any) -> None:
    """Drop pydantic's auto-generated per-property titles ("Event Id"); keep the rest."""
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for prop in properties.values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        for value in node.values():
            _strip_property_titles(value)
    elif isinstance(node, list):
        for item in node:
            _strip_property_titles(item)


if __name__ == "__main__":
    raise SystemExit(main())
