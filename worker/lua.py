"""The Lua scripts that run inside Redis, kept as ``.lua`` files beside the module using them."""

from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from redis.client import Pipeline
from redis.commands.core import Script

__all__ = ["lua_source", "run"]


@cache
def lua_source(package: str, name: str) -> str:
    """The text of the script ``name`` shipped in ``package``."""
    return (resources.files(package) / name).read_text(encoding="utf-8")


def run(script: Script, client: Any, keys: Sequence[Any], args: Sequence[Any]) -> Any:
    """Run (or, on a pipeline, queue) ``script``. On a pipeline it goes as ``EVAL`` with its
    text: redis-py runs a registered script there by asking ``SCRIPT EXISTS`` before every
    ``execute``, a round trip more for each pipeline, where ``EVAL`` costs Redis a digest of
    a few kilobytes (the compiled script is cached by it) and cannot meet ``NOSCRIPT``."""
    if isinstance(client, Pipeline):
        text = script.script
        source = text if isinstance(text, str) else bytes(text).decode("utf-8")
        return client.eval(source, len(keys), *keys, *args)
    return script(keys=keys, args=args, client=client)
