"""bench/history.py's medians of the alternated verifies."""

from __future__ import annotations

from bench.history import _median


def _run(rate: int, cpu: float = 50.0, mismatches: int = 0) -> dict[str, float | int]:
    return {"events_per_second": rate, "command_cpu_us_per_event": cpu, "mismatches": mismatches}


def test_the_median_run_is_reported_with_every_round_beside_it():
    chosen = _median([_run(20_076, 60.1), _run(24_685, 49.0), _run(21_734, 58.3)])
    assert 21_734 == chosen["events_per_second"] and 58.3 == chosen["command_cpu_us_per_event"]
    assert [20_076, 24_685, 21_734] == chosen["rounds"]
    assert [60.1, 49.0, 58.3] == chosen["cpu_rounds"]


def test_an_even_count_takes_the_lower_middle_a_measured_run_not_a_mean():
    assert 10 == _median([_run(30), _run(10), _run(5), _run(40)])["events_per_second"]


def test_a_run_with_a_mismatch_or_no_rate_is_the_result_whatever_the_others_did():
    failed = _median([_run(20_000), _run(21_000, mismatches=2), _run(22_000)])
    assert 2 == failed["mismatches"] and "rounds" not in failed
    assert 0 == _median([_run(20_000), {"events": 0, "seconds": None, "exit": 1}])["events"]
