"""Settings, built once from the environment in ``main()`` and passed down."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretBytes,
    SecretStr,
    ValidationError,
    field_validator,
)

from worker import access, failpoints, redis_acl

DEFAULT_DATA_DIR = Path(".ladder")
DEV_NETWORK_KEY = b"ladder-development-network-key"


class SettingsError(ValueError):
    """The environment does not describe a usable configuration."""


@dataclass(frozen=True)
class Whole:
    """A whole-number setting, stated once: the variable it is read from, its default and its
    range. The field's default and bounds, the default of the variable and the refusal of a
    value out of range are all derived from it."""

    variable: str
    default: int
    least: int
    most: int | None = None
    unit: str = ""  # what a number counts, when the name does not say: "second"
    zero: str = ""  # what 0 means, when it means something of its own

    def field(self) -> Any:
        return Field(self.default, ge=self.least, le=self.most)

    def read(self, env: Mapping[str, str]) -> int:
        text = env.get(self.variable, "")
        try:
            return int(text) if text else self.default
        except ValueError:
            raise SettingsError(f"{self.variable}: not a whole number: {text!r}") from None

    def refusal(self) -> str:
        """One line naming the variable and its range (a refused value's message)."""
        if self.most is not None:
            said = f"between {self.least} and {self.most}"
        else:
            unit = f" {self.unit}{'' if self.least == 1 else 's'}" if self.unit else ""
            said = f"at least {self.least}{unit}"
        return f"{self.variable} must be {said}" + (f" (0: {self.zero})" if self.zero else "")


# Every whole-number setting read from the environment, by the field it sets.
WHOLE = {
    "batch_size": Whole("LADDER_BATCH_SIZE", 1000, 1, 2000),
    "job_timeout": Whole("LADDER_JOB_TIMEOUT", 60, 1, unit="second"),
    "job_retries": Whole("LADDER_JOB_RETRIES", 5, 0, 100),
    "dead_letter_ttl_days": Whole("LADDER_DLQ_TTL_DAYS", 30, 0, zero="keep until acted on"),
    # beyond it the oldest dead letters move to PostgreSQL
    "dead_letters_in_redis": Whole("LADDER_DLQ_MAX", 100_000, 1),
    # metrics and /healthz of ``ladder worker``
    "metrics_port": Whole("LADDER_METRICS_PORT", 9108, 0, 65535, zero="none"),
    # the receipt stream's approximate MAXLEN
    "receipts_maxlen": Whole("LADDER_RECEIPTS_MAXLEN", 1_000_000, 1),
    # seconds ladder:receipt:<event_id> is kept
    "receipt_ttl": Whole("LADDER_RECEIPT_TTL", 86_400, 1, unit="second"),
    # the largest event taken; a larger one is refused unread (``schemas.oversized``)
    "max_event_bytes": Whole("LADDER_MAX_EVENT_BYTES", 65_536, 1, unit="byte"),
}
# The back-off before each retry, in seconds (one per retry: ``retry_intervals``).
RETRY_INTERVALS = "LADDER_RETRY_INTERVALS"
DEFAULT_RETRY_INTERVALS: tuple[int, ...] = (1, 5, 15, 60, 300)
_REFUSALS = {
    **{name: whole.refusal() for name, whole in WHOLE.items()},
    "job_retry_intervals": f"{RETRY_INTERVALS} must be seconds >= 0, comma-separated, "
    f"e.g. {','.join(map(str, DEFAULT_RETRY_INTERVALS))}",
}


class Settings(BaseModel):
    """Typed and range-checked; secrets are ``SecretBytes`` (shown as ``**********``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    # REDIS_URL and DATABASE_URL; empty when unset: the embedded servers under ``data_dir``
    # then serve (``worker.embedded``, started by the Runtime when first needed).
    redis_url: str = ""
    leaderboard_redis_url: str | None = None  # leaderboards elsewhere (may be a Redis Cluster)
    database_url: str = Field("", repr=False)  # may hold a password: never shown
    # LADDER_DATABASE_ROUTES: a ladder's own PostgreSQL; the Runtime adds the ladders whose
    # TOML table names a ``database`` variable (``worker.store.routes``). Never printed.
    database_routes: dict[str, str] = Field({}, repr=False)
    data_dir: Path = DEFAULT_DATA_DIR  # LADDER_DATA_DIR
    ladder_config: Path | None = None
    network_key: SecretBytes = SecretBytes(DEV_NETWORK_KEY)
    network_key_is_default: bool = True
    production: bool = False
    batch_size: int = WHOLE["batch_size"].field()
    job_timeout: int = WHOLE["job_timeout"].field()
    job_retries: int = WHOLE["job_retries"].field()
    job_retry_intervals: tuple[Annotated[int, Field(ge=0)], ...] = DEFAULT_RETRY_INTERVALS
    dead_letter_ttl_days: int = WHOLE["dead_letter_ttl_days"].field()
    dead_letters_in_redis: int = WHOLE["dead_letters_in_redis"].field()
    max_event_bytes: int = WHOLE["max_event_bytes"].field()
    metrics_port: int = WHOLE["metrics_port"].field()
    publisher_secrets: dict[str, SecretBytes] = {}
    publisher_ladders: dict[str, frozenset[str]] = {}
    require_signature: bool = False
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For ``ladder serve`` believes
    receipts: bool = True  # LADDER_RECEIPTS=false: no receipt stream, keys or wait lists
    receipts_maxlen: int = WHOLE["receipts_maxlen"].field()
    receipt_ttl: int = WHOLE["receipt_ttl"].field()
    api_tokens: tuple[access.ApiToken, ...] = ()  # who ``ladder serve`` knows (worker.access)
    public_scopes: frozenset[access.Scope] = access.DEFAULT_PUBLIC  # what anonymous callers get
    publish_secret: SecretBytes | None = None  # LADDER_PUBLISH_SECRET: ``publish --publisher``
    chromium: str | None = None  # LADDER_CHROMIUM: the browser a PNG is drawn with
    # LADDER_REDIS_<USER>_PASSWORD, by variable name: what ``deploy redis-acl`` writes (hashed)
    redis_passwords: dict[str, SecretStr] = Field({}, repr=False)
    failpoints: str = ""  # LADDER_FAILPOINTS: crash tests only (``worker.failpoints``)

    @field_validator("network_key", mode="before")
    @classmethod
    def _secret_key(cls, value: object) -> object:
        return SecretBytes(value) if isinstance(value, bytes) else value

    @field_validator("publisher_secrets", mode="before")
    @classmethod
    def _secret_values(cls, value: object) -> object:
        if isinstance(value, dict):
            return {k: SecretBytes(v) if isinstance(v, bytes) else v for k, v in value.items()}
        return value

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes``, checked like the original."""
        return type(self)(**{**dict(self), **changes})

    def database_urls(self) -> list[str]:
        """Every primary once, the default (``database_url``) first."""
        return list(dict.fromkeys([self.database_url, *self.database_routes.values()]))

    def secrets(self) -> dict[str, bytes]:
        """Each publisher's signing secret, for the service that verifies signatures."""
        return {name: secret.get_secret_value() for name, secret in self.publisher_secrets.items()}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        production = env.get("LADDER_ENV", "").lower() == "production"
        key = env.get("LADDER_NETWORK_KEY", "")
        if production and not key:
            raise SettingsError("LADDER_NETWORK_KEY is required when LADDER_ENV=production")
        config = env.get("LADDER_CONFIG") or None
        database_url = env.get("DATABASE_URL") or ""
        redis_url = env.get("REDIS_URL") or ""
        for name, value in (("DATABASE_URL", database_url), ("REDIS_URL", redis_url)):
            if production and not value:
                raise SettingsError(
                    f"{name} is required when LADDER_ENV=production "
                    "(the embedded servers are for development and the demo)"
                )
        if database_url:
            check_database_url(database_url)
        routes = parse_routes(env.get(ROUTES, ""))
        whole = {name: setting.read(env) for name, setting in WHOLE.items()}
        intervals = DEFAULT_RETRY_INTERVALS
        if env.get(RETRY_INTERVALS):
            try:
                intervals = tuple(int(part) for part in env[RETRY_INTERVALS].split(","))
            except ValueError:
                raise SettingsError(_REFUSALS["job_retry_intervals"]) from None
        secrets, scopes = parse_publishers(env.get("LADDER_PUBLISHER_SECRETS", ""))
        require = env.get("LADDER_REQUIRE_SIGNATURE", "").lower() in ("1", "true", "yes")
        if require and not secrets:
            raise SettingsError("LADDER_REQUIRE_SIGNATURE needs LADDER_PUBLISHER_SECRETS")
        if (require or secrets) and not key:  # with the public development key anyone
            raise SettingsError(  # could write a checked signature's attestation
                "LADDER_NETWORK_KEY is required when LADDER_REQUIRE_SIGNATURE or "
                "LADDER_PUBLISHER_SECRETS is set (the development key is public: anyone could "
                "write a verified event's attestation)"
            )
        try:
            failpoints.parse(env.get("LADDER_FAILPOINTS", ""))
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        try:
            api_tokens = access.tokens_from_env(env)
            public_scopes = access.public_from_env(env)
        except access.AccessError as exc:
            raise SettingsError(str(exc)) from None
        retries = whole.pop("job_retries")
        if not WHOLE["job_retries"].least <= retries <= (WHOLE["job_retries"].most or retries):
            # before the intervals are fitted to the retries
            raise SettingsError(_REFUSALS["job_retries"])
        try:
            return cls(
                redis_url=redis_url,
                leaderboard_redis_url=env.get("LEADERBOARD_REDIS_URL") or None,
                database_url=normalise_database_url(database_url),
                database_routes=routes,
                data_dir=Path(env.get("LADDER_DATA_DIR") or DEFAULT_DATA_DIR)
                .expanduser()
                .absolute(),
                ladder_config=Path(config) if config else None,
                network_key=SecretBytes(key.encode() if key else DEV_NETWORK_KEY),
                network_key_is_default=not key,
                production=production,
                job_retries=retries,
                job_retry_intervals=retry_intervals(retries, intervals),
                publisher_secrets={n: SecretBytes(s) for n, s in secrets.items()},
                publisher_ladders=scopes,
                require_signature=require,
                trusted_proxies=tuple(
                    p.strip() for p in env.get("LADDER_TRUSTED_PROXIES", "").split(",") if p.strip()
                ),
                receipts=env.get("LADDER_RECEIPTS", "true").lower() not in ("0", "false", "no"),
                api_tokens=api_tokens,
                public_scopes=public_scopes,
                publish_secret=SecretBytes(env["LADDER_PUBLISH_SECRET"].encode())
                if env.get("LADDER_PUBLISH_SECRET")
                else None,
                chromium=env.get("LADDER_CHROMIUM") or None,
                redis_passwords={
                    name: SecretStr(env.get(name, "")) for name in redis_acl.PASSWORD_ENV.values()
                },
                failpoints=env.get("LADDER_FAILPOINTS", ""),
                **whole,
            )
        except ValidationError as exc:
            field = str(exc.errors()[0]["loc"][0])
            raise SettingsError(_REFUSALS.get(field, f"{field}: {exc}")) from None


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


ROUTES = "LADDER_DATABASE_ROUTES"
_ROUTES_FORM = f"{ROUTES} must look like ladder=postgresql://...,ladder=postgresql://..."


def parse_routes(spec: str) -> dict[str, str]:
    """``ladder=url,...``: the PostgreSQL each named ladder's rows go to. A ladder named twice
    with two URLs is refused; no message repeats a URL (it may hold a password)."""
    routes: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        ladder, sep, url = (part.strip() for part in item.partition("="))
        if not sep or not ladder or not url:
            raise SettingsError(_ROUTES_FORM)
        check_database_url(url, f"{ROUTES} ({ladder})")
        url = normalise_database_url(url)
        if routes.get(ladder, url) != url:
            raise SettingsError(f"{ROUTES} routes ladder {ladder!r} twice, to two databases")
        routes[ladder] = url
    return routes


def retry_intervals(retries: int, intervals: tuple[int, ...]) -> tuple[int, ...]:
    """One back-off per retry: extra values are dropped, the last one repeats if too few.

    RQ picks the wait before retry n as ``intervals[len(intervals) - retries_left]``, so a list
    longer than the number of retries would skip its first values.
    """
    if retries == 0:
        return ()
    return (intervals + (intervals[-1],) * retries)[:retries]


def check_database_url(url: str, variable: str = "DATABASE_URL") -> None:
    """PostgreSQL is the only store: a URL of any other database is refused (``variable``
    names where it was read; the message shows the scheme only, never the URL)."""
    scheme, colon, _ = url.partition(":")
    scheme = scheme.lower() if colon else "no"
    if scheme.startswith("sqlite"):
        raise SettingsError(
            f"{variable} names an SQLite file: PostgreSQL is the only store "
            "(unset DATABASE_URL for the embedded PostgreSQL under LADDER_DATA_DIR)"
        )
    if scheme.partition("+")[0] not in ("postgresql", "postgres"):
        raise SettingsError(f"{variable} must be a postgresql:// URL, not {scheme}://")


def normalise_database_url(url: str) -> str:
    """Let a plain ``postgresql://`` URL select psycopg 3 (SQLAlchemy would pick psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
