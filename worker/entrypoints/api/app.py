"""The app: ``create_app`` puts the routers, the console and the error handlers together,
and serves the OpenAPI document and the docs page generated from them.

A group of routes is a module with an ``APIRouter`` named ``router`` whose handlers take the
app's reads as ``api: Api``; adding one to the app is one line in ``ROUTERS``.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import unquote

from fastapi import APIRouter, FastAPI, Response
from fastapi.responses import HTMLResponse, JSONResponse
from redis import Redis
from sqlalchemy.engine import Engine
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.access import Access
from worker.boards import reader
from worker.entrypoints.api import auth, boards, history, ladders, predict
from worker.entrypoints.api import receipts as event_receipts
from worker.entrypoints.api.caching import CACHE_SCHEMA
from worker.entrypoints.api.errors import HANDLERS
from worker.entrypoints.api.limits import BodyLimit
from worker.entrypoints.api.models import ExportLine
from worker.entrypoints.api.params import ENCODED, EXCLUSIVE
from worker.entrypoints.api.reads import Reads
from worker.entrypoints.console.routes import add_routes as add_console
from worker.ladders import Config
from worker.store.routes import Databases, as_databases

# The operations of the OpenAPI document, in the document's order.
ROUTERS: tuple[APIRouter, ...] = (
    ladders.router,
    history.router,
    predict.router,
    boards.router,
    event_receipts.router,
)


def create_app(
    config: Config,
    redis: reader.Client,
    engine: Engine | Databases,
    receipts: Redis | None = None,
    *,
    access: Access,
) -> ASGIApp:
    """The API over these leaderboards (``redis``) and this audit store (``engine``: one
    PostgreSQL, or each ladder's, ``worker.store.routes``);
    ``receipts``: the queue's Redis, where receipts lend their ranks while they are kept;
    ``access``: the tokens and public scopes it answers by (``auth``)."""
    app = FastAPI(
        title="ladder leaderboards",
        version="1",
        description=(
            "Read-only leaderboards. Ranks use standard competition ranking (1, 2, 2, 4); "
            "equal scores are listed by player id ascending."
        ),
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    databases = as_databases(engine)
    app.state.reads = Reads(config, redis, databases)
    auth.install(app, access, auth.Sessions(redis))
    event_receipts.install(app, config, databases, receipts)
    _contract_routes(app)
    for router in ROUTERS:
        app.include_router(router)
    add_console(app, config, redis, databases)  # the HTML console, outside the OpenAPI document
    for kind, handler in HANDLERS.items():
        app.add_exception_handler(kind, handler)
    auth.check_every_route(app)
    return BodyLimit(auth.Private(EncodedSlashes(app)))


def _contract_routes(app: FastAPI) -> None:
    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response:
        return JSONResponse(document(app), headers={"Cache-Control": CACHE_SCHEMA})

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        return HTMLResponse(docs_page(document(app)), headers={"Cache-Control": CACHE_SCHEMA})


def document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document FastAPI generates, without the 422 it assumes (a parameter that
    does not validate is answered 400 like every other bad parameter), and with the query
    parameters a route names as ``EXCLUSIVE`` stated as excluding each other."""
    if app.openapi_schema is None:
        schema = app.openapi()
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                operation.get("responses", {}).pop("422", None)
                exclusive = operation.pop(EXCLUSIVE, None)
                if exclusive:
                    _one_of_parameters(operation, exclusive)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        # The export's lines are not a response model FastAPI sees: add their schema.
        schema.setdefault("components", {}).setdefault("schemas", {})["ExportLine"] = (
            ExportLine.model_json_schema(ref_template="#/components/schemas/{model}")
        )
        auth.declare(app, schema, app.state.access)
        app.openapi_schema = schema
    return app.openapi_schema


def _one_of_parameters(operation: dict[str, Any], names: list[str]) -> None:
    """State that the query parameters ``names`` exclude each other, in a form OpenAPI 3.1
    (and so a client or a schema-driven tester) can read: one exploded form-style object
    parameter whose properties are those parameters, with at most one of them present."""
    params = operation["parameters"]
    chosen = [p for p in params if p["name"] in names and p["in"] == "query"]
    properties = {}
    for param in chosen:
        schema = dict(param["schema"])
        variants = [v for v in schema.pop("anyOf", [schema]) if v.get("type") != "null"]
        properties[param["name"]] = {**schema, **variants[0]}
    first = params.index(chosen[0])
    operation["parameters"] = [p for p in params if p not in chosen]
    operation["parameters"].insert(
        first,
        {
            "name": "position",
            "in": "query",
            "required": False,
            "style": "form",
            "explode": True,
            "description": f"At most one of {' and '.join(names)}: they exclude each other",
            "schema": {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
                "maxProperties": 1,
            },
        },
    )


def _names(param: dict[str, Any]) -> list[str]:
    """A parameter's names in a query string: an exploded object's are its properties."""
    if param.get("explode") and "properties" in param["schema"]:
        return list(param["schema"]["properties"])
    return [param["name"]]


def docs_page(schema: dict[str, Any]) -> str:
    """A self-contained HTML page listing the operations of ``schema``."""
    rows = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            params = ", ".join(
                f"{name}{'' if p.get('required') else '?'}"
                for p in operation.get("parameters", [])
                for name in _names(p)
            )
            codes = ", ".join(sorted(operation.get("responses", {})))
            rows.append(
                "<tr>"
                f"<td><code>{html.escape(method.upper())} {html.escape(path)}</code></td>"
                f"<td>{html.escape(operation.get('summary', ''))}"
                f"<p>{html.escape(operation.get('description', ''))}</p></td>"
                f"<td>{html.escape(params)}</td><td>{html.escape(codes)}</td>"
                "</tr>"
            )
    info = schema["info"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(info['title'])}</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{border-bottom:1px solid #ddd;"
        "padding:.4em;text-align:left;vertical-align:top}p{color:#555;margin:.2em 0}</style>"
        f"</head><body><h1>{html.escape(info['title'])}</h1>"
        f"<p>{html.escape(info.get('description', ''))}</p>"
        "<p>The full contract: <a href='/openapi.json'>/openapi.json</a> (OpenAPI "
        f"{html.escape(schema['openapi'])}). Errors are JSON: "
        '<code>{"error": ..., "detail": ...}</code>.</p>'
        "<table><tr><th>Operation</th><th>What</th><th>Parameters</th><th>Statuses</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )


_KEEP_ENCODED = re.compile(r"(%2[Ff]|%25)")


class EncodedSlashes:
    """Route on the raw path with ``%2F`` and ``%25`` still encoded, so that an encoded
    slash stays inside a player id; the request is marked ``ENCODED`` for the parameters."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and isinstance(raw, bytes) and b"%" in raw:
            text = raw.decode("latin-1")
            if unquote(text) == scope.get("path"):
                parts = _KEEP_ENCODED.split(text)
                kept = "".join(p if i % 2 else unquote(p) for i, p in enumerate(parts))
                scope = {**scope, "path": kept, ENCODED: True}
        await self.app(scope, receive, send)
