"""The Lua scripts that run inside Redis, kept as ``.lua`` files beside the module using them."""

from functools import cache
from importlib import resources

__all__ = ["lua_source"]


@cache
def lua_source(package: str, name: str) -> str:
    """The text of the script ``name`` shipped in ``package``."""
    return (resources.files(package) / name).read_text(encoding="utf-8")
