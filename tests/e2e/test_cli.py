"""The walking skeleton as an operator sees it: redis-cli in, ladder commands out."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.events import iso

NOW = datetime.now(UTC) - timedelta(seconds=5)


def event(event_id: str, winner: str, loser: str, **extra) -> dict:
    return {
        "type": "game.finished",
        "event_id": event_id,
        "ladder": "gammon42",
        "ended_at": iso(NOW),
        "mode": "ranked",
        "winner": {"player_id": winner},
        "loser": {"player_id": loser},
        **extra,
    }


def test_redis_cli_rpush_then_a_burst_worker_puts_both_players_on_the_leaderboard(cli):
    """SPEC 3: a server publishes with one plain Redis command; the seed's +16/-16 follows."""
    body = json.dumps(event("g-000123", "alice", "bob"))
    assert "1" == cli.redis_cli("RPUSH", "ladder:inbox", body).strip()
    cli.ladder("worker", "--burst")
    top = cli.ladder_json("top", "gammon42", "--limit", "5")
    assert [
        {"player_id": "alice", "rank": 1, "rating": 1516.0},
        {"player_id": "bob", "rank": 2, "rating": 1484.0},
    ] == [{k: e[k] for k in ("player_id", "rank", "rating")} for e in top]
    assert ["alice", "bob"] == cli.redis_cli(
        "ZREVRANGE", "ladder:{gammon42}:rating", "0", "-1"
    ).split()


def test_a_cube_3_event_lands_in_the_dead_letter_queue_with_a_reason(cli):
    """SPEC 3: cube 3 is invalid: dead-lettered with a machine-readable reason; the worker goes on."""
    cli.publish_with_redis_cli(
        [event("bad-cube", "alice", "bob", cube=3), event("ok", "carol", "dave")]
    )
    assert 0 == cli.ladder("worker", "--burst").returncode
    letters = cli.ladder_json("dlq", "list")
    assert [("bad-cube", "invalid_cube")] == [(d["event_id"], d["reason"]) for d in letters]
    assert 2 == len(cli.ladder_json("top", "gammon42"))


def test_a_payload_without_an_event_id_is_listed_with_a_null_event_id(cli):
    """ladder dlq list --json: event_id is null where the payload had none."""
    cli.publish_with_redis_cli(["this is not json"])
    cli.ladder("worker", "--burst")
    assert [{"event_id": None, "reason": "invalid_json"}] == [
        {k: d[k] for k in ("event_id", "reason")} for d in cli.ladder_json("dlq", "list")
    ]


def test_the_worker_logs_one_json_line_per_batch_with_its_counts(cli):
    """At INFO one JSON line per batch, its events counted by outcome and by ladder, outcome
    and reason, with its duration; no line per event (issue 32: per-batch, not per-event,
    overhead)."""
    cli.publish_with_redis_cli([event("g-1", "a", "b"), event("g-1", "a", "b")])
    result = cli.ladder("worker", "--burst")
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [] == [line for line in lines if line.get("event") == "event"]
    (batch,) = [line for line in lines if line.get("event") == "batch"]
    assert (2, {"rated": 1, "duplicate": 1}) == (batch["events"], batch["outcomes"])
    assert sorted(
        [
            {"ladder": "gammon42", "outcome": "rated", "reason": None, "events": 1},
            {"ladder": "gammon42", "outcome": "duplicate", "reason": None, "events": 1},
        ],
        key=str,
    ) == sorted(batch["counts"], key=str)
    assert isinstance(batch["duration_ms"], float) and "info" == batch["level"]


def test_the_worker_logs_each_event_at_debug(cli):
    """--log-level DEBUG: each event's line too, with event_id, ladder, outcome and duration."""
    cli.publish_with_redis_cli([event("g-1", "a", "b"), event("g-1", "a", "b")])
    result = cli.ladder("--log-level", "DEBUG", "worker", "--burst")
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    events = [line for line in lines if line.get("event") == "event"]
    assert [("g-1", "gammon42", "rated"), ("g-1", "gammon42", "duplicate")] == [
        (e["event_id"], e["ladder"], e["outcome"]) for e in events
    ]
    assert all(isinstance(e["duration_ms"], float) and "debug" == e["level"] for e in events)


def test_migrate_is_idempotent(cli):
    """ladder migrate twice leaves the schema as it was and exits 0."""
    assert 0 == cli.ladder("migrate").returncode


def test_config_show_path_prints_the_file_in_use_as_its_last_line(cli):
    """With LADDER_CONFIG unset, the shipped default file is in use."""
    out = cli.ladder("config", "show", "--path").stdout.strip().splitlines()
    assert out[-1].endswith("worker/defaults/ladders.toml")
    assert "gammon42" in json.loads("\n".join(out[:-1]))


def test_config_show_prints_every_setting_of_every_ladder(cli, tmp_path):
    """Issue 36: `config show` shows the whole effective configuration, `[board] active_days`
    and every other ladder setting: each table the file may hold, with what is in force."""
    from worker.ladders import BoardConfig, LadderConfig, SeasonConfig, default_config_path

    text = default_config_path().read_text(encoding="utf-8")
    text = text.replace(
        "[ladders.fibs.fairplay]",
        "[ladders.fibs.board]\nactive_days = 30\n\n"
        '[ladders.fibs.season]\nreset = "toward_start"\nfraction = 0.25\n\n'
        "[ladders.fibs.fairplay]",
        1,
    )
    path = tmp_path / "ladders.toml"
    path.write_text(text, encoding="utf-8")
    cli.env["LADDER_CONFIG"] = str(path)
    shown = json.loads(cli.ladder("config", "show").stdout)
    fibs = shown["fibs"]
    assert {"active_days": 30} == fibs["board"]
    assert {"reset": "toward_start", "fraction": 0.25} == fibs["season"]
    assert {"active_days": None} == shown["gammon42"]["board"]
    for ladder in shown.values():
        assert set(LadderConfig.model_fields) - {"name"} == set(ladder)
        assert set(SeasonConfig.model_fields) == set(ladder["season"])
        assert set(BoardConfig.model_fields) == set(ladder["board"])
    assert 3 == shown["gammon42"]["fairplay"]["pair_limit_games"]
    assert 1200 == shown["gammon42"]["versions"][-1]["divisor"]


def test_a_broken_config_file_stops_the_worker_with_line_and_field(cli, tmp_path):
    """A broken config file is refused at start-up with a message naming the line and the field."""
    path = tmp_path / "ladders.toml"
    path.write_text(
        '[ladders.x]\nruleset = "fibs"\n[[ladders.x.versions]]\nversion = "1"\neffective_from = 2026-01-01T00:00:00Z\ndivisor = "wide"\n'
    )
    cli.env["LADDER_CONFIG"] = str(path)
    result = cli.ladder("worker", "--burst", check=False)
    assert 2 == result.returncode
    assert "line 6" in result.stderr and "divisor" in result.stderr


def test_ladder_publish_reads_json_lines_from_standard_input(cli, tmp_path):
    """ladder publish - pushes each line onto the inbox exactly as RPUSH would."""
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(event(f"p-{i}", "a", f"o{i}")) for i in range(3)) + "\n")
    cli.ladder("publish", str(path))
    assert "3" == cli.redis_cli("LLEN", "ladder:inbox").strip()


def test_without_a_network_key_the_worker_warns_and_production_refuses_to_start(cli):
    """SPEC 2.4 step 4: a development key with a warning; LADDER_ENV=production requires one."""
    assert "LADDER_NETWORK_KEY is not set" in cli.ladder("worker", "--burst").stderr
    cli.env["LADDER_ENV"] = "production"
    refused = cli.ladder("worker", "--burst", check=False)
    assert 2 == refused.returncode and "LADDER_NETWORK_KEY is required" in refused.stderr
    cli.env["LADDER_NETWORK_KEY"] = "k"
    assert "LADDER_NETWORK_KEY" not in cli.ladder("worker", "--burst").stderr
