"""The receipts section of the benchmark: its switch and its goals (no timings asserted)."""

from __future__ import annotations

from bench import receipts
from bench.env import Target


def test_the_switch_sets_ladder_receipts_for_the_workers_only() -> None:
    """LADDER_RECEIPTS=false turns receipts off: each run starts its workers so."""
    target = Target("redis://127.0.0.1:6379/11", database_url="postgresql://x@127.0.0.1/none")
    assert receipts.switched(target, False).subprocess_env()["LADDER_RECEIPTS"] == "false"
    assert receipts.switched(target, True).subprocess_env()["LADDER_RECEIPTS"] == "true"
    assert receipts.switched(target, True).redis_url == target.redis_url


def test_the_goals_are_ten_percent_of_ingest_and_the_leaderboard_p99() -> None:
    """at most 10 % of ingest; receipts within the leaderboard's p99."""
    result = {
        "receipts": {
            "throughput_ratio": 0.93,
            "latency": {receipts.ON: {"p99_ms": 20.0}},
            "receipt": {"p99_ms": 21.0},
        }
    }
    (cost, latency) = receipts.goals(result)
    assert (cost[2], latency[2]) == (True, False)
    result["receipts"]["throughput_ratio"] = 0.89
    result["receipts"]["receipt"] = {"p99_ms": 19.0}
    (cost, latency) = receipts.goals(result)
    assert (cost[2], latency[2]) == (False, True)
    assert receipts.goals({}) == []
