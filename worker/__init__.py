"""ladder's worker side, one subpackage per role (the README's "How it works" maps the rooms).

The documented library imports keep their short names: ``from worker import reader`` and
``from worker.history import history`` load ``worker.boards.reader`` and
``worker.store.history``. RQ jobs enqueued under the old flat names (``worker.jobs.*``) still
find their functions. Each alias is resolved only when imported, so ``worker.reader`` still
needs only redis.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

ALIASES = {
    "worker.reader": "worker.boards.reader",
    "worker.history": "worker.store.history",
    "worker.jobs": "worker.queue.jobs",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The target module ran when it was imported."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(ALIASES[fullname]))


if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())


def __getattr__(name: str) -> ModuleType:
    if f"worker.{name}" in ALIASES:
        return importlib.import_module(f"worker.{name}")
    raise AttributeError(f"module 'worker' has no attribute {name!r}")
