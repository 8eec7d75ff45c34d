"""Ladder tables for a test's configuration file: ``ladder`` writes one ``[ladders.<name>]``
with its versions as TOML, and ``with_shipped`` the file of the shipped ladders and those."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from worker.ladders import default_config_path

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ladder(name: str, ruleset: str, *versions: dict[str, Any], **table: bool | str) -> str:
    """``[ladders.<name>]`` of ``ruleset`` with ``table``'s settings, and one
    ``[[ladders.<name>.versions]]`` per entry of ``versions`` (version "1" from the epoch
    unless it says otherwise; none given: one such version with the ruleset's defaults)."""
    lines = ["", f"[ladders.{name}]", f'ruleset = "{ruleset}"']
    lines += [f"{key} = {_value(value)}" for key, value in table.items()]
    for entry in versions or ({},):
        values = {"version": "1", "effective_from": EPOCH, **entry}
        lines += ["", f"[[ladders.{name}.versions]]"]
        lines += [f"{key} = {_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def with_shipped(directory: Path, tables: str) -> Path:
    """A configuration file of the shipped ladders and ``tables``, in ``directory``."""
    path = directory / "ladders.toml"
    path.write_text(default_config_path().read_text(encoding="utf-8") + tables, encoding="utf-8")
    return path


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):  # a TOML date-time
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
