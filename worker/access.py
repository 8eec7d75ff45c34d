"""Who may read what over HTTP (SPEC 6, "Access"): API tokens, their scopes, and the scopes
anonymous callers get.

``LADDER_API_TOKENS=name:token:scope1|scope2,...`` (or the same entries, one a line or
comma-separated, in the file named by ``LADDER_API_TOKENS_FILE``) names each caller, its
secret and what it may read; ``LADDER_PUBLIC_SCOPES`` (default ``boards``; empty: none) what
a caller without a token gets. A token is at least ``MIN_TOKEN_LENGTH`` characters and may
contain ``:`` but not ``,``; it is held as a ``SecretStr`` and no message or log line carries
it (a refusal names the entry by its position or its name).

``Access.caller`` looks a presented token up in constant time: both sides are hashed to the
same length first and every configured token is compared, so neither the time taken nor an
early exit tells how much of a guess was right.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, SecretStr

MIN_TOKEN_LENGTH = 16
SESSION_SECONDS = 12 * 3600  # a console login lasts this long
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_FORM = "LADDER_API_TOKENS entries look like name:token:scope1|scope2, comma-separated"


class Scope(StrEnum):
    """What a token may read (SPEC 6)."""

    BOARDS = "boards"  # ladders, top, page, rank, around, among, a player's card, predictions
    HISTORY = "history"  # a player's rating changes, event receipts, previews
    EXPORT = "export"  # the export: every player of a board at once
    CONSOLE = "console"  # the HTML console (/ and /ui/...)


DEFAULT_PUBLIC = frozenset({Scope.BOARDS})


class AccessError(ValueError):
    """The token configuration cannot be used (one line, never the token)."""


class ApiToken(BaseModel):
    """One caller: its name (shown in refusals), its secret and its scopes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    token: SecretStr
    scopes: frozenset[Scope]


def parse_scopes(text: str, where: str) -> frozenset[Scope]:
    """``boards|history`` or ``boards,history`` (blank: none); an unknown word is refused."""
    words = [w for w in re.split(r"[|,\s]+", text.strip()) if w]
    known = {s.value for s in Scope}
    for word in words:
        if word not in known:
            raise AccessError(
                f"{where}: unknown scope {word!r} (scopes: {', '.join(s.value for s in Scope)})"
            )
    return frozenset(Scope(w) for w in words)


def parse_tokens(entries: Iterable[str], source: str = "LADDER_API_TOKENS") -> tuple[ApiToken, ...]:
    """The tokens of ``name:token:scope|scope`` entries (blank ones and ``#`` lines skipped)."""
    found: list[ApiToken] = []
    for number, entry in enumerate(entries, 1):
        entry = entry.strip()
        if not entry or entry.startswith("#"):
            continue
        name, sep, rest = entry.partition(":")
        token, colon, scopes = rest.rpartition(":")
        where = f"{source} entry {number}"
        if not sep or not colon or not name or not token:
            raise AccessError(f"{where}: {_FORM}")
        if not _NAME.fullmatch(name):
            raise AccessError(f"{where}: a token's name is letters, digits, '_', '.' or '-'")
        where = f"{source} token {name!r}"
        if len(token) < MIN_TOKEN_LENGTH:
            raise AccessError(f"{where} is shorter than {MIN_TOKEN_LENGTH} characters")
        given = parse_scopes(scopes, where)
        if not given:
            raise AccessError(f"{where} has no scope")
        if any(t.name == name for t in found):
            raise AccessError(f"{source} names token {name!r} twice")
        if any(hmac.compare_digest(t.token.get_secret_value(), token) for t in found):
            raise AccessError(f"{where} repeats the token of another entry")
        found.append(ApiToken(name=name, token=SecretStr(token), scopes=given))
    return tuple(found)


def tokens_from_env(env: Mapping[str, str]) -> tuple[ApiToken, ...]:
    """``LADDER_API_TOKENS``, or the file ``LADDER_API_TOKENS_FILE`` names (not both)."""
    inline = env.get("LADDER_API_TOKENS", "")
    path = env.get("LADDER_API_TOKENS_FILE", "")
    if inline.strip() and path:
        raise AccessError("set LADDER_API_TOKENS or LADDER_API_TOKENS_FILE, not both")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise AccessError(f"LADDER_API_TOKENS_FILE {path}: {reason}") from None
        entries = [part for line in text.splitlines() for part in line.split(",")]
        return parse_tokens(entries, "LADDER_API_TOKENS_FILE")
    return parse_tokens(inline.split(","))


def public_from_env(env: Mapping[str, str]) -> frozenset[Scope]:
    """``LADDER_PUBLIC_SCOPES``: unset is ``boards``, an empty value is nothing."""
    if "LADDER_PUBLIC_SCOPES" not in env:
        return DEFAULT_PUBLIC
    return parse_scopes(env["LADDER_PUBLIC_SCOPES"], "LADDER_PUBLIC_SCOPES")


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Access:
    """The tokens and the public scopes one ``ladder serve`` answers by."""

    tokens: tuple[ApiToken, ...] = ()
    public: frozenset[Scope] = DEFAULT_PUBLIC

    def caller(self, presented: str) -> ApiToken | None:
        """The token ``presented`` is, compared in constant time with every one configured."""
        given = _digest(presented)
        match: ApiToken | None = None
        for token in self.tokens:
            if hmac.compare_digest(given, _digest(token.token.get_secret_value())):
                match = token
        return match

    def session(self, token: ApiToken, now: float | None = None) -> str:
        """A console session cookie's value for ``token``: its name, an expiry and a MAC keyed
        with the token itself, so no token is stored in the browser, every ``ladder serve``
        with the same tokens accepts it, and removing the token ends its sessions."""
        expires = int((time.time() if now is None else now) + SESSION_SECONDS)
        return f"{token.name}.{expires}.{_mac(token, expires)}"

    def session_caller(self, value: str, now: float | None = None) -> ApiToken | None:
        """The token a session cookie was made for, while it is valid."""
        name, _, rest = value.rpartition(".")
        name, _, expires = name.rpartition(".")
        if not expires.isdigit() or int(expires) < (time.time() if now is None else now):
            return None
        for token in self.tokens:
            if token.name == name and hmac.compare_digest(rest, _mac(token, int(expires))):
                return token
        return None


def _mac(token: ApiToken, expires: int) -> str:
    key = token.token.get_secret_value().encode("utf-8", "surrogatepass")
    message = f"ladder-console-session:{token.name}:{expires}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()
