"""Ladder configuration: which ladders exist, their ruleset and its versioned parameters.

Read from a TOML file (``LADDER_CONFIG``, else the shipped ``defaults/ladders.toml``) once
at start-up. A file that cannot be used is refused with a ``ConfigError`` that names the
line and the field, so a worker never starts on a half-understood configuration.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails

from engine import RULESET_KINDS, FairPlayConfig, Policy, Ruleset

DEFAULT_CONFIG = "defaults/ladders.toml"
LADDER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SeasonReset = Literal["none", "start", "toward_start"]
SEASON_RESETS: tuple[SeasonReset, ...] = get_args(SeasonReset)


def season_reset(text: str) -> str:
    """A season reset's name as the configuration shows it: ``toward-start`` (the command
    line's spelling) is ``toward_start``."""
    return text.replace("-", "_")


class ConfigError(ValueError):
    """The ladder configuration file cannot be used."""


@dataclass(frozen=True)
class RulesVersion:
    effective_from: datetime
    rules: Ruleset


class _Table(BaseModel):
    """A table of the file as the code reads it: no value converted (a string is not a
    boolean, 1 is not true), no key that names no field, nothing changed once read."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class SeasonConfig(_Table):
    """What closing a season does to ratings: ``[ladders.<name>.season]``."""

    reset: SeasonReset = "none"
    # toward_start: the share of the way to the start rating
    fraction: float = Field(0.5, gt=0.0, le=1.0)

    @field_validator("reset", mode="before")
    @classmethod
    def _spelled(cls, value: Any) -> Any:
        """``toward-start``, as the command line takes it, is ``toward_start`` too."""
        return season_reset(value) if isinstance(value, str) else value


class BoardConfig(_Table):
    """``[ladders.<name>.board]``: ``active_days`` (unset: no active board)."""

    active_days: int | None = Field(None, ge=1, le=3650)


class LadderConfig(_Table):
    """One ``[ladders.<name>]`` table, checked: what the code reads of that ladder. Fields are
    checked (the first mistake is the one refused) and shown by ``config show`` in this order;
    ``fairplay`` and the versions are built by ``_build``, refusing through the ``fail`` that
    ``_parse_ladder`` passes as the validation context."""

    name: str
    ruleset: str
    # the environment variable holding the URL of this ladder's own PostgreSQL (unset: the
    # default one, or LADDER_DATABASE_ROUTES's; ``worker.store.routes``)
    database: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    boosted_board: bool = False
    public_board: bool = False
    linking: bool = True
    fairplay: FairPlayConfig = FairPlayConfig()
    season: SeasonConfig = SeasonConfig()
    board: BoardConfig = BoardConfig()
    versions: tuple[RulesVersion, ...] = Field(min_length=1)

    @field_validator("ruleset")
    @classmethod
    def _known_ruleset(cls, kind: str) -> str:
        if kind not in RULESET_KINDS:
            raise ValueError("unknown ruleset")
        return kind

    @field_validator("fairplay", mode="before")
    @classmethod
    def _fairplay(cls, table: Any, info: ValidationInfo) -> Any:
        fail = info.context  # None when built in code: a FairPlayConfig is given
        if not isinstance(table, dict) or fail is None:
            return table  # a value that is no table is refused by the field's type
        return _build(FairPlayConfig, table, lambda f, m: fail(f, m, "fairplay"))

    @field_validator("versions", mode="before")
    @classmethod
    def _versions(cls, entries: Any, info: ValidationInfo) -> Any:
        kind, fail = info.data.get("ruleset"), info.context
        if not isinstance(entries, list) or kind is None or fail is None:
            return entries  # the field's type decides, or the ruleset was refused already
        return _build_versions(kind, entries, fail)

    @property
    def active_days(self) -> int | None:
        """The active board's window in days (``[ladders.<name>.board]``)."""
        return self.board.active_days

    def rules_at(self, when: datetime) -> Ruleset:
        """The parameters in force at ``when`` (the first version for anything earlier).

        A ladder has a handful of versions and most games fall under the newest, so a scan
        from the end finds it at the first step."""
        for version in reversed(self.versions):
            if version.effective_from <= when:
                return version.rules
        return self.versions[0].rules

    @property
    def current(self) -> Ruleset:
        return self.rules_at(datetime.now(UTC))

    @property
    def switch(self) -> RulesVersion | None:
        """The latest version that names another ruleset than the one before it (what
        ``ladder rerate`` re-rates the history under), or None."""
        found = None
        for before, version in zip(self.versions, self.versions[1:], strict=False):
            if version.rules.kind != before.rules.kind:
                found = version
        return found

    @property
    def policy(self) -> Policy:
        """The ladder's switches as the engine's ladder rules read them."""
        return Policy(self.fairplay, self.linking, self.boosted_board, self.public_board)

    def as_table(self) -> dict[str, Any]:
        """Every setting in force, as the ``[ladders.<name>]`` table and its sub-tables name
        them (what ``ladder config show`` prints), each version with all its parameters."""
        return {
            **self.model_dump(exclude={"name", "versions"}),
            "versions": [
                {
                    "effective_from": v.effective_from.isoformat(),
                    **({"ruleset": v.rules.kind} if v.rules.kind != self.ruleset else {}),
                    **dataclasses.asdict(v.rules),
                }
                for v in self.versions
            ],
        }


@dataclass(frozen=True)
class Config:
    ladders: dict[str, LadderConfig]
    path: str

    def ladder(self, name: str) -> LadderConfig | None:
        return self.ladders.get(name)


def default_config_path() -> Path:
    return Path(str(resources.files("worker").joinpath(DEFAULT_CONFIG)))


def load_config(path: Path | None = None) -> Config:
    path = path or default_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the ladder configuration: {exc.strerror}") from None
    return parse_config(text, str(path))


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    lines = _LineIndex(text)
    ladders_table = data.get("ladders")
    if not isinstance(ladders_table, dict) or not ladders_table:
        raise ConfigError(f"{source}: no [ladders.<name>] table: at least one ladder is needed")
    ladders = {}
    for name, table in ladders_table.items():
        ladders[name] = _parse_ladder(name, table, source, lines)
    return Config(ladders=ladders, path=source)


def _parse_ladder(name: str, table: Any, source: str, lines: _LineIndex) -> LadderConfig:
    def fail(field: str, message: str, *path: str | int) -> ConfigError:
        line = lines.find(("ladders", name, *path), field)
        where = f"{source}, line {line}" if line else source
        dotted = ".".join([f"ladders.{name}", *(f"{p}" for p in path if isinstance(p, str))])
        index = next((p for p in path if isinstance(p, int)), None)
        if index is not None:
            dotted = f"ladders.{name}.versions[{index}]"
        return ConfigError(f"{where}: field {dotted}.{field}: {message}")

    if not LADDER_NAME.match(name):
        raise ConfigError(f"{source}: ladder name {name!r} must be 1-64 of A-Z a-z 0-9 _ . -")
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: ladders.{name} must be a table")
    if "name" in table:  # the table's key names the ladder; no option in it does
        raise fail("name", "unknown option")
    try:
        return LadderConfig.model_validate({**table, "name": name}, context=fail)
    except ValidationError as exc:
        raise _refusal(exc.errors()[0], table, fail) from None


def _build_versions(
    kind: str, entries: list[Any], fail: Callable[..., ConfigError]
) -> tuple[RulesVersion, ...]:
    """The ``[[ladders.<name>.versions]]`` entries, each later than the one before it and
    inheriting what it does not set from it; an entry may name another ``ruleset`` (the
    switch ``ladder rerate`` re-rates the history under), and then inherits nothing."""
    versions: list[RulesVersion] = []
    params: dict[str, Any] = {}
    for index, entry in enumerate(entries):

        def vfail(field: str, message: str, _i: int = index) -> ConfigError:
            return fail(field, message, "versions", _i)

        if not isinstance(entry, dict):
            raise vfail("", "must be a table")
        when = entry.get("effective_from")
        if isinstance(when, datetime) and when.tzinfo is not None:
            when = when.astimezone(UTC)
        else:
            raise vfail(
                "effective_from", "must be a date-time with an offset, e.g. 2026-10-01T00:00:00Z"
            )
        if versions and when <= versions[-1].effective_from:
            raise vfail("effective_from", "must be later than the version before it")
        version_name = entry.get("version")
        if not isinstance(version_name, str) or not version_name:
            raise vfail("version", "must be a non-empty string")
        named = entry.get("ruleset", kind)
        if named not in RULESET_KINDS:
            raise vfail("ruleset", f"must be one of {', '.join(RULESET_KINDS)}")
        if named != kind:
            kind, params = named, {}
        params.update({k: v for k, v in entry.items() if k not in ("effective_from", "ruleset")})
        rules = _build(RULESET_KINDS[kind], params, vfail)
        versions.append(RulesVersion(effective_from=when, rules=rules))
    return tuple(versions)


def _refusal(
    error: ErrorDetails, table: dict[str, Any], fail: Callable[..., ConfigError]
) -> ConfigError:
    """The first thing pydantic refused, in the words (and at the line) of the file."""
    refused = error.get("ctx", {}).get("error")
    if isinstance(refused, ConfigError):  # a validator's, naming its own line and field
        return refused
    loc = [str(part) for part in error["loc"]]
    kind = error["type"]
    if loc[0] == "season" and len(loc) > 1:
        field = loc[1]
        if kind == "extra_forbidden":
            return fail(field, "unknown parameter for SeasonConfig", "season")
        if field == "reset":
            return fail(field, f"must be one of {', '.join(SEASON_RESETS)}", "season")
        if kind == "float_type":
            return fail(field, "must be a number", "season")
        return fail(field, "must be more than 0 and at most 1", "season")
    if loc[0] == "board" and len(loc) > 1:
        if kind == "extra_forbidden":
            return fail(loc[1], "unknown option", "board")
        return fail(loc[1], "must be a whole number of days from 1 to 3650", "board")
    field = loc[0]
    if kind == "extra_forbidden":
        return fail(field, "unknown option")
    if field == "ruleset":
        found = table.get("ruleset")
        return fail(field, f"must be one of {', '.join(sorted(RULESET_KINDS))}, not {found!r}")
    if field == "versions":
        return fail(field, "at least one [[ladders.<name>.versions]] entry is needed")
    if kind == "bool_type":
        return fail(field, "must be true or false")
    if field == "database":
        return fail(field, "must name an environment variable that holds a postgresql:// URL")
    return fail(field, "must be a table")


def _build(cls: Any, values: Any, fail: Any) -> Any:
    """Build a parameter dataclass, checking each value against the field's default type."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        field = fields.get(key)
        if field is None:
            raise fail(key, f"unknown parameter for {getattr(cls, 'kind', cls.__name__)}")
        kwargs[key] = _coerce(field.default, value, lambda m, k=key: fail(k, m))
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise fail(_field_named_in(str(exc), fields), str(exc)) from None


def _coerce(default: Any, value: Any, fail: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise fail("must be true or false")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail("must be a whole number")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail("must be a number")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise fail("must be a string")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, list):
            raise fail("must be an array")
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return value


def _field_named_in(message: str, fields: dict[str, Any]) -> str:
    """Parameter classes start their errors with ``<field>: ``."""
    named = message.split(":", 1)[0].strip()
    return named if named in fields else ""


class _LineIndex:
    """Maps (table path, key) to the line it is set on, for error messages."""

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple[tuple[str | int, ...], str], int] = {}
        self._tables: dict[tuple[str | int, ...], int] = {}
        counters: dict[tuple[str, ...], int] = {}
        current: tuple[str | int, ...] = ()
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if line.startswith("[["):
                parts = tuple(p.strip().strip('"') for p in line.strip("[]").split("."))
                index = counters.get(parts, 0)
                counters[parts] = index + 1
                current = (*parts, index)
                self._tables[current] = number
            elif line.startswith("["):
                current = tuple(p.strip().strip('"') for p in line.strip("[]").split("."))
                self._tables[current] = number
            elif "=" in line:
                key = line.split("=", 1)[0].strip().strip('"')
                self._lines[(current, key)] = number

    def find(self, table: tuple[str | int, ...], key: str) -> int | None:
        if key and (table, key) in self._lines:
            return self._lines[(table, key)]
        if (table[:2], key) in self._lines:
            return self._lines[(table[:2], key)]
        return self._tables.get(table) or self._tables.get(table[:2])
