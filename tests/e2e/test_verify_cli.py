"""``ladder verify`` from the command line: summary, JSON, exit status 0 / 1 / 2."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import update

import worker
from tests.e2e.test_cli import event
from worker.store.engines import make_engine
from worker.store.tables import rating_changes


def test_verify_agrees_then_reports_a_ledger_row_altered_by_hand(cli, database_url):
    """Exit 0 when everything agrees; 1 with the altered row named by event id and player."""
    cli.publish_with_redis_cli(
        [event("v-1", "alice", "bob"), event("v-2", "bob", "carol"), event("v-3", "alice", "carol")]
    )
    cli.ladder("worker", "--burst")
    shown = cli.ladder("verify")
    assert "gammon42: 3 events, 6 ledger rows" in shown.stdout
    assert shown.stdout.rstrip().endswith("everything agrees")
    report = cli.ladder_json("verify", "gammon42")
    assert {"events": 3, "mismatches": []} == {
        k: report["ladders"]["gammon42"][k] for k in ("events", "mismatches")
    }

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            update(rating_changes)
            .where(rating_changes.c.event_id == "v-2", rating_changes.c.player_id == "carol")
            .values(delta=-99.0)
        )
    engine.dispose()
    failed = cli.ladder("verify", "gammon42", "--json", check=False)
    assert 1 == failed.returncode
    (mismatch,) = json.loads(failed.stdout)["ladders"]["gammon42"]["mismatches"]
    assert {"event_id": "v-2", "player_id": "carol", "field": "delta", "stored": -99.0} == {
        k: mismatch[k] for k in ("event_id", "player_id", "field", "stored")
    }
    text = cli.ladder("verify", "gammon42", check=False)
    assert 1 == text.returncode and "event v-2 player carol delta: stored -99.0" in text.stdout


def test_verify_of_an_unknown_ladder_exits_2_with_one_line(cli):
    """A bad argument is a clear one-line error, exit status 2, no traceback."""
    result = cli.ladder("verify", "chess", check=False)
    assert 2 == result.returncode
    assert "no ladder named 'chess'" in result.stderr and "Traceback" not in result.stderr


def test_verify_names_the_ladders_the_configuration_does_not_and_fails_unless_told(cli, tmp_path):
    """Rows of a ladder missing from LADDER_CONFIG are not "everything agrees": verify names
    the ladder and exits 1; ``--skip-unconfigured`` names it and passes."""
    shipped = (Path(worker.__file__).parent / "defaults" / "ladders.toml").read_text()
    gammon42 = shipped[shipped.index("[ladders.gammon42]") : shipped.index("[ladders.fibs]")]
    wider = tmp_path / "ladders.toml"
    wider.write_text(shipped + "\n" + gammon42.replace("ladders.gammon42", "ladders.eu"))
    cli.env["LADDER_CONFIG"] = str(wider)
    cli.publish_with_redis_cli([{**event("u-1", "alice", "bob"), "ladder": "eu"}])
    cli.ladder("worker", "--burst")
    del cli.env["LADDER_CONFIG"]
    failed = cli.ladder("verify", check=False)
    assert 1 == failed.returncode
    assert failed.stdout.rstrip().endswith(
        "everything agrees; not verified: 1 ladder the configuration does not name (eu)"
    )
    assert "verified 3 ladders, 0 events" in failed.stdout
    (line,) = failed.stderr.strip().splitlines()[-1:]
    assert "the database holds rows of eu, which the configuration" in line
    assert "--skip-unconfigured" in line
    passed = cli.ladder("verify", "--skip-unconfigured", "--json")
    assert ["eu"] == json.loads(passed.stdout)["unconfigured"]


def test_verify_since_an_instant_and_its_refusals(cli):
    """``--since`` with a ladder: the events processed since then, the instant on its line;
    a date before the first event is the whole verify; a bad or future time is one line,
    exit 2."""
    between = _two_games_then_one(cli, "s")
    part = cli.ladder_json("verify", "gammon42", "--since", between.isoformat())
    assert {"events": 1, "mismatches": [], "since": between.isoformat()} == {
        k: part["ladders"]["gammon42"][k] for k in ("events", "mismatches", "since")
    }
    whole = cli.ladder_json("verify", "gammon42", "--since", "2001-01-01")
    assert {"events": 3, "mismatches": [], "since": None} == {
        k: whole["ladders"]["gammon42"][k] for k in ("events", "mismatches", "since")
    }
    now = cli.ladder("verify", "gammon42", "--since", "2001-01-01T00:00:00+00:00")
    assert now.stdout.rstrip().endswith("everything agrees")
    for bad, said in (
        ("yesterday", "--since 'yesterday' is not a time"),
        ("2999-01-01", "--since 2999-01-01 is in the future"),
    ):
        result = cli.ladder("verify", "gammon42", "--since", bad, check=False)
        assert 2 == result.returncode, bad
        assert said in result.stderr and "Traceback" not in result.stderr
        assert 1 == len(result.stderr.strip().splitlines())
    helped = " ".join(cli.ladder("verify", "--help").stdout.split())
    assert "--since TIME" in helped and "trusted as recorded" in helped


def test_verify_since_counts_the_part_it_replays_in_its_progress(cli):
    """docs/operations.md, verifying since an instant: 'in time proportional to that part
    rather than to the whole log'. Its progress counts the events of that part, not the
    whole log's; a void since the instant of a game before it starts the part at that game,
    and the count with it."""
    between = _two_games_then_one(cli, "p")
    part = cli.ladder("verify", "gammon42", "--since", between.isoformat())
    assert "verify gammon42: 1/1 events" in part.stderr
    cli.ladder("void", "gammon42", "p-2", "--reason", "test")
    moved = cli.ladder("verify", "gammon42", "--since", between.isoformat())
    assert "verify gammon42: 2/2 events" in moved.stderr, moved.stderr
    whole = cli.ladder("verify", "gammon42")
    assert "verify gammon42: 3/3 events" in whole.stderr


def _two_games_then_one(cli: Any, prefix: str) -> datetime:
    """Games ``<prefix>-1`` and ``-2``, each in a burst of its own, then ``-3``: the instant
    between the second and the third is returned."""
    for played in (event(f"{prefix}-1", "alice", "bob"), event(f"{prefix}-2", "bob", "carol")):
        cli.publish_with_redis_cli([played])
        cli.ladder("worker", "--burst")
    between = datetime.now(UTC)
    time.sleep(0.05)
    cli.publish_with_redis_cli([event(f"{prefix}-3", "carol", "alice")])
    cli.ladder("worker", "--burst")
    return between
