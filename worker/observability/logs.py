"""Logging set-up: one JSON line per processed event on standard error, and one level for
every line: ladder's own (structlog), RQ's and the libraries' (``--log-level``).

Every line is one JSON object: the standard library's loggers (RQ's, alembic's, any
library's, and Python's warnings) go through the same processors as ladder's own, by
``structlog.stdlib.ProcessorFormatter`` on the one root handler, with ``logger`` naming
where a line came from. A traceback is a field (``exception``), never lines of its own.
"""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_level = logging.INFO


def configure(level: str = "INFO") -> None:
    """``level`` is one of :data:`LEVELS` (any case); anything else is a ``ValueError``."""
    global _level
    name = level.upper()
    if name not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
    _level = logging.getLevelName(name)
    handler = logging.StreamHandler(sys.stderr)  # one write a line, as structlog's own
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    logging.basicConfig(handlers=[handler], level=_level, force=True)
    logging.captureWarnings(True)  # a Python warning is a log line too
    import rq.worker  # noqa: F401  (it sets its loggers' levels when imported: set ours after)

    for name in ("rq", "rq.worker", "rq.job", "rq.scheduler", "rq.queue"):
        logging.getLogger(name).setLevel(rq_level())
    logging.getLogger("alembic").setLevel(rq_level())  # its start-up chatter, as RQ's
    logging.getLogger("rq.worker").addFilter(_still_invalid_is_no_error)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level),
        # One write per line (``print`` wrote the line and its newline apart): workers that
        # share a log file never splice their lines together.
        logger_factory=structlog.WriteLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def rq_level() -> str:
    """RQ's and alembic's level: the configured one, but their routine chatter ("Job OK",
    "Context impl") starts at WARNING unless DEBUG was asked for."""
    return logging.getLevelName(_level if _level == logging.DEBUG else max(_level, logging.WARNING))


def _still_invalid_is_no_error(record: logging.LogRecord) -> bool:
    """A replayed event that is still invalid goes back to the dead-letter queue: an expected
    outcome, logged as one line without the traceback RQ puts in its message."""
    args = record.args if isinstance(record.args, tuple) else ()
    trace = str(args[-1]) if args else ""
    if "EventStillInvalid" not in trace:
        return True
    why = trace.strip().splitlines()[-1].partition(": ")[2]
    job_id = args[1] if len(args) > 2 else "?"
    record.msg = "replayed dead letter %s is still invalid and back in the queue: %s"
    record.args = (job_id, why)
    record.exc_info, record.exc_text = None, None
    record.levelno, record.levelname = logging.WARNING, "WARNING"
    return _level <= logging.WARNING
