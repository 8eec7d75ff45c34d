"""The benchmark's worker subprocesses, in a module of their own: ``bench.run`` runs as
``__main__`` and other sections import it again as ``bench.run``, so a class defined there
would be two classes, and the peak RSS the table prints would miss the workers started by
the sections that import it (``latency``, ``receipts``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from bench import env


class Workers:
    """Worker subprocesses whose peak RSS is read from ``wait4`` when they exit: the largest
    of every run (``peak_rss_kib``) and of these (``own_peak_rss_kib``)."""

    peak_rss_kib = 0

    def __init__(self, argv: list[str], count: int, environ: dict[str, str], log: Path) -> None:
        self.log = log.open("ab")
        self.cpu_seconds = 0.0
        self.own_peak_rss_kib = 0
        self.procs = [
            subprocess.Popen(
                argv, env=environ, stdout=subprocess.DEVNULL, stderr=self.log, cwd=env.ROOT
            )
            for _ in range(count)
        ]

    def wait(self, timeout: float = 600.0) -> list[int]:
        deadline = time.monotonic() + timeout
        codes = []
        for proc in self.procs:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.01)
            proc.returncode = os.waitstatus_to_exitcode(status)
            codes.append(proc.returncode)
            self.own_peak_rss_kib = max(self.own_peak_rss_kib, usage.ru_maxrss)
            Workers.peak_rss_kib = max(Workers.peak_rss_kib, usage.ru_maxrss)
            self.cpu_seconds += usage.ru_utime + usage.ru_stime
        self.log.close()
        return codes

    def stop(self) -> list[int]:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        return self.wait(timeout=30.0)


def _ladder_worker(burst: bool) -> list[str]:
    return [*env.LADDER.split(), "--log-level", "INFO", "worker", *(["--burst"] if burst else [])]
