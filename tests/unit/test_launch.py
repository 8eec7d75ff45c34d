"""The ``ladder`` console script pauses the cyclic garbage collector while the program starts
up, and ``started`` switches it back on, with what start-up allocated frozen, before the
command runs. Called as a library (as the tests call ``main.main``), nothing touches the
collector."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from worker.entrypoints.cli import launch

# Run in a fresh interpreter: the console script's own path, with the command's handler
# replaced by a probe of the collector's state when the command starts, and a check of the
# state while the program was still starting (the settings are read then).
PROBE = """
import gc, json, sys
from worker.entrypoints.cli import launch
import worker.settings

seen = {}
read = worker.settings.Settings.from_env

def from_env():
    seen["enabled_while_starting"] = gc.isenabled()
    return read()

worker.settings.Settings.from_env = staticmethod(from_env)
import worker.entrypoints.cli.main as cli

def probe(rt, args):
    seen["enabled_when_run"] = gc.isenabled()
    seen["frozen_when_run"] = gc.get_freeze_count()
    return 0

cli.dispatch = probe
sys.argv = ["ladder", "config", "show"]
code = launch.main()
print(json.dumps({"code": code, **seen}))
"""


def test_the_console_script_pauses_the_collector_until_the_command_is_set_up() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    assert seen["enabled_while_starting"] is False
    assert seen["enabled_when_run"] is True
    # Modules, classes and the libraries' machinery: tens of thousands of objects frozen.
    assert seen["frozen_when_run"] > 10_000


def test_started_without_the_console_script_leaves_the_collector_alone() -> None:
    frozen = gc.get_freeze_count()
    enabled = gc.isenabled()
    launch.started()
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled() is enabled


def test_a_worker_collects_young_objects_in_batches_not_every_700_allocations() -> None:
    """A worker freezes what start-up allocated and raises the collector's first threshold:
    a batch keeps tens of thousands of objects alive until it ends, and CPython's default
    (700 on 3.11) walked them about 900 times in a drain of 20,000 events."""
    from worker.queue import runner

    probe = (
        "import gc, json\n"
        "from worker.queue import runner\n"
        "before = gc.get_threshold()\n"
        "runner.freeze_startup_objects()\n"
        "print(json.dumps([before, gc.get_threshold(), gc.get_freeze_count()]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    before, after, frozen = json.loads(done.stdout.strip().splitlines()[-1])
    assert after == [runner.YOUNG_THRESHOLD, before[1], before[2]]
    assert runner.YOUNG_THRESHOLD > before[0]
    assert frozen > 10_000
