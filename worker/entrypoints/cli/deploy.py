"""Subcommands for running ladder in containers: ``ladder health [--ready]``.

Exit status 0 when every check passes, 1 otherwise, so the command works as a Kubernetes
exec probe or a compose healthcheck as it is.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING, Any

from worker.observability import health

if TYPE_CHECKING:
    from worker.bootstrap import Runtime


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "health",
        help="liveness: Redis answers; --ready: every store (exit 0 healthy, 1 not)",
        description="Without --ready this checks Redis only (the queue's, REDIS_URL): a "
        "liveness probe that PostgreSQL being away does not fail. With --ready it checks "
        "every store the process uses: the queue Redis, the leaderboard Redis "
        "(LEADERBOARD_REDIS_URL, when it is another), PostgreSQL (DATABASE_URL) and its "
        "schema at the newest migration.",
    )
    p.add_argument(
        "--ready",
        action="store_true",
        help="readiness: every store the process uses, and the schema (without it: Redis only)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=health.DEFAULT_TIMEOUT,
        help="seconds allowed per check (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the checks as a JSON array")
    p.set_defaults(handler=cmd_health)


def cmd_health(rt: Runtime, args: argparse.Namespace) -> int:
    logging.getLogger("alembic").setLevel(logging.WARNING)  # a probe prints its checks only
    run = health.ready if args.ready else health.alive
    checks = run(rt.settings, timeout=args.timeout)
    if args.json:
        print(json.dumps([check.as_json() for check in checks]))
    else:
        for check in checks:
            mark = "ok  " if check.ok else "FAIL"
            print(f"{mark} {check.name} ({check.duration_ms:.1f} ms): {check.detail}")
    return 0 if all(check.ok for check in checks) else 1
