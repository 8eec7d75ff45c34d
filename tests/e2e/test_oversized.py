"""An event over LADDER_MAX_EVENT_BYTES is refused unread: no worker ever holds it whole."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.e2e.private import LADDER
from tests.e2e.test_cli import event

BIG = 40 * 1024 * 1024  # bytes


def _burst_peak_kib(env: dict[str, str]) -> int:
    """The peak resident memory of one ``ladder worker --burst``, in KiB."""
    worker = subprocess.Popen(
        [LADDER, "--log-level", "WARNING", "worker", "--burst"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(worker.pid, 0)
    worker.returncode = os.waitstatus_to_exitcode(status)
    assert 0 == worker.returncode
    return int(usage.ru_maxrss)


def test_an_oversized_event_is_dead_lettered_unread_and_costs_no_memory(cli):
    """A 40 MiB element (the limit is 64 KiB) is a ``payload_too_large`` dead letter keeping
    its size, SHA-1 and first bytes; the burst worker that refused it peaks within a few MiB
    of one that rated a small event (it never received the element)."""
    cli.publish_with_redis_cli([event("small-1", "a", "b")])
    baseline = _burst_peak_kib(cli.env)
    # published by a process of its own: this one stays small, as the workers forked from it
    head = '{"type":"game.finished","event_id":"huge-1","ladder":"gammon42","pad":"'
    publish = (
        "import sys; from redis import Redis; "
        f"Redis.from_url(sys.argv[1]).rpush('ladder:inbox', {head!r} + 'x' * {BIG} + '\"}}')"
    )
    subprocess.run([sys.executable, "-c", publish, cli.env["REDIS_URL"]], check=True)
    cli.publish_with_redis_cli([event("small-2", "c", "d")])
    refused = _burst_peak_kib(cli.env)
    assert refused < baseline + 16 * 1024, (baseline, refused)  # KiB: 16 MiB, far below 40
    (letter,) = cli.ladder_json("dlq", "list")
    assert ("huge-1", "payload_too_large") == (letter["event_id"], letter["reason"])
    shown = cli.ladder("dlq", "show", "huge-1").stdout
    assert f"payload is {BIG + len(head) + 2} bytes; the limit is 65536" in shown
    assert "small-2" in cli.ladder("history", "gammon42", "c").stdout
