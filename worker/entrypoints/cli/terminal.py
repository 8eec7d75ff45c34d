"""Text for an operator's terminal: ids from payloads cannot repaint it.

An ``event_id`` of ``"\\x1b[2J...ALL CLEAR"`` would clear the screen of whoever lists the
dead letters. Every character that is not printable (control characters, bidi controls,
separators, lone surrogates) is shown as its escape, so the text reads as what it is.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.ladders import Config, LadderConfig

EXIT_FAILED = 1  # the command could not do what it was asked
EXIT_USAGE = 2  # asked wrongly (a bad argument, an unknown ladder)


class Refused(Exception):
    """A request that cannot be done as asked: ``ladder: <message>`` and the exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def configured_ladder(config: Config, name: str) -> LadderConfig:
    """The ladder named ``name``, or a refusal naming the ladders that are configured."""
    ladder = config.ladder(name)
    if ladder is None:
        known = ", ".join(sorted(config.ladders))
        raise Refused(f"no ladder named {name!r} (configured: {known})")
    return ladder


def plural(count: int, noun: str) -> str:
    """``1 dead letter``, ``2 dead letters``, ``0 mismatches``."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}{'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def error(message: str) -> None:
    """One line on stderr, as every ``ladder`` refusal is written."""
    print(f"ladder: {message}", file=sys.stderr)


def safe(value: object) -> str:
    """``value`` as text, with every non-printable character written as an escape."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
