"""The benchmark's code paths on a tiny scale, so ``bench/`` cannot rot. No timings asserted."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from bench import noop
from bench.env import Target
from bench.events import generate, probe_game
from bench.ingest import verify
from bench.plan import FULL
from bench.reads import reads
from bench.table import goals, print_table
from schemas import InvalidEvent
from worker import keys


def test_generated_mix_counts_what_it_holds() -> None:
    payloads, mix = generate(600, seed=3, tag="smoke", players=100)
    assert mix.total == len(payloads) == 600
    now = datetime.now(UTC)
    reasons: Counter[str] = Counter()
    ladders: Counter[str] = Counter()
    from schemas import parse_event

    for payload in payloads:
        try:
            event = parse_event(payload, now=now)
        except InvalidEvent as exc:
            reasons[exc.reason] += 1
            continue
        ladders[event.ladder] += 1
    unknown_ladder = ladders.pop("chess960", 0)
    assert sum(reasons.values()) + unknown_ladder == mix.invalid
    assert set(ladders) == {"gammon42", "fibs", "prostriker"}
    assert mix.duplicates > 0 and mix.invalid > 0
    assert mix.by_kind["bot"] and mix.by_kind["pair_repeat"] and mix.by_kind["boosted"]


def test_probe_game_names_a_new_winner() -> None:
    payload, winner = probe_game(7, "t", "fibs", "someone")
    assert winner == "probe-t-7" and winner in payload


def test_drain_and_exactly_once_check(runtime: Any, database_url: str, redis_url: str) -> None:
    from worker.entrypoints.worker import runner

    payloads, mix = generate(400, seed=5, tag="smoke", players=60)
    target = Target(redis_url, database_url=database_url)
    target.publish(payloads, chunk=50)
    runner.run_burst(runtime)
    check = verify(target, mix)
    assert check["ok"], check["problems"]
    assert check["audit_rows"] == mix.unique_valid


def test_noop_jobs_drain(redis_url: str) -> None:
    target = Target(redis_url, database_url="postgresql://unused/none")
    noop.enqueue(target.redis, 5)
    noop.work(target.redis)
    assert target.redis.llen(noop.TIMINGS) == 1
    assert target.redis.llen(f"rq:queue:{noop.QUEUE}") == 0


def test_reads_and_table(redis_url: str, capsys: Any) -> None:
    target = Target(redis_url, database_url="postgresql://unused/none")
    found = reads(target, players=200, seconds=0.01)
    assert found["top(100)"]["raw_per_second"] > 0
    result: dict[str, Any] = {
        "started_at": "now",
        "mode": "smoke",
        "plan": FULL.__dict__,
        "machine": {"cpus": 2, "python": "3", "synchronous_commit": "on"},
        "reads": found,
        "rebuild": {"players": 10, "seconds": None, "note": "n/a"},
        "worker_peak_rss_mib": 1.0,
    }
    result["goals"] = goals(result)
    print_table(result)
    assert "reads top(100)" in capsys.readouterr().out
    assert not target.redis.exists(keys.rating("gammon42"))


def test_the_floor_drains_the_hot_ladder_once(database_url: str, redis_url: str) -> None:
    """bench.floor: every event one audit row, two ledger rows per rated game, a board of the
    players who played; the first game of two new players moves each by K/2 = 16."""
    import psycopg

    from bench import floor
    from bench.events import generate_hot
    from bench.floorbench import _plain_url

    payloads, mix = generate_hot(300, players=40, tag="smoke")
    target = Target(redis_url, database_url=database_url)
    target.publish(payloads, chunk=100)
    done = floor.run(redis_url, _plain_url(database_url))
    assert (300, 0) == (done["events"], target.redis.llen(keys.INBOX))
    with psycopg.connect(_plain_url(database_url)) as conn:
        rows = conn.execute("SELECT outcome, count(*) FROM floor_events GROUP BY 1").fetchall()
        outcomes: dict[str, int] = {str(k): int(v) for k, v in rows}
        (ledger,) = conn.execute("SELECT count(*) FROM floor_ledger").fetchone() or (0,)
        first = conn.execute(
            "SELECT before, after FROM floor_ledger WHERE event_id = 'smoke-0' ORDER BY after"
        ).fetchall()
    assert mix.total == sum(outcomes.values())
    assert 2 * outcomes["rated"] == ledger
    assert [(1500.0, 1484.0), (1500.0, 1516.0)] == first
    assert 40 >= target.redis.zcard("floor:{gammon42}:rating") > 30


def test_the_flood_sends_invalid_events_the_worker_refuses_and_judges_the_ratio(
    runtime: Any,
) -> None:
    """bench.flood: its invalid event is refused (``invalid_cube``), its valid one rated; its
    goal is met at 0.5x the rated rate with every invalid event dead-lettered, and not below."""
    from bench import flood
    from tests.conftest import drain

    runtime.redis.rpush(
        keys.INBOX,
        flood._game("bad-0", 0, 3, "2026-12-01T12:00:00Z"),
        flood._game("ok-0", 0, 1, "2026-12-01T12:00:00Z"),
    )
    drain(runtime)
    (letter,) = runtime.dead_letters.list()
    assert ("bad-0", "invalid_cube") == (letter.event_id, letter.reason)
    seen = {"invalid": 10, "valid": 1, "dead_letters": 10, "valid_wait_seconds": 1.0}
    assert [True] == [g[2] for g in flood.goals({"flood": {**seen, "ratio": 0.5}})]
    assert [False] == [g[2] for g in flood.goals({"flood": {**seen, "ratio": 0.49}})]
    assert [False] == [
        g[2] for g in flood.goals({"flood": {**seen, "ratio": 2, "dead_letters": 9}})
    ]


def test_the_rulesets_ladders_drain_the_same_games_and_check_each_board(
    make_runtime: Any, tmp_path: Any
) -> None:
    """bench.rulesets: the hot games on the gammon42, glicko2 and openskill ladders of its
    configuration, drained one ladder after another; each check passes, openskill's board
    ranking by mu - 3 sigma, and each rates the same games (the pair limit refuses the same
    ones: 120 games among 8 players)."""
    from bench import rulesets
    from tests.conftest import drain

    config, scores = rulesets.write_config(tmp_path)
    rt = make_runtime(ladder_config=config)
    target = Target(rt.settings.redis_url, database_url=rt.settings.database_url)
    per_ladder, mix = rulesets.workload(120)
    done: Counter[str] = Counter()
    for name in rulesets.RULESETS:
        target.publish(per_ladder[name], chunk=50)
        drain(rt)
        check = verify(target, mix, {name: scores[name]})
        assert check["ok"], (name, check["problems"])
        target.sql("DELETE FROM events")  # the next ladder's audit rows counted alone
        done[name] = check["rating_changes"] - sum(done.values())
    assert len(set(done.values())) == 1 and 0 < done["gammon42"] < 2 * mix.total
