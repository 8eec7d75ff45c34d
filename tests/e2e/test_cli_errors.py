"""What a newcomer hits first: every ordinary mistake or failure is one line and an exit code
(1 could not do it, 2 asked wrongly), never a traceback."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.conftest import Cli
from tests.e2e.private import ladder_serve
from tests.events import game

UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
UNREACHABLE_DATABASE = "postgresql://someone:hunter2@127.0.0.1:1/ladder"


@pytest.fixture
def bare(database_url: str, redis_url: str) -> Cli:
    """The ladder command against an empty, never migrated database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    env.update({"REDIS_URL": redis_url, "DATABASE_URL": database_url})
    return Cli(env)


def one_line_failure(result, code: int) -> str:
    """The command exited ``code`` with exactly one line on stderr (past the notices)."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert code == result.returncode, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert lines and lines[-1].startswith("ladder: "), result.stderr
    return lines[-1]


def test_a_command_that_needs_the_database_stops_at_once_when_it_is_not_migrated(bare):
    """`worker --burst` on an unmigrated database says so and exits 2, without retrying."""
    started = time.monotonic()
    result = bare.ladder("worker", "--burst", check=False, timeout=60)
    line = one_line_failure(result, 2)
    assert time.monotonic() - started < 30
    assert line.endswith("is not migrated: run `ladder migrate`") and "the database at " in line
    for command in (["rebuild", "gammon42"], ["reconcile"], ["history", "gammon42", "a"]):
        assert "not migrated" in one_line_failure(bare.ladder(*command, check=False), 2)


def test_migrate_says_whether_it_created_upgraded_or_left_the_schema(bare):
    """created at revision N, then already at N."""
    from worker.store.migrate import head

    first = bare.ladder("migrate").stdout.strip()
    again = bare.ladder("migrate").stdout.strip()
    assert first.startswith(f"ladder: created the schema at revision {head()} (postgresql://")
    assert again.startswith(f"ladder: the schema is already at revision {head()}")


@pytest.mark.parametrize("missing", ["DATABASE_URL", "REDIS_URL"])
def test_production_refuses_to_run_without_either_server_url(bare, tmp_path, missing):
    """SPEC 6: "LADDER_ENV=production requires both URLs": without one, a command stops
    with one line and exit 2, and starts no embedded server."""
    del bare.env[missing]
    bare.env.update(
        {"LADDER_ENV": "production", "LADDER_NETWORK_KEY": "k", "LADDER_DATA_DIR": str(tmp_path)}
    )
    refused = subprocess_in(bare, tmp_path, "dlq", "list")
    line = one_line_failure(refused, 2)
    assert line.startswith(f"ladder: {missing} is required when LADDER_ENV=production")
    assert [] == list(tmp_path.iterdir())


def test_an_sqlite_database_url_is_refused_with_one_line(bare, tmp_path):
    """SPEC 6: "PostgreSQL is the only system of record": a DATABASE_URL left over from the
    SQLite demo is refused by name, before anything is done."""
    bare.env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'ladder.sqlite3'}"
    line = one_line_failure(subprocess_in(bare, tmp_path, "migrate"), 2)
    assert "PostgreSQL is the only store" in line
    assert [] == list(tmp_path.iterdir())


def subprocess_in(cli: Cli, cwd: Path, *args: str):
    import subprocess

    from tests.e2e.conftest import LADDER

    return subprocess.run(
        [LADDER, *args], env=cli.env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "command",
    [
        ["dlq", "list"],
        ["dlq", "replay", "--all"],
        ["rebuild", "gammon42"],
        ["reconcile"],
        ["worker", "--burst"],
        ["top", "gammon42"],
    ],
)
def test_an_unreachable_redis_is_one_line_naming_it(cli, command):
    """Exit 1 and the Redis URL, not redis.exceptions.ConnectionError's traceback."""
    cli.env["REDIS_URL"] = UNREACHABLE_REDIS
    line = one_line_failure(cli.ladder(*command, check=False, timeout=60), 1)
    assert "Redis" in line and ("127.0.0.1:1" in line)


def test_an_unreachable_redis_is_one_line_for_publish_too(cli, tmp_path):
    """`ladder publish` of a real file to a Redis that is down."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(game("a", "b")) + "\n")
    cli.env["REDIS_URL"] = UNREACHABLE_REDIS
    line = one_line_failure(cli.ladder("publish", str(path), check=False), 1)
    assert "Redis at redis://127.0.0.1:1/0" in line


@pytest.mark.parametrize("command", [["rebuild", "gammon42"], ["worker", "--burst"]])
def test_an_unreachable_database_is_one_line_without_its_password(cli, command):
    """Exit 1; the database is named, its password is not."""
    cli.env["DATABASE_URL"] = UNREACHABLE_DATABASE
    line = one_line_failure(cli.ladder(*command, check=False, timeout=60), 1)
    assert "postgresql://someone:***@127.0.0.1:1/ladder" in line and "hunter2" not in line


def test_a_missing_file_to_publish_is_one_line(cli):
    """ladder publish /nonexistent: exit 1 naming the file."""
    line = one_line_failure(cli.ladder("publish", "/nonexistent", check=False), 1)
    assert "cannot open /nonexistent: No such file or directory" in line


@pytest.mark.parametrize(
    ("args", "said", "unsaid"),
    [
        (["--log-level", "bogus", "dlq", "list"], "'bogus' is not a log level", "Traceback"),
        (["config"], "required: {show}", "config_command"),
        (["dlq"], "required: {list,show,replay,discard}", "dlq_command"),
        (["top", "gammon42", "--limit", "x"], "'x' is not a whole number", "_positive"),
        (["top", "gammon42", "--limit", "0"], "must be 1 or more", "_positive"),
        (["dlq", "list", "--reason", "bogus"], "unknown_ladder, bad_signature", "Traceback"),
    ],
)
def test_a_usage_mistake_is_exit_2_in_words_a_newcomer_reads(cli, args, said, unsaid):
    """argparse's internal names stay hidden; the valid choices are named."""
    result = cli.ladder(*args, check=False)
    assert 2 == result.returncode
    assert said in result.stderr and unsaid not in result.stderr


def test_version_and_help_read_as_a_program_not_a_docstring(cli):
    """ladder --version; ladder --help describes the program and its exit codes."""
    assert cli.ladder("--version").stdout.startswith("ladder 0.")
    shown = cli.ladder("--help").stdout
    assert "Exit status: 0 done, 1 could not do it, 2 asked wrongly" in shown
    assert "Settings are read once" not in shown and "``" not in shown
    shown = " ".join(cli.ladder("config", "show", "--help").stdout.split())
    assert "then the path of the file in use as the last line" in shown


def test_dlq_list_escapes_control_characters_and_counts_in_the_singular(cli):
    """An event_id of "\\x1b[2J...ALL CLEAR" cannot repaint the operator's terminal."""
    bad = game("a", "b", event_id="\x1b[2J ALL CLEAR", cube=3)
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(bad))
    cli.ladder("worker", "--burst")
    result = cli.ladder("dlq", "list")
    assert "\x1b" not in result.stdout and "\\x1b[2J ALL CLEAR" in result.stdout
    assert "(1 dead letter)" in result.stderr


def test_end_of_input_at_the_discard_prompt_discards_nothing(cli):
    """Ctrl-D at "Delete ... for good?" is no, not an EOFError traceback."""
    import subprocess

    from tests.e2e.conftest import LADDER

    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("a", "b", event_id="d-1", cube=3)))
    cli.ladder("worker", "--burst")
    code = (
        "import sys, worker.entrypoints.cli.dlq as dlq; dlq.is_terminal = lambda stream: True; "
        "from worker.entrypoints.cli.main import main; sys.exit(main(['dlq', 'discard', 'd-1']))"
    )
    python = str(Path(LADDER).with_name("python"))
    result = subprocess.run(
        [python, "-c", code], env=cli.env, input="", capture_output=True, text=True, timeout=60
    )
    assert "nothing discarded" in one_line_failure(result, 2)
    assert 1 == len(cli.ladder_json("dlq", "list"))


def test_a_replay_that_is_still_invalid_is_one_warning_without_a_traceback(cli):
    """An expected outcome: back in the dead-letter queue, one log line."""
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("a", "b", event_id="r-1", cube=3)))
    cli.ladder("worker", "--burst")
    cli.ladder("dlq", "replay", "--all")
    result = cli.ladder("worker", "--burst")
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr
    assert 1 == result.stderr.count("is still invalid and back in the queue: invalid_cube")


def test_the_log_level_governs_every_line_rq_included(cli):
    """--log-level ERROR: no event lines, no RQ lines; DEBUG: RQ's own lines too."""
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("a", "b")))
    quiet = cli.ladder("--log-level", "ERROR", "worker", "--burst")
    assert "" == "\n".join(
        line for line in quiet.stderr.splitlines() if not line.startswith("ladder: ")
    )
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("c", "d")))
    loud = cli.ladder("--log-level", "DEBUG", "worker", "--burst")
    loud_lines = [json.loads(line) for line in loud.stderr.splitlines()]
    assert {"rq.worker"} <= {line.get("logger") for line in loud_lines if line["level"] == "debug"}
    assert "event" in {line["event"] for line in loud_lines}


def test_every_line_a_worker_writes_is_one_json_object_rq_and_alembic_included(cli):
    """Issue 36: every line a process writes is one JSON object: RQ's warnings (a replayed
    dead letter still invalid), its errors with their tracebacks, alembic's lines, the
    worker's own notices, all through structlog, each naming its logger."""
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("a", "b", cube=3)))
    cli.ladder("worker", "--burst")
    cli.ladder("dlq", "replay", "--all")
    runs = [
        cli.ladder("worker", "--burst"),
        cli.ladder("--log-level", "DEBUG", "migrate"),
        cli.ladder("--log-level", "DEBUG", "worker", "--burst"),
    ]
    lines = [line for run in runs for line in run.stderr.splitlines()]
    parsed = [json.loads(line) for line in lines]  # a line that is not JSON fails here
    assert all(isinstance(line, dict) for line in parsed)
    warned = [p for p in parsed if p.get("logger") == "rq.worker" and p["level"] == "warning"]
    assert 1 == len(warned) and "is still invalid and back in the queue" in warned[0]["event"]
    assert any(str(p.get("logger", "")).startswith("alembic") for p in parsed)
    assert any("LADDER_NETWORK_KEY is not set" in p["event"] for p in parsed)


def test_history_shows_when_the_game_ended(cli):
    """Not when it was processed: a game that ended 3 hours ago shows that time."""
    ended = datetime.now(UTC) - timedelta(hours=3)
    cli.redis_cli("RPUSH", "ladder:inbox", json.dumps(game("a", "b", ended_at=ended)))
    cli.ladder("worker", "--burst")
    shown = cli.ladder("history", "gammon42", "a").stdout
    assert ended.isoformat()[:19] in shown


def _serve(cli: Cli, *extra: str) -> tuple[int, str, str]:
    forwarded = {"X-Forwarded-For": "203.0.113.50"}
    lines: list[str] = []
    with ladder_serve(cli.env, *extra, log=lines, headers=forwarded) as base:
        with urllib.request.urlopen(
            urllib.request.Request(base + "/healthz", headers=forwarded), timeout=5
        ) as response:
            health = response.status
        with urllib.request.urlopen(
            urllib.request.Request(base + "/ladders", headers=forwarded), timeout=5
        ) as response:
            assert 200 == response.status
        with urllib.request.urlopen(base + "/metrics", timeout=5) as response:
            shown = response.read().decode()
    return health, shown, "\n".join(lines)


def test_ladder_serve_logs_no_client_address_and_answers_healthz_and_metrics(cli):
    """SPEC 2.4: raw IPs are never logged: no access log by default, a masked one on request;
    X-Forwarded-For from an unconfigured proxy is not believed."""
    health, shown, stderr = _serve(cli)
    assert 200 == health and "process_resident_memory_bytes" in shown
    assert "127.0.0.1:" not in stderr.replace("http://127.0.0.1:", "") and "203.0.113" not in stderr
    assert "GET /ladders" not in stderr
    _, _, logged = _serve(cli, "--access-log")
    events = [json.loads(line)["event"] for line in logged.splitlines()]  # each line is JSON
    assert '- - "GET /ladders HTTP/1.1" 200' in events
    assert "203.0.113" not in logged and "127.0.0.1:" not in logged.replace("http://127.0.0.1:", "")


def test_publishing_a_line_that_cannot_be_signed_is_one_line_naming_it(cli, tmp_path):
    """ladder publish --publisher with a line that is not a JSON object: exit 2, line named."""
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(game("a", "b")) + "\nnot json\n")
    cli.env["LADDER_PUBLISH_SECRET"] = "s"
    result = cli.ladder("publish", "--publisher", "p", str(path), check=False)
    line = one_line_failure(result, 2)
    assert f"{path} line 2: not JSON, so it cannot be signed; published 0 events" in line
    assert "0" == cli.redis_cli("LLEN", "ladder:inbox").strip()


def test_publishing_a_file_that_is_not_utf8_is_one_line(cli, tmp_path):
    """Exit 2 naming the file, not a UnicodeDecodeError traceback."""
    path = tmp_path / "events.bin"
    path.write_bytes(b'{"a": 1}\n\xff\xfe\n')
    line = one_line_failure(cli.ladder("publish", str(path), check=False), 2)
    assert f"{path} is not UTF-8 text" in line


@pytest.mark.parametrize(
    "command",
    [
        ("top", "chess"),
        ("rebuild", "chess"),
        ("reconcile", "chess"),
        ("season", "list", "chess"),
        ("verify", "chess"),
    ],
)
def test_every_command_refuses_an_unknown_ladder_alike(cli, command):
    """One refusal for an unknown ladder, whichever command: exit 2, one line naming the
    ladders that are configured, no traceback."""
    result = cli.ladder(*command, check=False)
    assert 2 == result.returncode, result.stderr
    assert result.stderr == (
        "ladder: no ladder named 'chess' (configured: fibs, gammon42, prostriker)\n"
    )


# Every command of `ladder`, as run against an empty schema: those that touch PostgreSQL,
# and those that read Redis alone. `migrate` is the remedy, so it is in neither.
TOUCH_POSTGRESQL = [
    ["worker", "--burst"],
    ["rebuild", "gammon42"],
    ["reconcile", "gammon42"],
    ["season", "list", "gammon42"],
    ["season", "close", "gammon42", "--name", "s1"],
    ["history", "gammon42", "a"],
    ["preview", "gammon42", "=1500", "=1500"],
    ["serve", "--port", "0"],
    ["verify"],
    ["archive", "--before", "2026-01"],
    ["calibrate", "gammon42"],
    ["backtest", "gammon42", "--set", "k=16"],
    ["import", "gammon42", "{players}"],
    ["void", "gammon42", "e-1", "--reason", "test"],
    ["ban", "gammon42", "a", "--reason", "test"],
    ["unban", "gammon42", "a", "--reason", "test"],
    ["adjust", "gammon42", "a", "--delta", "5", "--reason", "test"],
    ["rerate", "gammon42", "--reason", "test"],
    ["event", "gammon42", "e-1"],
    ["dlq", "list"],
    ["dlq", "show", "x"],
    ["dlq", "replay", "--all"],
    ["dlq", "discard", "--all", "--yes"],
    ["player", "export", "gammon42", "a"],
    ["player", "erase", "gammon42", "a", "--yes"],
]
REDIS_ONLY = [
    ["health"],
    ["health", "--ready"],
    ["top", "gammon42"],
    ["page", "gammon42"],
    ["rank", "gammon42", "a"],
    ["around", "gammon42", "a"],
    ["player", "gammon42", "a"],
    ["among", "gammon42", "a", "b"],
    ["predict", "gammon42", "--team", "a", "--team", "b"],
    ["export", "gammon42"],
    ["config", "show"],
    ["publish", "{players}"],
]
EVERY_COMMAND = r"""
import contextlib, io, json, sys
from worker.entrypoints.cli.main import main

results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append([argv, code, err.getvalue()])
print(json.dumps(results))
"""


def test_every_command_that_touches_postgresql_says_not_migrated_and_exits_2(bare, tmp_path):
    """Issue 36: against an empty schema every command that touches PostgreSQL (dlq list and
    show, player export and erase included) prints the one line "not migrated: run `ladder
    migrate`" and exits 2; the others, which read Redis alone, never meet a missing table.
    The table names every command the parser knows."""
    import subprocess
    import sys

    from worker.entrypoints.cli.main import _parser

    players = tmp_path / "players.jsonl"
    players.write_text('{"player_id": "a", "rating": 1600}\n', encoding="utf-8")
    commands = [[word.format(players=players) for word in c] for c in TOUCH_POSTGRESQL + REDIS_ONLY]
    sub = next(a for a in _parser()._actions if a.dest == "command")
    assert sub.choices is not None
    # migrate makes the schema; deploy writes a file and dev runs the embedded servers.
    assert set(sub.choices) - {"migrate", "deploy", "dev"} == {c[0] for c in commands}
    done = subprocess.run(
        [sys.executable, "-c", EVERY_COMMAND, json.dumps(commands)],
        env=bare.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert 0 == done.returncode, done.stderr[-2000:]
    results = json.loads(done.stdout.splitlines()[-1])
    expected = "is not migrated: run `ladder migrate`"
    for index, (argv, code, err) in enumerate(results):
        line = f"{' '.join(argv)}: {code} {err!r}"
        if index < len(TOUCH_POSTGRESQL):
            said = err.splitlines()
            assert 2 == code and len(said) == 1 and said[0].endswith(expected), line
            assert said[0].startswith("ladder: the database at "), line
        else:
            assert "does not exist" not in err and "Traceback" not in err, line
            assert code in (0, 1), line


@pytest.mark.parametrize(
    "setting",
    [
        {"LADDER_REQUIRE_SIGNATURE": "true", "LADDER_PUBLISHER_SECRETS": "server-a:s1"},
        {"LADDER_PUBLISHER_SECRETS": "server-a:s1"},
        {"LADDER_ENV": "production"},
    ],
)
def test_a_worker_that_would_sign_with_the_public_development_key_refuses_to_start(
    bare, tmp_path, setting
):
    """Signatures or production without LADDER_NETWORK_KEY: one line naming it, exit 2, since
    the development key is public and anyone could write a ``ladder-verified:`` attestation."""
    bare.env.update({**setting, "LADDER_DATA_DIR": str(tmp_path)})
    result = subprocess_in(bare, tmp_path, "worker", "--burst")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert 2 == result.returncode and 1 == len(lines), result.stderr
    assert lines[0].startswith("ladder: LADDER_NETWORK_KEY is required when ")
    assert [] == list(tmp_path.iterdir())


def test_the_development_setup_still_starts_with_the_development_key(cli, tmp_path):
    """No signatures and not production: the worker runs on the development key, warning."""
    result = cli.ladder("worker", "--burst")
    assert "LADDER_NETWORK_KEY is not set" in result.stderr
