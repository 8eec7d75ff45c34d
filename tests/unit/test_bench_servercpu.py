"""bench.servercpu: a drain's CPU per event by process, read from /proc."""

from __future__ import annotations

import sys

import pytest

from bench import servercpu
from bench.servercpu import Sample


def test_per_event_splits_the_machines_time_into_the_servers_and_the_rest() -> None:
    before = Sample({"postgres": 10.0, "redis": 2.0}, 100.0)
    after = Sample({"postgres": 10.5, "redis": 2.1}, 101.0)
    assert {"postgres": 500, "redis": 100, "rest": 400, "machine": 1000} == servercpu.per_event(
        before, after, 1000
    )
    assert servercpu.per_event(None, after, 1000) is None
    assert servercpu.per_event(before, after, 0) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sample_reads_the_servers_running_here_and_grows_with_work() -> None:
    """The suite's PostgreSQL and Redis run on this machine (or embedded, as processes of the
    same names): each has spent some CPU, and the machine's busy time grows with work."""
    first = servercpu.sample()
    assert first is not None
    sum(i * i for i in range(2_000_000))  # some CPU
    second = servercpu.sample()
    assert second is not None
    assert second.machine > first.machine
    assert all(second.servers[k] >= first.servers[k] > 0 for k in servercpu.SERVERS)
