"""The ``rulesets`` section: the hot ladder rated by glicko2 and by openskill against gammon42
in the same run: ``python -m bench.run --only rulesets``.

The hot workload (``bench.events.generate_hot``: ranked games among many players, ending 30 s
apart, at the density of the floor section's hot ladder) is published to a gammon42 ladder,
and the same games (the same players, the same times, the same bytes but for the ladder's
name) to a glicko2 ladder and to an openskill ladder, named after their rulesets in a
``LADDER_CONFIG`` of the shipped ladders and those two. Each is drained by one
``ladder worker --burst`` from a fresh target and checked exactly-once (each board ranking
its players as its ruleset says: openskill's by mu - k sigma), as the floor section drains;
the rounds alternate the three (gammon42, glicko2, openskill, then again), so a load that
comes and goes on a shared machine falls on all three. The goal is the ratio of each new
ruleset's median rate to gammon42's.

Beside it, for information, the engine alone (``bench.engine``'s ``apply`` batch by batch,
no PostgreSQL or Redis) on the same games: CPU us per event for each ruleset, the best of
``ENGINE_RUNS``, alternated the same way.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import engine as engine_bench
from bench import env
from bench.events import Mix, generate_hot
from bench.floorbench import hot_players
from bench.ingest import BoardScore
from engine import RULESET_KINDS

#: The rulesets compared, the baseline first; each ladder is named after its ruleset.
RULESETS = ("gammon42", "glicko2", "openskill")
BASELINE = RULESETS[0]
GOAL = 0.8  # each new ruleset's hot-ladder rate >= 0.8x gammon42's
ENGINE_RUNS = 5
ENGINE_BATCH = 1_000

#: The ladders besides the shipped ones: each ruleset's default parameters, and the same
#: fair-play filters and linking as the shipped gammon42 ladder (the defaults of both).
EXTRA_LADDERS = """
[ladders.glicko2]
ruleset = "glicko2"

[[ladders.glicko2.versions]]
version = "1"
effective_from = 1970-01-01T00:00:00Z

[ladders.openskill]
ruleset = "openskill"

[[ladders.openskill.versions]]
version = "1"
effective_from = 1970-01-01T00:00:00Z
"""


def write_config(folder: Path) -> tuple[Path, dict[str, BoardScore]]:
    """The shipped ladders and the two new ones, as a ``LADDER_CONFIG`` file in ``folder``;
    with what each compared ladder's rating board ranks by (its ruleset's ``board_score``)."""
    from worker.ladders import default_config_path, load_config

    path = folder / "rulesets-ladders.toml"
    shipped = default_config_path().read_text(encoding="utf-8")
    path.write_text(shipped + EXTRA_LADDERS, encoding="utf-8")
    ladders = load_config(path).ladders
    scores: dict[str, BoardScore] = {}
    for name in RULESETS:
        rules = ladders[name].current if name in ladders else None
        if rules is None or rules.kind != name:
            kind = None if rules is None else rules.kind
            raise RuntimeError(f"bench: ladder {name} of {path} is rated by {kind}, not {name}")
        scores[name] = rules.board_score
    return path, scores


def workload(games: int) -> tuple[dict[str, list[str]], Mix]:
    """The hot games as each ladder's payloads: the gammon42 ones with the ladder renamed."""
    payloads, mix = generate_hot(games, players=hot_players(games), tag="rulesets-hot")
    marker = '"ladder":"gammon42"'
    if not all(payload.count(marker) == 1 for payload in payloads):
        raise RuntimeError("bench: a hot payload does not name its ladder as expected")
    return {
        name: [p.replace(marker, f'"ladder":"{name}"') for p in payloads] for name in RULESETS
    }, mix


def engine_alone(games: int, rounds: int = ENGINE_RUNS) -> dict[str, Any]:
    """CPU us per event of ``engine.ladder.apply`` on the same games for each ruleset,
    batches of ``ENGINE_BATCH``, the rulesets alternated round by round; the best and the
    median of the rounds, and each ruleset's events/s (best) as a ratio to gammon42's."""
    players = hot_players(games)
    logs = {name: engine_bench.events(games, name, players) for name in RULESETS}
    rules = {name: RULESET_KINDS[name]() for name in RULESETS}
    spent: dict[str, list[float]] = {name: [] for name in RULESETS}
    gc.freeze()  # the logs, as a worker freezes what start-up allocated
    try:
        for _ in range(rounds):
            for name in RULESETS:
                seconds = engine_bench.batches(logs[name], ENGINE_BATCH, rules[name])
                spent[name].append(round(seconds * 1e6 / games, 2))
    finally:
        gc.unfreeze()
    out: dict[str, Any] = {"events": games, "batch": ENGINE_BATCH}
    for name in RULESETS:
        out[name] = {
            "cpu_us_per_event": min(spent[name]),
            "median_cpu_us_per_event": statistics.median(spent[name]),
            "rounds": spent[name],
        }
    base = out[BASELINE]["cpu_us_per_event"]
    for name in RULESETS[1:]:
        out[name]["ratio_to_gammon42"] = round(base / out[name]["cpu_us_per_event"], 2)
    return out


def run(
    target: env.Target,
    log: Path,
    ingest: Callable[..., dict[str, Any]],
    *,
    games: int,
    rounds: int,
    engine_rounds: int = ENGINE_RUNS,
) -> dict[str, Any]:
    """The hot ladder drained by one burst worker under each ruleset, ``rounds`` rounds of
    the three alternated; each ruleset's median events/s and CPU per event, the ratios to
    gammon42's median (the goal) and round by round; then the engine alone."""
    per_ladder, mix = workload(games)
    config, scores = write_config(log.parent)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in RULESETS}
    for n in range(rounds):
        for name in RULESETS:
            print(
                f"bench: rulesets, {name}, {games:,} hot games, 1 worker, round {n + 1} of "
                f"{rounds}",
                flush=True,
            )
            runs[name].append(
                ingest(
                    target,
                    0,
                    1,
                    None,
                    log,
                    (per_ladder[name], mix),
                    config=config,
                    boards={name: scores[name]},
                )
            )
    out: dict[str, Any] = {"events": games, "players": hot_players(games), "rounds": rounds}
    for name, done in runs.items():
        rates = [r["events_per_second"] for r in done]
        cpu = [r["worker_cpu_us_per_event"] for r in done]
        out[name] = {
            "events_per_second": statistics.median(rates),
            "rounds": rates,
            "worker_cpu_us_per_event": statistics.median(cpu),
            "cpu_rounds": cpu,
            "worker_peak_rss_mib": max(r["worker_peak_rss_mib"] for r in done),
            "check_ok": all(r["check"]["ok"] for r in done),
            "problems": [p for r in done for p in r["check"].get("problems", [])],
            "rating_changes": [r["check"]["rating_changes"] for r in done],
        }
    base = out[BASELINE]
    for name in RULESETS[1:]:
        entry = out[name]
        entry["ratio_to_gammon42"] = _ratio(entry["events_per_second"], base["events_per_second"])
        entry["round_ratios"] = [
            _ratio(rate, against)
            for rate, against in zip(entry["rounds"], base["rounds"], strict=True)
        ]
        entry["cpu_ratio_to_gammon42"] = _ratio(
            base["worker_cpu_us_per_event"], entry["worker_cpu_us_per_event"]
        )
    print(f"bench: rulesets, the engine alone, {games:,} games, {engine_rounds} rounds", flush=True)
    started = time.perf_counter()
    out["engine"] = engine_alone(games, engine_rounds)
    out["engine"]["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _ratio(value: float, against: float) -> float | None:
    return round(value / against, 2) if against else None


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    section = result.get("rulesets")
    if not section:
        return []
    out: list[tuple[str, str, bool | None]] = []
    for name in RULESETS[1:]:
        entry = section.get(name) or {}
        ratio = entry.get("ratio_to_gammon42")
        out.append(
            (
                f"hot: {name} >= {GOAL}x gammon42 (exactly-once checked)",
                "n/a" if ratio is None else f"{ratio:.2f}x",
                None if ratio is None else ratio >= GOAL and bool(entry.get("check_ok")),
            )
        )
    return out


def lines(result: dict[str, Any]) -> list[str]:
    section = result.get("rulesets")
    if not section:
        return []
    shown = []
    for name in RULESETS:
        entry = section[name]
        rounds = " / ".join(f"{r:,}" for r in entry["rounds"])
        text = (
            f"  {name:<10} {entry['events_per_second']:>7,} ev/s (rounds {rounds}), "
            f"{entry['worker_cpu_us_per_event']:,} us cpu/ev"
        )
        if name != BASELINE:
            text += (
                f", {entry['ratio_to_gammon42']}x gammon42 (rounds "
                + " / ".join(f"{r}" for r in entry["round_ratios"])
                + f"; cpu {entry['cpu_ratio_to_gammon42']}x)"
            )
        text += ", ok" if entry["check_ok"] else ", CHECK FAILED"
        shown.append(text)
    engine = section.get("engine")
    if engine:
        parts = []
        for name in RULESETS:
            entry = engine[name]
            part = f"{name} {entry['cpu_us_per_event']:.2f}"
            if name != BASELINE:
                part += f" ({entry['ratio_to_gammon42']}x)"
            parts.append(part)
        shown.append("  the engine alone, apply, cpu us/ev (best): " + ", ".join(parts))
    head = (
        f"rulesets, the hot ladder ({section['events']:,} games among "
        f"{section['players']:,} players), 1 burst worker, {section['rounds']} round(s):"
    )
    return [head, *shown]
