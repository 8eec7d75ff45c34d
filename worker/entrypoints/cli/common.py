"""What the read commands share: a parser taking the ladder (``read_command``), the ``--board``
option, the ladder-and-board check, the number parsers and the guard that turns the reader's
refusals into one line and an exit code.

An unknown ladder or board exits 2 (``EXIT_USAGE``), an unknown player 1, Redis or
PostgreSQL unreachable 1, each with one ``ladder: ...`` line on standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from worker.boards import reader
from worker.entrypoints.cli.terminal import EXIT_USAGE, Refused, configured_ladder

if TYPE_CHECKING:
    from worker.bootstrap import Runtime

EXIT_UNKNOWN_PLAYER = 1
Handler = Callable[[Any, argparse.Namespace], int]


def read_command(sub: Any, name: str, handler: Handler, **about: Any) -> argparse.ArgumentParser:
    """The parser of the read command ``name LADDER ...``, its handler ``guarded``."""
    p: argparse.ArgumentParser = sub.add_parser(name, **about)
    p.add_argument("ladder")
    p.set_defaults(handler=guarded(handler))
    return p


def board_option(p: argparse.ArgumentParser, *, with_json: bool = True) -> None:
    """``--board`` (default rating) and, unless ``with_json`` is false, ``--json``."""
    p.add_argument("--board", default="rating", help="rating, public, boosted, active, season:<n>")
    if with_json:
        p.add_argument("--json", action="store_true")


def board_ladder(rt: Runtime, args: argparse.Namespace) -> Any:
    """The configured ladder of ``args.ladder``, once ``args.board`` (if any) is on it."""
    ladder_config = configured_ladder(rt.config, args.ladder)
    board = getattr(args, "board", None)
    if board is not None:
        key = reader.board_key(args.ladder, board)
        if not reader.board_available(ladder_config, board):
            raise Refused(f"ladder {args.ladder!r} has no {board} board", EXIT_USAGE)
        if board.startswith(reader.SEASON_PREFIX) and not rt.leaderboard_redis.exists(key):
            raise Refused(f"ladder {args.ladder!r} has no archived {board}", EXIT_USAGE)
    return ladder_config


def print_json(value: Any) -> None:
    print(json.dumps(value))


def positive(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative(text: str) -> int:
    value = whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def guarded(handler: Handler) -> Handler:
    """Turn the reader's refusals into one line on standard error and an exit code."""

    def run(rt: Runtime, args: argparse.Namespace) -> int:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
        from sqlalchemy.exc import DBAPIError

        try:
            return handler(rt, args)
        except Refused as exc:
            print(f"ladder: {exc}", file=sys.stderr)
            return exc.code
        except reader.UnknownPlayer as exc:
            print(f"ladder: {exc.args[0]}", file=sys.stderr)
            return EXIT_UNKNOWN_PLAYER
        except reader.InvalidArgument as exc:
            print(f"ladder: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (RedisConnectionError, RedisTimeoutError) as exc:
            print(f"ladder: cannot read the leaderboards from Redis: {exc}", file=sys.stderr)
            return 1
        except DBAPIError as exc:
            print(f"ladder: cannot read the audit store: {exc.orig}", file=sys.stderr)
            return 1

    return run
