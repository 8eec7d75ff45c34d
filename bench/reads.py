"""The ``reads`` section: the reader library against raw redis-py calls doing the same work."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from bench import env
from bench.boards import fill_board


def _rate(call: Callable[[], Any], seconds: float) -> float:
    call()
    count = 0
    started = time.perf_counter()
    while True:
        for _ in range(50):
            call()
        count += 50
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return count / elapsed


def _competition_ranks(rows: list[tuple[Any, float]], first: int) -> list[tuple[str, int, float]]:
    out: list[tuple[str, int, float]] = []
    for i, (member, score) in enumerate(rows):
        rank = out[-1][1] if out and score == out[-1][2] else first + i
        out.append((member.decode(), rank, score))
    return out


def reads(target: env.Target, players: int, seconds: float) -> dict[str, Any]:
    from worker.boards import reader

    ladder = "gammon42"
    rng = random.Random(3)
    key = fill_board(target, ladder, players, rng)
    r: Any = target.redis
    ids = [f"r{rng.randrange(players)}" for _ in range(1_000)]
    pick = iter(ids * 100_000).__next__

    def raw_top() -> Any:
        return _competition_ranks(r.zrevrange(key, 0, 99, withscores=True), 1)

    def raw_rank() -> Any:
        member = pick()
        score = r.zscore(key, member)
        return None if score is None else r.zcount(key, f"({score}", "+inf") + 1

    results: dict[str, Any] = {"players": players}
    ops: dict[str, tuple[Callable[[], Any] | None, Callable[[], Any], str]] = {}
    ops["top(100)"] = (lambda: reader.top(r, ladder, 100), raw_top, "")

    ops["rank(player)"] = (lambda: reader.rank(r, ladder, pick()), raw_rank, "")

    around_fn = reader.around
    rows = len(around_fn(r, ladder, ids[0]))
    half = max((rows - 1) // 2, 1)
    note = f"radius {half}, {rows} rows"

    def raw_around() -> Any:
        member = pick()
        position = r.zrevrank(key, member)
        if position is None:
            return []
        first = max(position - half, 0)
        rows = r.zrevrange(key, first, position + half, withscores=True)
        top_rank = r.zcount(key, f"({rows[0][1]}", "+inf") + 1 if rows else 1
        return _competition_ranks(rows, top_rank)

    ops["around(player)"] = (lambda: around_fn(r, ladder, pick()), raw_around, note)

    for name, (lib, raw, note) in ops.items():
        raw_ops = _rate(raw, seconds)
        entry: dict[str, Any] = {"raw_per_second": round(raw_ops), "note": note}
        if lib is None:
            entry.update(reader_per_second=None, ratio=None)
        else:
            try:
                lib_ops = _rate(lib, seconds)
                entry.update(reader_per_second=round(lib_ops), ratio=round(lib_ops / raw_ops, 3))
            except Exception as exc:
                entry.update(
                    reader_per_second=None, ratio=None, note=f"n/a: {type(exc).__name__}: {exc}"
                )
        results[name] = entry
    target.redis.flushdb()
    return results


# -- rebuild ---------------------------------------------------------------------------------
