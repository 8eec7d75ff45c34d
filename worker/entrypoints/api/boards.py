"""The routes over whole boards: ``among`` (these ids as the board ranks them) and
``export`` (the whole board in rank order, streamed as JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import StreamingResponse

from worker.access import Scope
from worker.boards import export as boards_export
from worker.boards import reader
from worker.entrypoints.api.auth import requires
from worker.entrypoints.api.caching import NO_STORE, cached
from worker.entrypoints.api.errors import BadRequest, errors
from worker.entrypoints.api.models import AmongAnswer, ExportLine
from worker.entrypoints.api.params import Board, LadderName
from worker.entrypoints.api.reads import Api

router = APIRouter(responses=errors(400, 404, 503))


@router.get(
    "/ladders/{ladder}/among",
    operation_id="among",
    dependencies=[requires(Scope.BOARDS)],
    summary="These players (friends) as the board ranks them",
    description=(
        f"Up to {reader.MAX_AMONG} comma-separated ids; the players found come in board "
        "order with their global rank, the others are listed under missing."
    ),
)
def among(
    response: Response,
    api: Api,
    ladder: LadderName,
    ids: Annotated[str, Query(min_length=1, description="Player ids, comma-separated")],
    board: Board = "rating",
) -> AmongAnswer:
    wanted = [pid for pid in ids.split(",") if pid]
    if len(set(wanted)) > reader.MAX_AMONG:
        raise BadRequest(f"ids: at most {reader.MAX_AMONG}, got {len(set(wanted))}")
    return cached(response, api.among(ladder, board, wanted))


@router.get(
    "/ladders/{ladder}/export",
    operation_id="export",
    dependencies=[requires(Scope.EXPORT)],
    summary="The whole board in rank order, as JSON lines",
    description="One ExportLine object per line (application/x-ndjson), streamed.",
    responses={
        200: {
            "description": "One ExportLine per line",
            "content": {
                "application/x-ndjson": {"schema": {"$ref": "#/components/schemas/ExportLine"}}
            },
        },
    },
    response_class=StreamingResponse,
)
def export(api: Api, ladder: LadderName, board: Board = "rating") -> StreamingResponse:
    name = api.board(ladder, board)
    lines = boards_export.lines(api.redis, name, board)
    first = next(lines, None)  # Redis unreachable: a 503, before the 200 is sent

    def body() -> Iterator[bytes]:
        if first is not None:
            yield _ndjson(first)
        for line in lines:
            yield _ndjson(line)

    return StreamingResponse(
        body(), media_type="application/x-ndjson", headers={"Cache-Control": NO_STORE}
    )


def _ndjson(line: dict[str, Any]) -> bytes:
    return (json.dumps(ExportLine(**line).model_dump(), ensure_ascii=False) + "\n").encode()
