"""``ladder dev env|status|stop``: the embedded PostgreSQL and Redis of a development machine
(``worker.embedded``), which serve when DATABASE_URL or REDIS_URL is unset."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
from typing import TYPE_CHECKING, Any

from worker import datadir, embedded

if TYPE_CHECKING:
    from worker.bootstrap import Runtime


def register(subparsers: Any) -> None:
    dev = subparsers.add_parser(
        "dev",
        help="the embedded PostgreSQL and Redis (env, status, stop)",
        description="With DATABASE_URL or REDIS_URL unset, ladder starts an embedded "
        "PostgreSQL or Redis under LADDER_DATA_DIR (default ./.ladder/) and leaves it running "
        "for the next command. With LADDER_DATA_DIR unset and no server running under "
        "./.ladder/, a command uses the servers `ladder dev env` last started or found, from "
        "whatever folder it ran in.",
    )
    sub = dev.add_subparsers(dest="dev_command", required=True, metavar="ACTION")
    p = sub.add_parser(
        "env",
        help='print export lines for a shell: eval "$(ladder dev env)"',
        description="Start the embedded servers if they are not running and print "
        "`export REDIS_URL=... DATABASE_URL=...` lines (the URLs that are set, as they are), "
        "and one that puts the shipped redis-cli on PATH when there is none.",
    )
    p.set_defaults(handler=cmd_env)
    p = sub.add_parser("status", help="say whether each embedded server runs, and where")
    p.set_defaults(handler=cmd_status)
    p = sub.add_parser("stop", help="stop the embedded PostgreSQL and Redis")
    p.set_defaults(handler=cmd_stop)


def cmd_env(rt: Runtime, args: argparse.Namespace) -> int:
    database = rt.database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    if not (rt.given.redis_url and rt.given.database_url):
        datadir.record(rt.home.path)  # found from any folder: ``datadir.home``
    print(f"export REDIS_URL={shlex.quote(rt.redis_url)}")
    print(f"export DATABASE_URL={shlex.quote(database)}")
    if shutil.which("redis-cli") is None:  # the shipped one, so `redis-cli -u "$REDIS_URL"` works
        folder = os.path.dirname(embedded.redis_cli())
        print(f'export PATH={shlex.quote(folder)}:"$PATH"')
    return 0


def cmd_status(rt: Runtime, args: argparse.Namespace) -> int:
    where = rt.home.path
    found = embedded.status(where)
    for name, url in found:
        print(f"{name}: {'running at ' + url if url else 'not running'} ({where})")
    return 0 if all(url for _, url in found) else 1


def cmd_stop(rt: Runtime, args: argparse.Namespace) -> int:
    where = rt.home.path
    for name, was_running in embedded.stop(where):
        print(f"{name}: {'stopped' if was_running else 'was not running'} ({where})")
    return 0
