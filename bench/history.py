"""Bench section ``history``: the replaying commands over one ladder's long history.

``ladder verify``, ``ladder backtest`` and ``ladder void`` replay a ladder's whole log, so
what they cost is set by its events, plus a per-player part (the final states, the boards).
The ``replay`` and ``void`` sections run them after the mix (three ladders, about one game
per player: the per-player part is as large as the events'). This section runs them on the
history a replay is for: one gammon42 ladder of ``events`` games among ``players`` players
(``bench.events.generate_hot``: games 30 s apart, so the 7-day windows are full), ingested
by two burst workers, then

- ``ladder verify gammon42 --json`` (goal: >= 20,000 events/s, 0 mismatches; the median of
  ``ROUNDS`` runs, alternated with the verify of the ladder with voids below),
- ``ladder backtest gammon42 --set divisor=1600 --json`` (goal: 1,000,000 games in under a
  minute, at the rate measured here),
- ``ladder backtest gammon42 --ruleset glicko2 --json`` and ``--ruleset openskill`` (goal:
  >= 20,000 events/s each; the ``--set`` one beside them is the same run's baseline),
- ``ladder void gammon42 <its first game>`` (goal: 1,000,000 later events re-rated in under
  a minute, at the rate measured here), as it changes the ladder;
- ``ladder verify gammon42 --json`` on a ladder with many voids
  (``bench.moderation.voided_ladder``: ``VOIDS`` voids spread over as many games as the
  ladder above, of the same shape, each void of a recent game), on a database and Redis db
  of its own: verify's cost grows with the events and what each void changed, not with
  voids times events (goals: the same >= 20,000 events/s, and >= 0.8x the rate of the
  verify without voids). The two verifies are alternated, ``ROUNDS`` rounds, the order turned
  each round, and the medians compared: on a shared machine the rate of one command moves by
  2x between minutes, so a single run of each made the ratio anything from 0.7x to 1.3x.

Each rate is the events over the command's own reported seconds (interpreter start-up left
out); the whole command's seconds are kept beside it. A rate measured on fewer than
1,000,000 events is a projection for 1,000,000, and the table says it is.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import env
from bench.events import generate_hot
from bench.moderation import void_first_game, voided_ladder

GOAL_EVENTS = 1_000_000
GOAL_SECONDS = 60.0
GOAL_VERIFY_RATE = 20_000
GOAL_VOIDS_RATIO = 0.8  # verify with the voids against verify without, the same run's
GOAL_RULESET_RATE = 20_000  # backtest --ruleset, each of RULESETS
RULESETS = ("glicko2", "openskill")
LADDER = "gammon42"
VOIDS = 100  # the many-voids ladder's voids
ROUNDS = 3  # verify without and with the voids, alternated


def run(
    target: env.Target,
    events: int,
    players: int,
    log: Path,
    ingest: Callable[..., dict[str, Any]],
) -> dict[str, Any]:
    drained = ingest(target, events, 2, None, log, stream=generate_hot(events, players=players))
    found: dict[str, Any] = {
        "events": events,
        "players": players,
        "ingest_events_per_second": drained["events_per_second"],
        "check_ok": drained["check"]["ok"],
    }
    found["verify"], found["voids"] = verify_beside_voided(target, events, players, VOIDS, log)
    ran = env.ladder_json(target, ["backtest", LADDER, "--set", "divisor=1600", "--json"], log)
    found["backtest"] = _rate(ran, ran.shown, "events")
    for ruleset in RULESETS:
        ran = env.ladder_json(target, ["backtest", LADDER, "--ruleset", ruleset, "--json"], log)
        found[f"backtest_{ruleset}"] = _rate(ran, ran.shown, "events")
    ran = void_first_game(target, LADDER, log)
    found["void"] = _rate(ran, ran.shown, "events_replayed")
    if ran.shown is not None:
        found["void"]["receipts_refreshed"] = ran.shown.get("receipts_refreshed")
    return found


def verify_beside_voided(
    target: env.Target, games: int, players: int, voids: int, log: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``ladder verify`` of ``target``'s ladder and of a ladder of ``games`` games with
    ``voids`` voids spread over it (a database and Redis db of its own, the next number,
    leased as the benchmark's is), alternated: the median run of each, its rounds beside it,
    and the ratio of the medians."""
    base, _ = target.redis_url.rsplit("/", 1)
    voided = env.Target(f"{base}/{target.db + 1}", f"{target.database}_voided")
    with voided.lease():
        try:
            voided_ladder(voided, games, players, voids, log)
            rounds: dict[str, list[dict[str, Any]]] = {"plain": [], "voided": []}
            for number in range(ROUNDS):
                order = [("plain", target), ("voided", voided)]
                for name, where in order if number % 2 == 0 else order[::-1]:
                    rounds[name].append(_verify(where, log))
        finally:
            voided.drop()
    plain, with_voids = _median(rounds["plain"]), _median(rounds["voided"])
    with_voids["games"], with_voids["voids"] = games, voids
    if plain.get("events_per_second") and with_voids.get("events_per_second"):
        ratio = with_voids["events_per_second"] / plain["events_per_second"]
        with_voids["ratio_to_verify"] = round(ratio, 2)
    return plain, with_voids


def _verify(target: env.Target, log: Path) -> dict[str, Any]:
    ran = env.ladder_json(target, ["verify", LADDER, "--json"], log)
    entry = (ran.shown or {}).get("ladders", {}).get(LADDER)
    found = _rate(ran, entry, "events")
    if entry is not None:
        found["mismatches"] = entry["mismatch_count"]
    return found


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of the median rate, with every run's rate and CPU; a failed run (no rate, or a
    mismatch) is the result, whatever the others did."""
    failed = [r for r in runs if not r.get("events_per_second") or r.get("mismatches") != 0]
    if failed:
        return dict(failed[0])
    rates = [r["events_per_second"] for r in runs]
    middle = statistics.median_low(rates)
    chosen = dict(next(r for r in runs if r["events_per_second"] == middle))
    chosen["rounds"] = rates
    chosen["cpu_rounds"] = [r.get("command_cpu_us_per_event") for r in runs]
    return chosen


def _rate(ran: env.Ran, shown: dict[str, Any] | None, count: str) -> dict[str, Any]:
    """A command's rate from ``shown`` (its JSON, or its ladder's part), and its CPU an event
    (the whole command's, start-up included: steadier than the rate on a shared machine)."""
    if shown is None or not shown.get("seconds"):
        return {"events": 0, "seconds": None, "exit": ran.code}
    events, seconds = int(shown[count]), float(shown["seconds"])
    rate = events / seconds
    return {
        "events": events,
        "seconds": round(seconds, 3),
        "command_seconds": round(ran.seconds, 2),
        "events_per_second": round(rate),
        "command_cpu_us_per_event": ran.cpu_us_per_event(events),
        "seconds_for_1m": round(GOAL_EVENTS / rate, 1),
        "exit": ran.code,
    }


def lines(result: dict[str, Any]) -> list[str]:
    found = result.get("history")
    if not found:
        return []
    out = [
        f"history: one {LADDER} ladder, {found['events']:,} games among {found['players']:,} "
        f"players (ingested at {found['ingest_events_per_second']:,} events/s, exactly-once "
        f"{'ok' if found['check_ok'] else 'FAILED'})"
    ]
    for name in ("verify", "backtest", *(f"backtest_{r}" for r in RULESETS), "void"):
        step = found.get(name) or {}
        shown = name.replace("backtest_", "backtest --ruleset ")
        if name.startswith("backtest_") and not step:
            continue  # a run from before the --ruleset measurements
        if not step.get("seconds"):
            out.append(f"    ladder {shown}: not measured (exit {step.get('exit')})")
            continue
        extra = ""
        if name == "verify":
            extra = f", {step.get('mismatches')} mismatches"
        if name == "void":
            extra = f", {step.get('receipts_refreshed')} receipts refreshed"
        out.append(
            f"    ladder {shown}: {step['events']:,} events in {step['seconds']:.2f} s "
            f"({step['events_per_second']:,} events/s; {step['command_seconds']:.2f} s with "
            f"start-up{env.cpu_text(step)}{extra}); 1,000,000 events at this rate: "
            f"{step['seconds_for_1m']} s"
        )
    voided = found.get("voids") or {}
    if voided.get("seconds"):
        out.append(
            f"    ladder verify, {voided['voids']} voids over {voided['games']:,} games: "
            f"{voided['events']:,} events in {voided['seconds']:.2f} s "
            f"({voided['events_per_second']:,} events/s{env.cpu_text(voided)}; "
            f"{voided.get('mismatches')} mismatches"
            + (
                f"; {voided['ratio_to_verify']}x the rate without voids"
                if voided.get("ratio_to_verify")
                else ""
            )
            + ")"
            + (
                f"; rounds alternated, events/s: without {found['verify']['rounds']}, "
                f"with {voided['rounds']}"
                if voided.get("rounds") and (found.get("verify") or {}).get("rounds")
                else ""
            )
        )
    elif voided:
        out.append(f"    ladder verify with voids: not measured (exit {voided.get('exit')})")
    return out


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    found = result.get("history")
    if not found:
        return []
    scaled = "" if found["events"] >= GOAL_EVENTS else f" (at {found['events']:,}'s rate)"
    verify = found.get("verify") or {}
    rate = verify.get("events_per_second")
    out: list[tuple[str, str, bool | None]] = [
        (
            f"history: ladder verify >= {GOAL_VERIFY_RATE:,} events/s, 0 mismatches",
            "n/a" if rate is None else f"{rate:,}",
            None if rate is None else rate >= GOAL_VERIFY_RATE and verify["mismatches"] == 0,
        )
    ]
    voided = found.get("voids") or {}
    rate = voided.get("events_per_second")
    out.append(
        (
            f"history: ladder verify with {VOIDS} voids >= {GOAL_VERIFY_RATE:,} events/s, "
            "0 mismatches",
            "n/a" if rate is None else f"{rate:,}",
            None if rate is None else rate >= GOAL_VERIFY_RATE and voided["mismatches"] == 0,
        )
    )
    if voided.get("games") == found["events"]:  # a run from before: a smaller ladder
        ratio = voided.get("ratio_to_verify")
        out.append(
            (
                f"history: ladder verify with {VOIDS} voids >= {GOAL_VOIDS_RATIO}x verify "
                "without (same run, same size)",
                "n/a" if ratio is None else f"{ratio}x",
                None if ratio is None else ratio >= GOAL_VOIDS_RATIO,
            )
        )
    for ruleset in RULESETS:
        step = found.get(f"backtest_{ruleset}")
        if step is None:
            continue  # a run from before the --ruleset measurements
        rate = step.get("events_per_second")
        out.append(
            (
                f"history: backtest --ruleset {ruleset} >= {GOAL_RULESET_RATE:,} events/s",
                "n/a" if rate is None else f"{rate:,}",
                None if rate is None else rate >= GOAL_RULESET_RATE,
            )
        )
    for name in ("backtest", "void"):
        step = found.get(name) or {}
        seconds = step.get("seconds_for_1m")
        out.append(
            (
                f"history: {name} 1,000,000 < {GOAL_SECONDS:.0f} s{scaled}",
                "n/a" if seconds is None else f"{seconds} s",
                None if seconds is None else seconds < GOAL_SECONDS,
            )
        )
    return out
