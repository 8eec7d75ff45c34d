"""The Redis ACL users of SPEC 6 ("Access"), as the lines of a Redis ``aclfile``.

- ``publisher`` (game servers): ``RPUSH ladder:inbox`` and reading receipts, nothing else:
  ``GET ladder:receipt:*``, ``BLPOP ladder:receipt-wait:*``, and ``XREAD``, ``XREADGROUP``,
  ``XACK``, ``XREVRANGE`` (where the publishing helper starts reading) and ``XGROUP CREATE``
  on ``ladder:receipts``. Each in a selector of its own, so a publisher cannot push onto a
  wait list (a forged receipt for another server) or pop the inbox. Database 0 only
  (``SELECT 0`` and nothing else): the queue lives there.
- ``reader`` (``ladder serve``, services reading leaderboards): read-only commands and read-only
  key access on the leaderboard keys ``ladder:{<ladder>}:*``, receipt copies, and the dead
  letters' receipts (their event index and RQ job hashes); the board script by its SHA1 only
  (``EVALSHA_RO``), never a script of its own (no ``EVAL``, ``EVAL_RO``, ``SCRIPT LOAD``): a
  worker loads the board script (``worker.boards.active.sweeper``); and ``SET``/``EXISTS`` on
  ``ladder:console-logout:*``, where a console logout is kept.
- ``worker`` (``ladder worker`` and every ``ladder`` command, RQ included): ladder's and RQ's
  keys and RQ's channels, every command but the dangerous ones (``CLIENT LIST`` excepted: RQ
  reads its own address there; ``INFO`` for rq-dashboard); never ``FLUSHALL``/``FLUSHDB``,
  ``KEYS``, ``CONFIG``, ``DEBUG``, ``CLIENT KILL``.
- ``default``: off, so a connection without a user name can do nothing.

``render(passwords)`` writes the file; the committed ``deploy/redis/users.acl`` is
``render(PLACEHOLDERS)`` (a test keeps them equal). Real passwords go in as SHA-256 hashes
(``#<hex>``), so the file written by ``ladder deploy redis-acl`` holds no password.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from worker import keys

USERS = ("publisher", "reader", "worker")
PASSWORD_ENV = {user: f"LADDER_REDIS_{user.upper()}_PASSWORD" for user in USERS}
PLACEHOLDERS = {user: f"{user}-change-me" for user in USERS}
MIN_PASSWORD_LENGTH = 16

# What every client needs to connect: redis-py and node-redis say hello, ping and name
# themselves (redis-py ignores a refused CLIENT SETINFO, which Redis 7.0 does not know).
_CONNECT = "+ping +hello +echo +client|setname +client|id"

RULES: dict[str, str] = {
    "publisher": (
        f"{_CONNECT} +select|0 ~{keys.INBOX} +rpush"
        f" (%R~{keys.receipt('*')} +get)"
        f" (~{keys.receipt_wait('*')} +blpop)"
        f" (~{keys.RECEIPTS} +xread +xreadgroup +xack +xrevrange +xgroup|create)"
    ),
    # Scripts only by SHA1 and read-only (EVALSHA_RO, whose keys need read access only): the
    # ones a worker has loaded, each refused at its first write, keys checked as for any read.
    "reader": (
        f"{_CONNECT} +select %R~ladder:{{* %R~{keys.receipt('*')} %R~{keys.dlq_by_event('*')}"
        " %R~rq:failed:ladder %R~rq:job:ladder-dead-* %R~rq:results:ladder-dead-*"
        " +@read -@dangerous +evalsha_ro"
        f" (~{keys.console_logout('*')} +set +exists)"
    ),
    "worker": (
        "~ladder:* ~rq:* &rq:* +@all -@dangerous +info +client|list +client|setname +client|id"
    ),
}


class AclError(ValueError):
    """A password that cannot go into the file (one line, never the password)."""


def render(passwords: Mapping[str, str], hashed: bool = False) -> str:
    """The aclfile for these passwords (``hashed``: written as ``#<sha256>``)."""
    lines = ["user default off resetkeys resetchannels -@all"]
    for user in USERS:
        password = passwords[user]
        secret = f"#{hashlib.sha256(password.encode()).hexdigest()}" if hashed else f">{password}"
        lines.append(f"user {user} on {secret} resetkeys resetchannels -@all {RULES[user]}")
    return "\n".join(lines) + "\n"


def from_env(env: Mapping[str, str]) -> str:
    """The real aclfile, from ``LADDER_REDIS_<USER>_PASSWORD`` for each user."""
    passwords: dict[str, str] = {}
    for user, name in PASSWORD_ENV.items():
        password = env.get(name, "")
        if not password:
            raise AclError(f"{name} is not set (the {user} user's password)")
        if len(password) < MIN_PASSWORD_LENGTH or re.search(r"\s", password):
            raise AclError(f"{name}: at least {MIN_PASSWORD_LENGTH} characters, no spaces")
        if password == PLACEHOLDERS[user]:
            raise AclError(f"{name} is still the placeholder")
        passwords[user] = password
    if len(set(passwords.values())) < len(passwords):
        raise AclError("the publisher, reader and worker passwords must differ")
    return render(passwords, hashed=True)
