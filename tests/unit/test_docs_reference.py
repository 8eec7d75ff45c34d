"""The reference pages name everything a user can type or set (issue 34: "every command,
environment variable and HTTP route is in the docs (a test compares the CLI's `--help` tree,
the settings and the OpenAPI paths with the reference pages)").

Each failure names the missing thing and the page it belongs on, one line each, so that a new
command, option, variable or route is documented in the same change that adds it.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from scripts import mkdocs_hooks
from worker.entrypoints.cli.main import _parser

ROOT = Path(__file__).resolve().parents[2]
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
CONFIG_PAGE = ROOT / "docs" / "configuration.md"
API_PAGE = ROOT / "docs" / "reference" / "http-api.md"
SETTINGS = ROOT / "worker" / "settings.py"
# An environment variable's name as settings.py writes it (in env.get calls and messages).
ENV_NAME = re.compile(r"\b(?:LADDER_[A-Z0-9_]*[A-Z0-9]|(?:LEADERBOARD_)?REDIS_URL|DATABASE_URL)\b")
HEADING = re.compile(r"^#{2,4} `(ladder(?: [a-z][a-z-]*)*)`\s*$", re.MULTILINE)


def commands() -> dict[str, list[str]]:
    """Every command path of the ``ladder`` parser (``ladder``, ``ladder dlq list``, ...) with
    the option strings and positional names its ``--help`` shows."""
    found: dict[str, list[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        shown: list[str] = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
                continue
            long = [o for o in action.option_strings if o.startswith("--")]
            shown.extend(long[:1] if long else action.option_strings[:1])
        found[path] = shown

    walk(_parser(), "ladder")
    return found


def sections(page: str) -> dict[str, str]:
    """A page's command sections: the text under each heading ``## `ladder ...` `` up to the
    next heading of a command."""
    marks = list(HEADING.finditer(page))
    return {
        mark[1]: page[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(page)]
        for i, mark in enumerate(marks)
    }


def missing_commands(tree: dict[str, list[str]], page: str) -> list[str]:
    documented = sections(page)
    where = CLI_PAGE.relative_to(ROOT)
    problems = []
    for command, options in tree.items():
        if command not in documented:
            problems.append(f"{where}: command `{command}` has no heading '### `{command}`'")
            continue
        for option in options:
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", documented[command]):
                problems.append(f"{where}: `{command}` does not describe {option}")
    for command in documented:
        if command not in tree:
            problems.append(f"{where}: `{command}` is documented but is no command")
    return problems


def environment_variables() -> set[str]:
    """The variables worker/settings.py reads, every string in worker/ that is a variable's
    whole name (``env.get("LADDER_API_TOKENS")`` on a mapping as well as ``os.environ``), and
    the Redis ACL users' password variables."""
    from worker import redis_acl

    names = set(ENV_NAME.findall(SETTINGS.read_text(encoding="utf-8")))
    for path in (ROOT / "worker").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and ENV_NAME.fullmatch(node.value)
            ):
                names.add(node.value)
    return names | set(redis_acl.PASSWORD_ENV.values())


def missing_variables(names: set[str], page: str) -> list[str]:
    where = CONFIG_PAGE.relative_to(ROOT)
    return [
        f"{where}: environment variable {name} is not documented (a table row with `{name}`)"
        for name in sorted(names)
        if f"`{name}`" not in page
    ]


def missing_operations(document: dict, page: str, rendered: str) -> list[str]:
    where = API_PAGE.relative_to(ROOT)
    problems = []
    if "<!-- ladder:openapi -->" not in page:
        problems.append(f"{where}: the marker <!-- ladder:openapi --> is missing")
    for method, path, operation in mkdocs_hooks.operations(document):
        name = f"{method} {path}"
        if f"### `{name}`" not in rendered:
            problems.append(f"{where}: {name} is not rendered")
        if not operation.get("summary"):
            problems.append(f"{where}: {name} has no summary in the OpenAPI document")
        for param in operation.get("parameters", []):
            for field, prop, _ in mkdocs_hooks.parameter_rows(document, param):
                if not mkdocs_hooks.resolve(document, prop).get("description") and not prop.get(
                    "description"
                ):
                    problems.append(
                        f"{where}: parameter {field} of {name} has no description in the "
                        "OpenAPI document"
                    )
    return problems


def test_every_command_and_option_is_on_the_cli_page():
    """Every command and subcommand of the `--help` tree has its section on
    docs/reference/cli.md, naming each option it shows; no section names a command that
    does not exist."""
    problems = missing_commands(commands(), CLI_PAGE.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_every_environment_variable_is_on_the_configuration_page():
    """Every variable the settings (and any other module of worker/) read is on
    docs/configuration.md."""
    names = environment_variables()
    assert {"REDIS_URL", "DATABASE_URL", "LADDER_BATCH_SIZE"} <= names  # the scan finds them
    problems = missing_variables(names, CONFIG_PAGE.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_every_http_route_is_on_the_api_page():
    """Every operation of the OpenAPI document is rendered on docs/reference/http-api.md,
    with a summary and a description of each parameter."""
    document = mkdocs_hooks.openapi_document()
    assert len(document["paths"]) >= 10
    rendered = mkdocs_hooks.expand(API_PAGE.read_text(encoding="utf-8"))
    problems = missing_operations(document, API_PAGE.read_text(encoding="utf-8"), rendered)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("tree", "page", "expected"),
    [
        (
            {"ladder dev env": ["--json"]},
            "### `ladder dev`\n",
            "docs/reference/cli.md: command `ladder dev env` has no heading '### `ladder dev env`'",
        ),
        (
            {"ladder serve": ["--host", "--insecure"]},
            "### `ladder serve`\n| `--host HOST` | the address |\n",
            "docs/reference/cli.md: `ladder serve` does not describe --insecure",
        ),
        (
            {"ladder serve": ["--host"]},
            "### `ladder serve`\n--host\n### `ladder gone`\n",
            "docs/reference/cli.md: `ladder gone` is documented but is no command",
        ),
    ],
)
def test_a_missing_command_or_option_is_named_with_its_page(tree, page, expected):
    """The failure says which name is missing from which page."""
    assert expected in missing_commands(tree, page)


def test_a_missing_variable_is_named_with_its_page():
    """An undocumented variable is named, with the page it belongs on."""
    assert [
        "docs/configuration.md: environment variable LADDER_DATA_DIR is not documented "
        "(a table row with `LADDER_DATA_DIR`)"
    ] == missing_variables({"LADDER_DATA_DIR", "REDIS_URL"}, "| `REDIS_URL` | ... |")


def test_an_unrendered_route_is_named_with_its_page():
    """A route missing from the rendered page, or without a summary, is named."""
    document = {
        "paths": {"/tokens": {"get": {"operationId": "tokens", "parameters": []}}},
        "components": {},
    }
    assert [
        "docs/reference/http-api.md: GET /tokens is not rendered",
        "docs/reference/http-api.md: GET /tokens has no summary in the OpenAPI document",
    ] == missing_operations(document, "<!-- ladder:openapi -->", "")
