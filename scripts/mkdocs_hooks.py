"""MkDocs hooks (``mkdocs.yml``: ``hooks:``): the generated parts of the documentation.

A page asks for a generated part with a marker on a line of its own:

- ``<!-- ladder:schema NAME -->``: the JSON Schema file ``schemas/json/NAME.json``, its
  fields as a table, its examples and the file itself;
- ``<!-- ladder:openapi -->``: every operation of the HTTP API, from the OpenAPI document
  ``ladder serve`` publishes at ``/openapi.json``;
- ``<!-- ladder:bench -->``: the goals of the latest ``make bench`` run, read from the
  newest of the dated files in ``bench/results/`` when the checkout has one;
- ``<!-- ladder:growth -->``: the growth section's figures (``bench.growth``), read from
  ``bench/results/growth.json``: each size of the audit log, each figure and its ratio to the
  empty log's;
- ``<!-- ladder:include PATH -->``: a file of the repository (its first heading dropped). A
  page read where the site is not built (on a code host) may hold the file's text itself,
  between that marker and ``<!-- ladder:end -->``: the build renders the file in its place,
  and ``python -m scripts.mkdocs_hooks PAGE...`` writes the text anew (a test says when it is
  stale).

Nothing here is a copy kept by hand: each part is rendered from its source at build time.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas" / "json"
BENCH_RESULTS = ROOT / "bench" / "results"
GROWTH_RESULTS = ROOT / "bench" / "results" / "growth.json"
GROWTH_MEASURES = (  # bench.growth.MEASURES, without importing the benchmark
    ("1w", "ingest, 1 worker (events/s)"),
    ("2w", "ingest, 2 workers (events/s)"),
    ("duplicate_check_ms", "duplicate check (ms a batch)"),
    ("window_reads_ms", "window reads (ms a batch)"),
    ("export_seconds", "export (s)"),
    ("verify_since_seconds", "verify --since (s)"),
)
MARKER = re.compile(
    r"^<!-- ladder:(?P<kind>[a-z]+)(?: (?P<arg>\S+))? -->$"
    r"(?P<held>\n(?:.*\n)*?<!-- ladder:end -->$)?",  # an include's text, held in the page
    re.MULTILINE,
)
END = "<!-- ladder:end -->"
LONG_PATTERN = 80  # longer patterns are named, not printed
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


class MarkerError(ValueError):
    """A page names a generated part that does not exist."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs' hook: each marker of the page replaced by its part."""
    return expand(markdown)


def expand(markdown: str) -> str:
    def part(match: re.Match[str]) -> str:
        kind, arg = match["kind"], match["arg"]
        if kind == "schema" and arg:
            return schema_page(arg)
        if kind == "openapi":
            return openapi_page(openapi_document())
        if kind == "bench":
            return bench_page()
        if kind == "include" and arg:
            return include(arg)
        if kind == "growth":
            return growth_page(GROWTH_RESULTS)
        raise MarkerError(f"unknown marker {match[0]!r}")

    return MARKER.sub(part, markdown)


# -- JSON Schema files ---------------------------------------------------------------------


def schema_page(name: str) -> str:
    path = SCHEMAS / f"{name}.json"
    if not path.is_file():
        raise MarkerError(f"no schema file {path.relative_to(ROOT)}")
    schema = json.loads(path.read_text(encoding="utf-8"))
    description = schema.get("description", "")
    rules = schema.get("x-ladder-rule")
    if rules:  # the description ends with the same rules, listed below instead
        description = description.split("Rules the schema cannot express:")[0].strip()
    lines = [f"`{schema.get('$id', name)}`: {description}", ""]
    if rules:
        lines += ["Rules the schema cannot express (`x-ladder-rule`):", ""]
        lines += [f"- {rule}" for rule in (rules if isinstance(rules, list) else [rules])]
        lines.append("")
    lines += ["| field | type | required | description |", "|---|---|---|---|"]
    for field, prop, required in fields(schema):
        lines.append(
            f"| `{field}` | {type_of(schema, prop)} | {'yes' if required else ''} "
            f"| {cell(describe(schema, prop))} |"
        )
    examples = schema.get("examples", [])
    if examples:
        lines += ["", "An example:" if len(examples) == 1 else "Examples:"]
    for example in examples:
        lines += ["", "```json", json.dumps(example, indent=1), "```"]
    lines += [
        "",
        f'??? note "The file: `schemas/json/{name}.json`"',
        "",
        "    ```json",
        *("    " + line for line in json.dumps(schema, indent=2).splitlines()),
        "    ```",
        "",
    ]
    return "\n".join(lines)


def fields(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """Every property, nested objects' as ``outer.inner``, in the file's order."""
    found: list[tuple[str, dict[str, Any], bool]] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        node = resolve(schema, node)
        required = set(node.get("required", ()))
        for name, prop in node.get("properties", {}).items():
            found.append((prefix + name, prop, name in required))
            inner = object_of(schema, prop)
            if inner is not None:
                walk(inner, f"{prefix}{name}{'[]' if is_array(schema, prop) else ''}.")

    walk(schema, "")
    return found


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise MarkerError(f"cannot resolve {ref!r}")
        target: Any = schema
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def variants(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    node = resolve(schema, node)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return [resolve(schema, v) for v in node[key]]
    return [node]


def object_of(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any] | None:
    for variant in variants(schema, prop):
        if variant.get("type") == "array" and isinstance(variant.get("items"), dict):
            variant = resolve(schema, variant["items"])
        if "properties" in variant:
            return variant
    return None


def is_array(schema: dict[str, Any], prop: dict[str, Any]) -> bool:
    return any(v.get("type") == "array" for v in variants(schema, prop))


def type_of(schema: dict[str, Any], prop: dict[str, Any]) -> str:
    names = []
    for variant in variants(schema, prop):
        if "const" in variant:
            names.append(f"`{json.dumps(variant['const'])}`")
        elif "enum" in variant:
            names.append(" \\| ".join(f"`{json.dumps(v)}`" for v in variant["enum"]))
        else:
            kind = variant.get("type", "any")
            if kind == "array" and isinstance(variant.get("items"), dict):
                kind = f"array of {type_of(schema, variant['items'])}"
            if "format" in variant:
                kind = f"{kind} ({variant['format']})"
            names.append(str(kind))
    return " or ".join(names)


def describe(schema: dict[str, Any], prop: dict[str, Any]) -> str:
    node = resolve(schema, prop)
    parts = [node.get("description") or prop.get("description") or ""]
    bounds = []
    for variant in variants(schema, prop):
        for key, word in (
            ("minLength", "length ≥"),
            ("maxLength", "length ≤"),
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
            ("minItems", "items ≥"),
            ("maxItems", "items ≤"),
            ("pattern", "pattern"),
        ):
            if key in variant:
                value = variant[key]
                if key != "pattern":
                    bounds.append(f"{word} {value}")
                elif len(value) <= LONG_PATTERN:
                    bounds.append(f"{word} `{value}`")
                else:  # the id and date-time patterns
                    bounds.append("a long pattern: see the schema")
    if bounds:
        parts.append("(" + ", ".join(bounds) + ")")
    text = " ".join(p for p in parts if p)
    if "default" in node:
        stop = "" if not text or text.endswith(".") else "."
        text = f"{text}{stop} Default `{json.dumps(node['default'])}`.".strip()
    return text


def cell(text: str) -> str:
    """``text`` for a table cell: one line; outside code spans ``<`` and ``|`` escaped (a
    ``season:<name>`` is no HTML tag); a code span holding ``|`` written as HTML, since a
    table cannot hold a bare ``|`` and a code span would show the backslash of ``\\|``."""
    parts = text.replace("\n", " ").split("`")
    for i, part in enumerate(parts):
        if i % 2 == 0:
            parts[i] = part.replace("<", "&lt;").replace("|", "\\|")
        elif "|" in part:
            parts[i] = "<code>" + html.escape(part).replace("|", "&#124;") + "</code>"
        else:
            parts[i] = f"`{part}`"
    if len(parts) % 2 == 0:  # an unpaired backtick: keep the text as it was
        return text.replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")
    return "".join(parts)


# -- the OpenAPI document ------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The document ``ladder serve`` publishes, built from the app itself (no server is
    contacted: the clients are never used to build it)."""
    import redis
    import sqlalchemy
    from fastapi import FastAPI

    from worker.access import Access
    from worker.entrypoints.api.app import create_app, document
    from worker.ladders import load_config

    app = create_app(
        load_config(None),
        redis.Redis.from_url("redis://127.0.0.1:1/0"),
        sqlalchemy.create_engine("postgresql+psycopg://127.0.0.1:1/unused"),
        access=Access(),
    )
    inner: Any = app
    while not isinstance(inner, FastAPI):  # the app inside its ASGI wrappers
        inner = inner.app
    return document(inner)


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def openapi_page(document: dict[str, Any]) -> str:
    info = document["info"]
    lines = [
        f"OpenAPI {document['openapi']}, *{info['title']}* version {info['version']}: "
        f"{info.get('description', '')}",
        "",
    ]
    for method, path, operation in operations(document):
        lines += [f"### `{method} {path}`", ""]
        lines += [f"**{operation.get('summary', '')}** (operation `{operation['operationId']}`)"]
        if operation.get("description"):
            lines += ["", operation["description"]]
        lines.append("")
        params = operation.get("parameters", [])
        if params:
            lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
            for param in params:
                for name, prop, required in parameter_rows(document, param):
                    lines.append(
                        f"| `{name}` | {param['in']} | {type_of(document, prop)} "
                        f"| {'yes' if required else ''} | {cell(describe(document, prop))} |"
                    )
            lines.append("")
            for param in params:  # an object's rule (cursor and offset: at most one)
                rows = parameter_rows(document, param)
                if rows[0][0] != param["name"] and param.get("description"):
                    names = ", ".join(f"`{name}`" for name, _, _ in rows)
                    lines += [f"{names}: {param['description']}.", ""]
        lines += ["| status | meaning | body |", "|---|---|---|"]
        for status, response in operation.get("responses", {}).items():
            lines.append(
                f"| {status} | {cell(response.get('description', ''))} "
                f"| {cell(body_of(response))} |"
            )
        lines.append("")
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["## Schemas", ""]
        for name, schema in schemas.items():
            lines += [f"### {name}", ""]
            if schema.get("description"):
                lines += [schema["description"], ""]
            if schema.get("properties"):
                lines += ["| field | type | required | description |", "|---|---|---|---|"]
                needed = set(schema.get("required", ()))
                for field, prop in schema["properties"].items():
                    lines.append(
                        f"| `{field}` | {type_of(document, prop)} "
                        f"| {'yes' if field in needed else ''} "
                        f"| {cell(describe(document, prop))} |"
                    )
                lines.append("")
    return "\n".join(lines)


def parameter_rows(
    document: dict[str, Any], param: dict[str, Any]
) -> list[tuple[str, dict[str, Any], bool]]:
    """A parameter's rows: one, or one per property of an exploded object parameter."""
    schema = resolve(document, param.get("schema", {}))
    if param.get("explode", param["in"] == "query") and "properties" in schema:
        return [(name, prop, False) for name, prop in schema["properties"].items()]
    described = {"description": param["description"]} if "description" in param else {}
    return [(param["name"], {**param.get("schema", {}), **described}, param.get("required", False))]


def body_of(response: dict[str, Any]) -> str:
    kinds = []
    for media, content in response.get("content", {}).items():
        schema = content.get("schema", {})
        names = re.findall(r"#/components/schemas/([A-Za-z0-9_]+)", json.dumps(schema))
        what = ", ".join(dict.fromkeys(names))
        if what and schema.get("type") == "array":
            what = f"array of {what}"
        kinds.append(f"`{media}`" + (f": {what}" if what else ""))
    return "; ".join(kinds)


# -- the benchmark -------------------------------------------------------------------------


def bench_page(results: Path = BENCH_RESULTS) -> str:
    """The latest run's section of ``bench/README.md`` (``bench.page``), under the page's own
    heading."""
    if str(ROOT) not in sys.path:  # the benchmark is the repository's, not an installed package
        sys.path.insert(0, str(ROOT))
    from bench import page

    run = page.newest_run(results)
    if run is None:
        return (
            '!!! note "No benchmark results in this checkout"\n\n'
            "    `make bench` writes a dated file in `bench/results/`; build the docs after it to "
            "see its goals here. Results of earlier runs, with their dates and machines, are "
            "in `bench/results/notes/` (listed in `bench/README.md`)."
        )
    return "\n".join(page.latest_run(run, linked=False)[2:]) + "\n"


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def growth_page(path: Path) -> str:
    """The growth section's table: one row per log size, each figure with its ratio."""
    if not path.is_file():
        return (
            '!!! note "No growth results in this checkout"\n\n'
            "    `python -m bench.growth` (or `make bench`) measures them; "
            "`bench/results/growth.json` keeps the recorded run."
        )
    result = json.loads(path.read_text(encoding="utf-8"))
    growth = result["growth"]
    lines = [
        f"Recorded run (`{_shown(path)}`): {result.get('date', '?')}, load average "
        f"at start {result.get('load_average_at_start', '?')}. Each figure, and in brackets its "
        "ratio to the empty log's (1.0: as fast; for a time, empty / now); the drains' ratio is "
        "to the same drains on an empty database, run in alternation with them.",
        "",
        "| events in the log | "
        + " | ".join(label for _, label in GROWTH_MEASURES)
        + " | load average |",
        "|---" * (len(GROWTH_MEASURES) + 2) + "|",
    ]
    for size, entry in sorted(growth["sizes"].items(), key=lambda kv: int(kv[0])):
        cells = []
        for key, _ in GROWTH_MEASURES:
            found = entry[key]
            value = found["events_per_second"] if isinstance(found, dict) else found
            ratio = entry.get("ratios", {}).get(key)
            cells.append(f"{value:,} ({ratio:.2f}x)" if ratio is not None else f"{value:,}")
        load = entry.get("load_average") or ["?"]
        lines.append(f"| {int(size):,} | " + " | ".join(cells) + f" | {load[0]} |")
    met = "met" if growth.get("goal_met") else "**not met**"
    lines += [
        "",
        f"Goal, ingest at {growth.get('goal_size', 0):,} events >= 0.9x: {met}. The machine is "
        "shared: a ratio far from 1.0 with the load average moving beside it is the load; "
        "`bench/results/notes/` has the runs and what they show.",
    ]
    return "\n".join(lines) + "\n"


# -- other files of the repository ---------------------------------------------------------


def include(relative: str) -> str:
    path = (ROOT / relative).resolve()
    if ROOT not in path.parents or not path.is_file():
        raise MarkerError(f"cannot include {relative!r}")
    text = path.read_text(encoding="utf-8")
    return re.sub(r"\A# .*\n+", "", text)


def held(markdown: str) -> str:
    """The page with each included text it holds (marker, text, ``END``) written anew."""

    def again(match: re.Match[str]) -> str:
        if match["kind"] != "include" or not match["held"]:
            return match[0]
        return f"{match[0].splitlines()[0]}\n{include(match['arg']).rstrip()}\n{END}"

    return MARKER.sub(again, markdown)


if __name__ == "__main__":  # python -m scripts.mkdocs_hooks docs/security.md ...
    import sys

    for name in sys.argv[1:]:
        page = Path(name)
        page.write_text(held(page.read_text(encoding="utf-8")), encoding="utf-8")
