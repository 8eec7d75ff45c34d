"""Workers that share one log file (several processes of a deployment writing to the same
stream, as the tests' and the benchmark's workers do) never mangle each other's lines: each
log line is written to standard error in one write, so a line stays whole however the
processes' writes interleave."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

LOGGING = r"""
import os, sys, time
import structlog
from worker.observability import logs

logs.configure("INFO")
log = structlog.get_logger("ladder")
open(sys.argv[2] + "." + str(os.getpid()), "w").close()  # ready
while not os.path.exists(sys.argv[2]):  # all start together
    time.sleep(0.001)
for i in range(int(sys.argv[1])):
    log.info("event", event_id=f"e-{i}", ladder="gammon42", outcome="rated", duration_ms=1.5)
"""


def test_three_processes_logging_to_one_file_write_only_whole_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "workers.log"
    go = tmp_path / "go"
    with path.open("ab") as shared:
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", LOGGING, "5000", str(go)],
                stdout=subprocess.DEVNULL,
                stderr=shared,
            )
            for _ in range(3)
        ]
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("go.*"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        codes = [p.wait(timeout=120) for p in processes]
    assert [0, 0, 0] == codes
    lines = path.read_text(encoding="utf-8").splitlines()
    assert 15000 == len(lines)
    broken = []
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            broken.append(line)
    assert [] == broken[:3], f"{len(broken)} of {len(lines)} lines are not whole JSON lines"


BATCH = r"""
import sys
from worker.observability import logs
from worker.service.outcomes import Processed, log_batch

logs.configure(sys.argv[1])
log_batch([Processed("e-1", "gammon42", "rated"), Processed("e-2", "gammon42", "unrated")], 3.0)
"""


def test_each_event_has_its_line_at_debug_and_the_batch_one_at_info() -> None:
    """The ``batch`` line counts the batch's events at INFO; each event's own ``event`` line is
    written at DEBUG only (at INFO the loop over the events is not run)."""
    lines = {}
    for level in ("DEBUG", "INFO"):
        ran = subprocess.run(
            [sys.executable, "-c", BATCH, level], capture_output=True, text=True, timeout=60
        )
        assert 0 == ran.returncode, ran.stderr
        lines[level] = [json.loads(line) for line in ran.stderr.splitlines()]
    assert ["event", "event", "batch"] == [line["event"] for line in lines["DEBUG"]]
    assert ["e-1", "e-2"] == [line["event_id"] for line in lines["DEBUG"][:2]]
    assert ["batch"] == [line["event"] for line in lines["INFO"]]
    assert {"rated": 1, "unrated": 1} == lines["INFO"][0]["outcomes"]
