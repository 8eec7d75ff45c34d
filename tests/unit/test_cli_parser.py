"""The command line is parsed without importing the operator commands when a core command
(``worker``, ``migrate``, ``publish``, ``config``) is asked for: a burst worker's start-up
counts from process start to its first event scored."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from worker.entrypoints.cli import main


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("no subcommands")


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["worker", "--burst"], "worker"),
        (["--log-level", "DEBUG", "worker"], "worker"),
        (["--log-level", "worker", "rebuild", "gammon42"], "rebuild"),
        (["--log-level=DEBUG", "dlq", "list"], "dlq"),
        (["--help"], None),
        (["--version"], None),
        ([], None),
        (["--log-level"], None),
    ],
)
def test_the_command_word_is_the_first_word_that_is_not_an_option(argv, word) -> None:
    assert main._command_word(argv) == word


def test_the_core_commands_are_the_ones_defined_beside_the_parser() -> None:
    """CORE_COMMANDS names exactly what ``_parser(all_commands=False)`` knows, and no command
    module defines one of them (else asking for it would miss that module's parser)."""
    core = _commands(main._parser(all_commands=False))
    assert core == set(main.CORE_COMMANDS)
    sub = argparse.ArgumentParser().add_subparsers()
    for module in main.COMMAND_MODULES:  # in order: one may extend an earlier one's command
        importlib.import_module(module).register(sub)
    assert not set(sub.choices) & core
    assert _commands(main._parser()) == core | set(sub.choices)


def test_a_core_command_does_not_import_the_operator_commands() -> None:
    """Parsing ``worker --burst`` leaves the other command modules unimported; parsing an
    operator command, or ``--help``, imports them all (in a fresh interpreter)."""
    probe = (
        "import sys\n"
        "from worker.entrypoints.cli import main\n"
        "main.parser_for(sys.argv[1:]).parse_args(sys.argv[1:])\n"
        "print(sorted(m for m in main.COMMAND_MODULES if m in sys.modules))\n"
    )

    def imported(*argv: str) -> str:
        run = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
        )
        return run.stdout.strip()

    assert imported("worker", "--burst") == "[]"
    assert imported("rebuild", "gammon42") == str(sorted(main.COMMAND_MODULES))
