"""The ``ladder`` command line. Settings are read once here and passed down.

Exit codes: 0 done; 1 could not do it (a server unreachable, a file missing, nothing
matched); 2 asked wrongly (bad arguments or configuration, an unmigrated database, no
confirmation). An ordinary failure is one line on standard error naming what failed and
where; its traceback goes to the log at debug level only (``--log-level DEBUG``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from worker.entrypoints.cli.terminal import EXIT_FAILED, EXIT_USAGE, Refused, plural
from worker.gcpause import started
from worker.ladders import ConfigError
from worker.settings import Settings, SettingsError

if TYPE_CHECKING:
    from pydantic import SecretBytes

    from worker.bootstrap import Runtime

# Modules that add their own subcommands: ``register(subparsers)`` sets ``handler(rt, args)``.
COMMAND_MODULES: tuple[str, ...] = (
    "worker.entrypoints.cli.deploy",
    "worker.entrypoints.cli.read",
    "worker.entrypoints.cli.predict",
    "worker.entrypoints.cli.dlq",
    "worker.entrypoints.cli.ops",
    "worker.entrypoints.cli.verify",
    "worker.entrypoints.cli.archive",
    "worker.entrypoints.cli.analyse",
    "worker.entrypoints.cli.boards",
    "worker.entrypoints.cli.receipts",
    "worker.entrypoints.cli.moderate",
    "worker.entrypoints.cli.dev",
)
#: Commands defined in this module: parsing one of them imports none of COMMAND_MODULES, so a
#: burst worker's start-up does not pay for the operator commands' imports.
CORE_COMMANDS: frozenset[str] = frozenset({"migrate", "worker", "publish", "config"})
#: Commands that read or write the audit store: they check first that it is migrated (so does
#: ``player export|erase``, in its handler). Any other that meets a missing table is told the
#: same way (``_ordinary_failure``).
NEEDS_DATABASE: frozenset[str] = frozenset(
    {"worker", "rebuild", "reconcile", "season", "history", "preview", "serve", "verify"}
    | {"calibrate", "backtest"}
    | {"import", "event", "dlq"}
    | {"void", "ban", "unban", "adjust", "rerate"}
    | {"archive"}
)
DESCRIPTION = (
    "ladder rates finished games from a Redis queue into leaderboards and an audit store. "
    "Exit status: 0 done, 1 could not do it, 2 asked wrongly."
)
EPILOG = (
    "Environment: REDIS_URL, DATABASE_URL (when unset, an embedded Redis and PostgreSQL "
    "under LADDER_DATA_DIR, default ./.ladder/), LADDER_CONFIG. Start with `ladder migrate`, "
    "then `ladder worker`."
)
log = logging.getLogger("ladder")
EXIT_PIPE = 141  # as a command killed by SIGPIPE exits, in a shell


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = parser_for(given).parse_args(given)
    from worker.observability import logs

    logs.configure(args.log_level)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from worker.bootstrap import Runtime

    rt = Runtime(settings)
    try:
        if args.command in NEEDS_DATABASE:
            from worker.store.migrate import require_current

            for engine in rt.databases.all():  # every primary (``worker.store.routes``)
                require_current(engine)
        started()  # the collector back on, if the console script paused it for start-up
        return dispatch(rt, args)
    except ConfigError as exc:
        print(f"ladder: configuration refused: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # Whoever read the output stopped (``ladder page ... --json | head``): nothing to say.
        # Standard output goes to /dev/null, so that its flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:
        code, message = _ordinary_failure(exc, rt)
        if message is None:
            raise
        log.debug("traceback of the failure", exc_info=True)
        print(f"ladder: {message}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print("ladder: interrupted", file=sys.stderr)
        return 130
    finally:
        rt.close()


def dispatch(rt: Runtime, args: argparse.Namespace) -> int:
    """Run the parsed command's handler; a refusal is one line on stderr and its exit code."""
    try:
        result: int = args.handler(rt, args)
    except Refused as exc:
        print(f"ladder: {exc}", file=sys.stderr)
        return exc.code
    return result


def _ordinary_failure(exc: Exception, rt: Runtime) -> tuple[int, str | None]:
    """(exit code, one line) for a failure an operator can act on; (0, None) for a bug.
    PostgreSQL's failures come wrapped by SQLAlchemy, or bare from the commands that drive
    psycopg themselves (``ladder import``'s COPY)."""
    import psycopg
    from redis.exceptions import RedisError
    from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

    from worker.embedded import EmbeddedError
    from worker.store.migrate import NotMigrated, require_current

    if isinstance(exc, EmbeddedError):
        return EXIT_FAILED, str(exc)
    if isinstance(exc, ProgrammingError | psycopg.errors.UndefinedTable):  # unmigrated: said so
        try:
            for engine in rt.databases.all():
                require_current(engine)
        except NotMigrated as behind:
            exc = behind
        except Exception:  # the first failure is the one to report
            pass
    if isinstance(exc, SettingsError | NotMigrated):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, EOFError):
        return EXIT_USAGE, "no answer (end of input): nothing done"
    if isinstance(exc, RedisError):
        url = rt.__dict__.get("redis_url", rt.given.redis_url)
        return EXIT_FAILED, f"Redis at {_hide_password(url)} failed: {_first(exc)}"
    if isinstance(exc, OperationalError | DBAPIError | psycopg.Error):
        said = _first(getattr(exc, "orig", None) or exc)  # the driver's own line
        databases = rt.__dict__.get("databases")
        if databases is not None and databases.routes:  # which primary: the driver's line says
            return EXIT_FAILED, f"a database failed: {_hide_password(said)}"
        url = rt.__dict__.get("database_url", rt.given.database_url)
        where = _hide_password(url).replace("+psycopg", "", 1)
        return EXIT_FAILED, f"the database at {where} failed: {said}"
    if isinstance(exc, OSError):
        name = f" {exc.filename}" if exc.filename else ""
        return EXIT_FAILED, f"cannot open{name}: {exc.strerror or exc}"
    return 0, None


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _hide_password(url: str) -> str:
    return re.sub(r"//([^:/@]*):[^@/]*@", r"//\1:***@", url)


def _level(text: str) -> str:
    from worker.observability.logs import LEVELS

    if text.upper() not in LEVELS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a log level; use one of {', '.join(LEVELS)}"
        )
    return text.upper()


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: a core command's parser imports no other command module."""
    return _parser(all_commands=_command_word(argv) not in CORE_COMMANDS)


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option or the value of
    ``--log-level``), or None when there is none (``--help``, ``--version``, nothing)."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _parser(*, all_commands: bool = True) -> argparse.ArgumentParser:
    """The whole command line; with ``all_commands`` false, only the commands defined here
    (the other modules' commands are then unknown to it)."""
    parser = argparse.ArgumentParser(prog="ladder", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=_level,
        metavar="LEVEL",
        help="DEBUG, INFO (default), WARNING, ERROR or CRITICAL; RQ's lines included",
    )
    parser.add_argument("--version", action="version", version=f"ladder {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("migrate", help="create or upgrade the PostgreSQL schema")
    p.set_defaults(handler=cmd_migrate)

    p = sub.add_parser("worker", help="run a worker")
    p.add_argument("--burst", action="store_true", help="drain inbox and queue, then exit")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("publish", help="publish JSON-lines events to the inbox")
    p.add_argument("file", help="a file of one JSON event per line, or - for standard input")
    p.add_argument(
        "--publisher",
        help="sign each event as this publisher, with the secret in LADDER_PUBLISH_SECRET",
    )
    p.add_argument("--wait", action="store_true", help="print each event's receipt as it arrives")
    p.add_argument(
        "--timeout", type=float, default=10.0, help="--wait: seconds after publishing (10)"
    )
    p.add_argument("--json", action="store_true", help="--wait: receipts as JSON lines")
    p.set_defaults(handler=cmd_publish)

    for module in COMMAND_MODULES if all_commands else ():
        importlib.import_module(module).register(sub)

    config = sub.add_parser("config", help="the ladder configuration").add_subparsers(
        dest="config_command", required=True, metavar="{show}"
    )
    p = config.add_parser("show", help="print the effective configuration")
    p.add_argument(
        "--path",
        action="store_true",
        help="print the configuration as JSON, then the path of the file in use as the last line",
    )
    p.set_defaults(handler=cmd_config_show)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ladder")
    except PackageNotFoundError:
        return "unknown"


def cmd_migrate(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.store.migrate import shown_url, upgrade

    for engine in rt.databases.all():  # every primary once, the default first
        done = upgrade(engine)
        print(f"ladder: {done.describe()} ({shown_url(engine)})")
    return 0


def cmd_worker(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.entrypoints.worker import runner

    rt.config  # refuse a broken configuration before touching the queue  # noqa: B018
    if rt.settings.network_key_is_default:  # a worker's every line is its JSON log's
        import structlog

        structlog.get_logger("ladder").warning(
            "LADDER_NETWORK_KEY is not set; raw IPs are hashed with a development key"
        )
    if args.burst:
        runner.run_burst(rt)
    else:
        runner.run_forever(rt)
    return 0


def cmd_publish(rt: Runtime, args: argparse.Namespace) -> int:
    from worker import keys

    signer = _signer(args.publisher, rt.given.publish_secret) if args.publisher else None
    lines = _event_lines(args.file, signer)
    if args.wait:
        from worker.entrypoints.cli.receipts import cmd_publish_wait

        return cmd_publish_wait(rt, args, lines)
    count = 0
    with rt.redis.pipeline(transaction=False) as pipe:
        try:
            for line in lines:
                pipe.rpush(keys.INBOX, line)
                count += 1
                if count % 1000 == 0:
                    pipe.execute()
        except ValueError as exc:
            sent = count - count % 1000  # the chunks already sent
            raise Refused(f"{exc}; published {plural(sent, 'event')} before it") from None
        pipe.execute()
    print(f"ladder: published {plural(count, 'event')}", file=sys.stderr)
    return 0


def _event_lines(path: str, signer: Callable[[str], str] | None) -> Iterator[str]:
    """The lines of ``path`` (``-``: standard input) that are not blank, stripped and signed;
    a ``ValueError`` says where one could not be read or signed."""
    stream: TextIO = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    number = 0
    with stream:
        try:
            for line in stream:
                number += 1
                line = line.strip()
                if line:
                    yield line if signer is None else signer(line)
        except ValueError as exc:  # not UTF-8, or a line to sign that is not a JSON object
            if isinstance(exc, UnicodeDecodeError):
                raise ValueError(f"{path} is not UTF-8 text") from None
            raise ValueError(f"{path} line {number}: {exc}") from None


def _signer(publisher: str, given: SecretBytes | None) -> Any:
    from schemas.signing import sign

    if given is None:
        raise SettingsError("--publisher needs the secret in LADDER_PUBLISH_SECRET")
    secret = given.get_secret_value()

    def signed(line: str) -> str:
        try:
            event = json.loads(line)
        except ValueError:
            raise ValueError("not JSON, so it cannot be signed") from None
        if not isinstance(event, dict):
            raise ValueError("not a JSON object, so it cannot be signed")
        return json.dumps(sign(event, publisher, secret), ensure_ascii=False)

    return signed


def cmd_config_show(rt: Runtime, args: argparse.Namespace) -> int:
    config = rt.config
    shown = {name: ladder.as_table() for name, ladder in config.ladders.items()}
    print(json.dumps(shown, indent=2))
    if args.path:
        print(Path(config.path).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
