"""The benchmark's worker processes: their peak RSS is their own, not their parent's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.workers import Workers, vm_hwm_kib

MIB = 1024

pytestmark = pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/status").exists(), reason="reads /proc (Linux)"
)


def test_a_child_of_a_large_parent_reports_its_own_peak(tmp_path: Path) -> None:
    """wait4's ru_maxrss counts the image the child was spawned in: here the test's own
    400 MiB. The figure the benchmark prints is what the worker itself used."""
    ballast = bytearray(400 * MIB * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # resident, page by page
    parent = vm_hwm_kib(os.getpid())
    assert parent is not None and parent > 400 * MIB
    code = (
        "import time; block = bytearray(40 * 1024 * 1024); "
        "block[::4096] = b'x' * len(block[::4096]); time.sleep(0.5)"
    )
    workers = Workers([sys.executable, "-c", code], 1, dict(os.environ), tmp_path / "log")
    proc = workers.procs[0]
    assert workers.wait(timeout=30) == [0]
    assert 40 * MIB <= workers.own_peak_rss_kib < 200 * MIB
    assert Workers.peak_rss_kib >= workers.own_peak_rss_kib
    assert proc.returncode == 0
    del ballast


def test_an_exited_process_has_no_peak_to_read(tmp_path: Path) -> None:
    workers = Workers([sys.executable, "-c", "pass"], 1, dict(os.environ), tmp_path / "log")
    pid = workers.procs[0].pid
    assert workers.wait(timeout=30) == [0]
    assert vm_hwm_kib(pid) is None
