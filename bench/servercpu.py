"""CPU time per event by process, around a drain: PostgreSQL's, Redis's and the machine's.

A drain's rate on a shared machine moves with its neighbours' load; the CPU each process
spends on an event moves far less, and it is what bounds a drain once the machine's cores are
busy (two workers, PostgreSQL and Redis on two cores). Read from ``/proc`` (Linux; elsewhere
every figure is None):

- PostgreSQL: every process named ``postgres`` (the server, its backends and workers), user and
  system time, with the children time the server collects from the backends that exited;
- Redis: every process named ``redis-server``;
- the machine: the busy time of ``/proc/stat`` (every process, these and the drain's own;
  not the time a hypervisor gave to other machines, ``steal``, which is none of this one's
  work);
- the rest: the machine's less the two (the workers, or the floor script, and anything else
  the machine ran meanwhile).

A backend that exits during the window has its CPU from before the window counted again in
the server's children time: the figures are for drains of many events, not for a statement.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
SERVERS = {"postgres": "postgres", "redis": "redis-server"}


@dataclass(frozen=True)
class Sample:
    """CPU seconds so far: per server (``SERVERS``) and the machine's busy time."""

    servers: dict[str, float]
    machine: float


def sample() -> Sample | None:
    """The CPU spent so far, or None where ``/proc`` is not there to read."""
    stat = PROC / "stat"
    if not stat.exists():
        return None
    hertz = os.sysconf("SC_CLK_TCK")
    servers = dict.fromkeys(SERVERS, 0.0)
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        for label, process in SERVERS.items():
            if name == process:  # utime, stime, cutime, cstime
                servers[label] += sum(int(x) for x in fields[11:15]) / hertz
    user, nice, system, _idle, _wait, irq, softirq = map(
        int, stat.read_text().splitlines()[0].split()[1:8]
    )
    return Sample(servers, (user + nice + system + irq + softirq) / hertz)


def per_event(before: Sample | None, after: Sample | None, events: int) -> dict[str, int] | None:
    """Microseconds of CPU per event between two samples: each server's, the machine's and
    the rest (the machine's less the servers')."""
    if before is None or after is None or events <= 0:
        return None
    found = {k: (after.servers[k] - before.servers[k]) * 1e6 / events for k in SERVERS}
    machine = (after.machine - before.machine) * 1e6 / events
    out = {k: round(v) for k, v in found.items()}
    out["rest"] = round(machine - sum(found.values()))
    out["machine"] = round(machine)
    return out
