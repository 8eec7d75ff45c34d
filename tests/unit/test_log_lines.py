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
