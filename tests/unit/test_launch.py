"""The ``ladder`` console script pauses the cyclic garbage collector while the program starts
up, and ``started`` switches it back on, with what start-up allocated frozen, before the
command runs. Called as a library (as the tests call ``main.main``), nothing touches the
collector."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from worker import gcpause

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
    gcpause.started()
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled() is enabled
