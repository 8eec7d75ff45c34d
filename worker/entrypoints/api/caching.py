"""How long a shared cache (a CDN) may keep each kind of answer."""

from __future__ import annotations

from typing import TypeVar

from fastapi import Response

CACHE_OK = "public, max-age=5, stale-while-revalidate=30"  # reads and 404s
CACHE_SCHEMA = "public, max-age=300"  # the OpenAPI document and the docs page
NO_STORE = "no-store"  # 400s, 503s and exports

T = TypeVar("T")


def cached(response: Response, body: T) -> T:
    """``body``, answered with the short shared-cache lifetime of a successful read."""
    response.headers["Cache-Control"] = CACHE_OK
    return body
