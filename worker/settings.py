"""Settings, built once from the environment in ``main()`` and passed down."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "sqlite:///ladder.sqlite3"
DEV_NETWORK_KEY = b"ladder-development-network-key"


class SettingsError(ValueError):
    """The environment does not describe a usable configuration."""


@dataclass(frozen=True)
class Settings:
    redis_url: str = DEFAULT_REDIS_URL
    leaderboard_redis_url: str | None = None  # leaderboards elsewhere (may be a Redis Cluster)
    database_url: str = DEFAULT_DATABASE_URL
    database_is_default: bool = False  # DATABASE_URL unset: the embedded SQLite file
    ladder_config: Path | None = None
    network_key: bytes = field(default=DEV_NETWORK_KEY, repr=False)
    network_key_is_default: bool = True
    production: bool = False
    batch_size: int = 1000
    job_timeout: int = 60
    job_retries: int = 5
    job_retry_intervals: tuple[int, ...] = (1, 5, 15, 60, 300)
    dead_letter_ttl_days: int = 30
    dead_letters_in_redis: int = 100_000  # beyond it the oldest move to PostgreSQL
    max_event_bytes: int = 65536
    metrics_port: int = 9108  # Prometheus metrics and /healthz of ``ladder worker``; 0 = off
    publisher_secrets: dict[str, bytes] = field(default_factory=dict, repr=False)
    publisher_ladders: dict[str, frozenset[str]] = field(default_factory=dict)
    require_signature: bool = False
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For ``ladder serve`` believes

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        production = env.get("LADDER_ENV", "").lower() == "production"
        key = env.get("LADDER_NETWORK_KEY", "")
        if production and not key:
            raise SettingsError("LADDER_NETWORK_KEY is required when LADDER_ENV=production")
        config = env.get("LADDER_CONFIG") or None
        database_url = env.get("DATABASE_URL") or ""
        if production and not database_url:
            raise SettingsError(
                "DATABASE_URL is required when LADDER_ENV=production "
                "(the embedded SQLite file is for a single-process demo)"
            )
        try:
            batch_size = int(env.get("LADDER_BATCH_SIZE", "1000"))
            ttl_days = int(env.get("LADDER_DLQ_TTL_DAYS", "30"))
            dlq_max = int(env.get("LADDER_DLQ_MAX", "100000"))
            metrics_port = int(env.get("LADDER_METRICS_PORT", "9108"))
            job_timeout = int(env.get("LADDER_JOB_TIMEOUT", "60"))
            retries = int(env.get("LADDER_JOB_RETRIES", "5"))
            intervals = tuple(
                int(part) for part in env.get("LADDER_RETRY_INTERVALS", "1,5,15,60,300").split(",")
            )
        except ValueError as exc:
            raise SettingsError(f"not a whole number: {exc}") from None
        if not 0 <= retries <= 100:
            raise SettingsError("LADDER_JOB_RETRIES must be between 0 and 100")
        if not intervals or any(i < 0 for i in intervals):
            raise SettingsError("LADDER_RETRY_INTERVALS must be seconds >= 0, e.g. 1,5,15,60,300")
        secrets, scopes = parse_publishers(env.get("LADDER_PUBLISHER_SECRETS", ""))
        require = env.get("LADDER_REQUIRE_SIGNATURE", "").lower() in ("1", "true", "yes")
        if require and not secrets:
            raise SettingsError("LADDER_REQUIRE_SIGNATURE needs LADDER_PUBLISHER_SECRETS")
        if ttl_days < 0:
            raise SettingsError("LADDER_DLQ_TTL_DAYS must be 0 (keep until acted on) or more")
        if dlq_max < 1:
            raise SettingsError("LADDER_DLQ_MAX must be at least 1")
        if job_timeout < 1:
            raise SettingsError("LADDER_JOB_TIMEOUT must be at least 1 second")
        if not 1 <= batch_size <= 2000:
            raise SettingsError("LADDER_BATCH_SIZE must be between 1 and 2000")
        if not 0 <= metrics_port <= 65535:
            raise SettingsError("LADDER_METRICS_PORT must be a port number, or 0 for none")
        return cls(
            redis_url=env.get("REDIS_URL") or DEFAULT_REDIS_URL,
            leaderboard_redis_url=env.get("LEADERBOARD_REDIS_URL") or None,
            database_url=normalise_database_url(database_url or DEFAULT_DATABASE_URL),
            database_is_default=not database_url,
            ladder_config=Path(config) if config else None,
            network_key=key.encode() if key else DEV_NETWORK_KEY,
            network_key_is_default=not key,
            production=production,
            batch_size=batch_size,
            job_timeout=job_timeout,
            job_retries=retries,
            job_retry_intervals=retry_intervals(retries, intervals),
            dead_letter_ttl_days=ttl_days,
            dead_letters_in_redis=dlq_max,
            metrics_port=metrics_port,
            publisher_secrets=secrets,
            publisher_ladders=scopes,
            require_signature=require,
            trusted_proxies=tuple(
                p.strip() for p in env.get("LADDER_TRUSTED_PROXIES", "").split(",") if p.strip()
            ),
        )


_LADDER_LIST = re.compile(r"[A-Za-z0-9_.-]+(\|[A-Za-z0-9_.-]+)*|\*")
_PUBLISHERS_FORM = (
    "LADDER_PUBLISHER_SECRETS must look like name:secret or name:secret:ladder1|ladder2, "
    "comma-separated"
)


def parse_publishers(spec: str) -> tuple[dict[str, bytes], dict[str, frozenset[str]]]:
    """``name:secret[:ladder1|ladder2],...``: each publisher's secret, and the ladders it may
    publish to when it is limited (``*`` or no list: every ladder). A secret may not contain a
    comma; one that contains a colon must be followed by its ladder list (``:*`` for all).
    Never logged."""
    secrets: dict[str, bytes] = {}
    scopes: dict[str, frozenset[str]] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, rest = item.partition(":")
        secret, colon, ladders = rest.rpartition(":")
        if not colon or not _LADDER_LIST.fullmatch(ladders):
            secret, ladders = rest, "*"
        if not sep or not name or not secret:
            raise SettingsError(_PUBLISHERS_FORM)
        if name in secrets:
            raise SettingsError(f"LADDER_PUBLISHER_SECRETS names publisher {name!r} twice")
        secrets[name] = secret.encode()
        if ladders != "*":
            scopes[name] = frozenset(ladders.split("|"))
    return secrets, scopes


def retry_intervals(retries: int, intervals: tuple[int, ...]) -> tuple[int, ...]:
    """One back-off per retry: extra values are dropped, the last one repeats if too few.

    RQ picks the wait before retry n as ``intervals[len(intervals) - retries_left]``, so a list
    longer than the number of retries would skip its first values.
    """
    if retries == 0:
        return ()
    return (intervals + (intervals[-1],) * retries)[:retries]


def normalise_database_url(url: str) -> str:
    """Let a plain ``postgresql://`` URL select psycopg 3 (SQLAlchemy would pick psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
