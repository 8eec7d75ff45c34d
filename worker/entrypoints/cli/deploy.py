"""Subcommands for running ladder in containers: ``ladder health [--ready]`` and
``ladder deploy redis-acl``.

``health``: exit status 0 when every check passes, 1 otherwise, so the command works as a
Kubernetes exec probe or a compose healthcheck as it is. ``deploy redis-acl``: the Redis
``aclfile`` of SPEC 6's users with the passwords of ``LADDER_REDIS_PUBLISHER_PASSWORD``,
``LADDER_REDIS_READER_PASSWORD`` and ``LADDER_REDIS_WORKER_PASSWORD`` (stored hashed).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker import redis_acl
from worker.entrypoints.cli.terminal import Refused
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

    deploy = subparsers.add_parser("deploy", help="files for deploying ladder").add_subparsers(
        dest="deploy_command", required=True, metavar="{redis-acl}"
    )
    p = deploy.add_parser(
        "redis-acl",
        help="write the Redis ACL file (publisher, reader, worker; default user off)",
        description="Passwords from " + ", ".join(redis_acl.PASSWORD_ENV.values()) + "; "
        "they are written as SHA-256 hashes. Start Redis with --aclfile PATH.",
    )
    p.add_argument("--output", "-o", default="-", help="the file to write (default: stdout)")
    p.set_defaults(handler=cmd_redis_acl)


def cmd_redis_acl(rt: Runtime, args: argparse.Namespace) -> int:
    try:
        given = rt.given.redis_passwords
        text = redis_acl.from_env(
            {name: secret.get_secret_value() for name, secret in given.items()}
        )
    except redis_acl.AclError as exc:
        raise Refused(str(exc)) from None
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = Path(args.output)
    path.touch(mode=0o600)  # the hashes are for Redis and its operators alone
    path.chmod(0o600)
    path.write_text(text, encoding="utf-8")
    print(f"ladder: wrote {path} ({len(redis_acl.USERS)} users, default off)", file=sys.stderr)
    return 0


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
