"""What the commands print reads as English: one of a thing is singular, a dry run says what
it would do, and a ban that moves no rating does not print a change."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import drain, publish
from tests.events import game
from tests.integration.test_moderation import ladder
from tests.integration.test_operations import ladder as operations
from worker.ladders import default_config_path, parse_config

# "1 games" (a progress line's "1/1 events" is a fraction, and reads as one)
SINGULAR_AS_PLURAL = re.compile(r"(?<![/\d,])1 (?:events|games|players|ladders|lines|rows)\b")
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)


def said(capsys: Any) -> str:
    found = capsys.readouterr()
    return found.out + found.err


def test_one_of_a_thing_is_singular_in_what_the_commands_print(runtime, capsys):
    """``1 game``, ``1 player``, ``1 event``, never ``1 games``: a void of one game, a
    rebuild of a ladder of one player's board."""
    publish(runtime, game("amy", "bob", event_id="g1", ended_at=T0))
    drain(runtime)
    capsys.readouterr()
    assert 0 == ladder(runtime, "void", "gammon42", "g1", "--reason", "test")
    text = said(capsys)
    assert "voided 1 game on gammon42: 2 players changed" in text
    assert [] == SINGULAR_AS_PLURAL.findall(text)
    assert 0 == operations(runtime, "rebuild", "fibs")
    assert "0 players" in said(capsys)


def test_a_noun_that_ends_in_a_hiss_takes_es():
    """``0 mismatches``, ``2 matches``; ``1 mismatch``."""
    from worker.entrypoints.cli.terminal import plural

    assert ["0 mismatches", "1 mismatch", "2 games"] == [
        plural(0, "mismatch"),
        plural(1, "mismatch"),
        plural(2, "game"),
    ]


def test_a_dry_run_ban_says_what_it_would_do_and_no_rating_change(runtime, capsys):
    """A dry run says "would ban"; a ban moves no rating, so its line shows the rating once
    with "(rating unchanged)", not ``1573 -> 1573``."""
    publish(runtime, game("cheat", "bob", event_id="g1", ended_at=T0))
    drain(runtime)
    capsys.readouterr()
    assert 0 == ladder(runtime, "ban", "gammon42", "cheat", "--reason", "x", "--dry-run")
    text = said(capsys)
    assert "ladder: would ban on gammon42" in text
    assert "would have" not in text
    (row,) = [line for line in text.splitlines() if line.strip().startswith("cheat")]
    assert row.split() == ["cheat", "1516", "(rating", "unchanged)"]


def test_a_season_reset_is_spelled_toward_start_by_either_hand_and_shown_so(runtime, capsys):
    """``--reset toward-start`` (the command line's habit) and ``reset = "toward-start"`` in
    TOML are both ``toward_start``, the name the configuration and every output show."""
    shipped = default_config_path().read_text(encoding="utf-8")
    config = parse_config(shipped + '\n[ladders.fibs.season]\nreset = "toward-start"\n')
    assert "toward_start" == config.ladders["fibs"].season.reset
    publish(runtime, game("amy", "bob", event_id="g1", ended_at=T0))
    drain(runtime)
    capsys.readouterr()
    argv = ["season", "close", "gammon42", "--name", "S1", "--reset", "toward-start"]
    assert 0 == operations(runtime, *argv)
    text = said(capsys)
    assert "reset toward_start" in text and "toward-start" not in text
