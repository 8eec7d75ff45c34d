"""The benchmark's worker subprocesses, in a module of their own: ``bench.run`` runs as
``__main__``, so a class defined there and imported again by a section as ``bench.run`` would
be two classes, and the peak RSS the table prints (``Workers.peak_rss_kib``, over every
section's workers) would miss some of them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from bench import env


def vm_hwm_kib(pid: int) -> int | None:
    """A running process's own peak resident set (``VmHWM`` in ``/proc/<pid>/status``), or
    None where there is no such file (the process has exited, or this is not Linux).

    Not ``wait4``'s ``ru_maxrss``: Linux keeps the largest of every memory image a process
    had, and a child spawned by ``subprocess`` starts in a copy of its parent's (vfork or
    fork, then exec), so a worker started by a benchmark that holds 800 MiB of events reports
    800 MiB however little it uses itself."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


# Where there is no /proc (not Linux), wait4's ru_maxrss stands in for a worker's peak: an
# upper bound, since it counts the parent's image the child was spawned in.
_PROC = Path("/proc/self/status").exists()


class Workers:
    """Worker subprocesses and their own peak RSS, sampled while they run: the largest of
    every run (``peak_rss_kib``) and of these (``own_peak_rss_kib``)."""

    peak_rss_kib = 0

    def __init__(self, argv: list[str], count: int, environ: dict[str, str], log: Path) -> None:
        self.log = log.open("ab")
        self.cpu_seconds = 0.0
        self.own_peak_rss_kib = 0
        self._sampled: dict[int, int] = {}  # pid: the largest VmHWM read while it ran
        self.procs = [
            subprocess.Popen(
                argv, env=environ, stdout=subprocess.DEVNULL, stderr=self.log, cwd=env.ROOT
            )
            for _ in range(count)
        ]

    def sample(self) -> None:
        """Read every running worker's peak RSS so far (it only grows)."""
        for proc in self.procs:
            found = vm_hwm_kib(proc.pid)
            if found is not None:
                self._sampled[proc.pid] = max(self._sampled.get(proc.pid, 0), found)

    def wait(self, timeout: float = 600.0) -> list[int]:
        deadline = time.monotonic() + timeout
        codes = []
        for proc in self.procs:
            while True:
                self.sample()
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
            peak = self._sampled.get(proc.pid, 0) if _PROC else usage.ru_maxrss
            self.own_peak_rss_kib = max(self.own_peak_rss_kib, peak)
            Workers.peak_rss_kib = max(Workers.peak_rss_kib, peak)
            self.cpu_seconds += usage.ru_utime + usage.ru_stime
        self.log.close()
        return codes

    def stop(self) -> list[int]:
        self.sample()
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        return self.wait(timeout=30.0)


def _ladder_worker(burst: bool) -> list[str]:
    return [*env.LADDER.split(), "--log-level", "INFO", "worker", *(["--burst"] if burst else [])]
