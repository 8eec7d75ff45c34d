"""The documented library imports and the queued job names survive the layout of worker/."""

from __future__ import annotations

import importlib

import pytest
from rq.utils import import_attribute


def test_the_readme_library_imports_load_the_modules_of_their_rooms() -> None:
    """README, Reading leaderboards: ``from worker import reader``, ``worker.history``."""
    # an alias module that worker/__init__.py registers at import time, unseen by mypy
    from worker.history import history  # type: ignore[import-not-found]

    from worker import reader

    assert reader is importlib.import_module("worker.boards.reader")
    assert history is importlib.import_module("worker.store.history").history


def test_a_job_enqueued_under_the_old_name_finds_its_function() -> None:
    """A batch queued as ``worker.jobs.process_batch`` before an upgrade still runs."""
    from worker.queue import jobs

    assert import_attribute("worker.jobs.process_batch") is jobs.process_batch
    assert import_attribute("worker.jobs.process_event") is jobs.process_event


def test_an_unknown_name_is_still_an_error() -> None:
    """Only the listed names are aliases: anything else is missing as before."""
    import worker

    with pytest.raises(AttributeError):
        _ = worker.config
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("worker.cli_ops")
