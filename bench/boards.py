"""Benchmark of the board reads and the import: ``among`` (50 ids) and ``ladder import``.

- among(50 ids): ``reader.among`` (one script call: scores, ranks, percentiles, flags) against
  a raw baseline measured in the same run on the same board, a pipeline of ZSCORE for the 50
  ids and then one of ZCOUNT for their ranks (two round trips, no percentile, no order).
- import: a generated JSON lines file of ``players`` players, imported in this process with
  ``worker.ops.importer.import_file`` into a fresh database (the PostgreSQL transaction and
  the boards); the rate is lines per second and the seconds a million lines would take at
  that rate. The baselines of the same run: a plain ``COPY`` of the same rows into a table
  with no checks (the floor an import cannot go under), and ``ladder rebuild`` of the same
  players (the projection alone, whose 1,000,000-player figure the README states). An import
  that refuses any line is not timed: the section says so, with the first refusal.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import env

AMONG_IDS = 50


def fill_board(target: env.Target, ladder: str, players: int, rng: random.Random) -> str:
    """Flush the bench's Redis db and put ``players`` players ``r0``..  on the ladder's rating
    board, each with a player hash; returns the board's key. Whole-number ratings, as gammon42
    and prostriker store them: ties are common."""
    from worker import keys

    target.redis.flushdb()
    key = keys.rating(ladder)
    pipe = target.redis.pipeline(transaction=False)
    for start in range(0, players, 5_000):
        chunk = range(start, min(start + 5_000, players))
        pipe.zadd(key, {f"r{n}": float(1500 + round(rng.gauss(0, 150))) for n in chunk})
        for n in chunk:
            pipe.hset(keys.player(ladder, f"r{n}"), mapping={"provisional": int(n % 7 == 0)})
        pipe.execute()
    return key


def _rate(call: Any, seconds: float) -> float:
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        call()
        done += 1
    return done / (time.perf_counter() - started)


def among(target: env.Target, players: int, seconds: float) -> dict[str, Any]:
    from worker.boards import reader

    ladder = "gammon42"
    rng = random.Random(11)
    key = fill_board(target, ladder, players, rng)
    r: Any = target.redis
    lists = [[f"r{rng.randrange(players)}" for _ in range(AMONG_IDS)] for _ in range(100)]
    pick = iter(lists * 1_000_000).__next__

    def raw() -> Any:
        ids = pick()
        with r.pipeline(transaction=False) as p:
            for pid in ids:
                p.zscore(key, pid)
            scores = p.execute()
        with r.pipeline(transaction=False) as p:
            for score in scores:
                if score is not None:
                    p.zcount(key, f"({score}", "+inf")
            return p.execute()

    raw_rate = _rate(raw, seconds)
    lib_rate = _rate(lambda: reader.among(r, ladder, pick()), seconds)
    target.redis.flushdb()
    return {
        "players": players,
        "ids": AMONG_IDS,
        "reader_per_second": round(lib_rate),
        "raw_per_second": round(raw_rate),
        "ratio": round(lib_rate / raw_rate, 3),
    }


def importing(target: env.Target, players: int) -> dict[str, Any]:
    from worker.bootstrap import Runtime
    from worker.ops import importer, rebuild
    from worker.settings import Settings

    target.reset()
    with tempfile.TemporaryDirectory(prefix="ladder-bench-import-") as tmp:
        path = importer.sample_file(Path(tmp) / "players.jsonl", players, prefix="imp")
        copy_seconds = _copy_floor(target, path)
        rt = Runtime(Settings(redis_url=target.redis_url, database_url=target.database_url))
        try:
            started = time.perf_counter()
            report = importer.import_file(
                rt.engine, rt.leaderboard_redis, rt.config.ladders["gammon42"], path
            )
            seconds = time.perf_counter() - started
            if report.imported != players:  # no figure for an import that did not happen
                said = report.refusals[0][1] if report.refusals else "none refused"
                return {"players": players, "imported": report.imported, "refused": said}
            # The baseline of the same run: rebuilding the boards of the same players.
            started = time.perf_counter()
            rebuild.rebuild(rt.engine, rt.leaderboard_redis, rt.config.ladders["gammon42"])
            rebuild_seconds = time.perf_counter() - started
        finally:
            rt.close()
    target.redis.flushdb()
    rate = report.imported / seconds if seconds > 0 else 0.0
    return {
        "players": players,
        "imported": report.imported,
        "seconds": round(seconds, 2),
        "lines_per_second": round(rate),
        "seconds_per_million": round(1_000_000 / rate, 1) if rate else None,
        "copy_floor_seconds": round(copy_seconds, 2),
        "ratio_to_copy": round(seconds / copy_seconds, 1) if copy_seconds else None,
        "rebuild_seconds": round(rebuild_seconds, 2),
        "ratio_to_rebuild": round(seconds / rebuild_seconds, 2) if rebuild_seconds else None,
    }


def _copy_floor(target: env.Target, path: Path) -> float:
    """A plain COPY of the file's rows (parsed with json) into an unindexed table."""
    import json

    import psycopg

    url = target.database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TEMPORARY TABLE floor (player_id text, rating float8, games int4,"
            " experience int4)"
        )
        with conn.cursor() as cursor, path.open(encoding="utf-8") as handle:
            with cursor.copy("COPY floor FROM STDIN") as copy:
                for text in handle:
                    row = json.loads(text)
                    copy.write_row(
                        (row["player_id"], row["rating"], row["games"], row["experience"])
                    )
        conn.rollback()
    return time.perf_counter() - started


def run(target: env.Target, quick: bool) -> dict[str, Any]:
    return {
        "among": among(target, 5_000 if quick else 100_000, 1.0 if quick else 3.0),
        "import": importing(target, 20_000 if quick else 200_000),
    }


def print_section(result: dict[str, Any]) -> None:
    found = result.get("boards")
    if not found:
        return
    a, i = found["among"], found["import"]
    print(
        f"among({a['ids']} ids) on {a['players']:,} players: {a['reader_per_second']:,}/s "
        f"(raw 2-round-trip pipeline {a['raw_per_second']:,}/s, ratio {a['ratio']}x)"
    )
    if i["imported"] != i["players"]:  # the lines were refused: nothing was timed
        print(
            f"import {i['players']:,} players: NOT TIMED, {i['imported']:,} imported "
            f"(the first refusal: {i.get('refused', 'not recorded')})"
        )
        return
    print(
        f"import {i['players']:,} players: {i['seconds']:.2f} s, {i['lines_per_second']:,} "
        f"lines/s ({i['seconds_per_million']} s per million; {i['ratio_to_copy']}x a plain "
        f"COPY of the same rows, {i['copy_floor_seconds']:.2f} s; {i['ratio_to_rebuild']}x a "
        f"rebuild of the same players, {i['rebuild_seconds']:.2f} s)"
    )
