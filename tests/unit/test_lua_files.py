"""Lua scripts live as ``.lua`` files beside their module, and ship in the package."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_module_carries_an_inline_lua_script() -> None:
    inline = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "worker").rglob("*.py")
        if "redis.call(" in path.read_text(encoding="utf-8")
    ]
    assert inline == []


def test_every_lua_file_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["worker"]
    scripts = sorted((ROOT / "worker").rglob("*.lua"))
    assert scripts
    for script in scripts:
        relative = script.relative_to(ROOT / "worker")
        assert any(relative.match(pattern) for pattern in patterns), relative
