"""The documented library imports load their rooms; the short names of an older layout are gone."""

from __future__ import annotations

import importlib

import pytest
from rq.utils import import_attribute


def test_the_documented_library_imports_load_the_modules_of_their_rooms() -> None:
    """docs/reading.md: ``from worker.boards import reader``, ``worker.store.history``."""
    from worker.boards import reader
    from worker.store.history import history

    assert reader.__name__ == "worker.boards.reader"
    assert callable(history)


def test_the_queued_job_names_find_their_functions() -> None:
    """The job names the inbox and the dead-letter queue enqueue are importable."""
    from worker.queue import deadletter, inbox, jobs

    assert import_attribute(inbox.PROCESS_BATCH) is jobs.process_batch
    assert import_attribute(deadletter.PROCESS_EVENT) is jobs.process_event


@pytest.mark.parametrize("old", ["worker.reader", "worker.history", "worker.jobs"])
def test_the_short_names_of_the_older_layout_are_not_importable(old: str) -> None:
    """Nothing was released under them: no alias keeps them alive."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
