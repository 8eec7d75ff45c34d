"""The results as a table: each round's median, the goals and whether each is met."""

from __future__ import annotations

from typing import Any

from bench import arrival, env, floorbench, history, moderation, rulesets
from bench import boards as boards_bench

LATENCY_GOAL_MS = 20  # publish-to-visible p99 at 1,000 events/s, each workload


def median_round(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The run whose ``key`` is the median (the lower one of an even count), with every
    round's value beside it; an exactly-once check passes only if it passed in every round."""
    measured = [r for r in runs if r.get(key) is not None]
    if not measured:
        return runs[-1]
    ordered = sorted(measured, key=lambda r: r[key])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds"] = [r.get(key) for r in runs]
    checks = [r["check"] for r in runs if "check" in r]
    if checks:
        problems = [p for c in checks for p in c.get("problems", [])]
        chosen["check"] = {**chosen["check"], "ok": all(c["ok"] for c in checks)}
        chosen["check"]["problems"] = problems
    return chosen


def _rounds(entry: dict[str, Any], suffix: str = "") -> str:
    values = entry.get("rounds") or []
    if len(values) < 2:
        return ""
    return "median of " + " / ".join(_fmt(v, suffix) for v in values)


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.2f}{suffix}"
    if isinstance(value, int):
        return f"{value:,}{suffix}"
    return f"{value}{suffix}"


def goals(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    ingest_runs = result.get("ingest", {})
    best = max((r["events_per_second"] for r in ingest_runs.values()), default=None)
    out.append(
        (
            "ingest >= 5,000 events/s (synchronous_commit on)",
            _fmt(best),
            None if best is None else best >= 5_000,
        )
    )
    ratios = [r.get("ratio_to_noop") for r in ingest_runs.values() if r.get("ratio_to_noop")]
    best_ratio = max(ratios, default=None)
    out.append(
        (
            "ingest > 10x RQ no-op job rate",
            _fmt(best_ratio, "x"),
            None if best_ratio is None else best_ratio > 10,
        )
    )
    checks = [r["check"]["ok"] for r in ingest_runs.values()]
    checks += [r["check"]["ok"] for r in result.get("batch_sizes", {}).values()]
    out.append(
        (
            "exactly-once check after every drain",
            "ok" if checks and all(checks) else "FAILED" if checks else "n/a",
            all(checks) if checks else None,
        )
    )
    for workload in arrival.WORKLOADS:
        lat = (result.get("latency") or {}).get(workload)
        if lat is None:
            continue
        p99 = lat.get("p99_ms")
        met = (
            None
            if p99 is None
            else p99 <= LATENCY_GOAL_MS and not lat.get("not_visible_within_grace")
        )
        out.append(
            (
                f"latency p99 <= {LATENCY_GOAL_MS} ms at the offered load, {workload}",
                _fmt(p99, " ms"),
                met,
            )
        )
    for name, entry in (result.get("reads") or {}).items():
        if isinstance(entry, dict):
            ratio = entry.get("ratio")
            out.append(
                (
                    f"reads {name} >= 0.8x raw redis-py",
                    _fmt(ratio, "x"),
                    None if ratio is None else ratio >= 0.8,
                )
            )
    rb = result.get("rebuild") or {}
    seconds = rb.get("seconds")
    players = rb.get("players", 0)
    scaled = None if seconds is None else seconds * 1_000_000 / max(players, 1)
    label = "rebuild 1,000,000 players <= 20 s"
    if players and players != 1_000_000:
        label += f" (scaled from {players:,})"
    out.append((label, _fmt(seconds, " s"), None if scaled is None else scaled <= 20))
    rp = result.get("replay") or {}
    rate = rp.get("events_per_second")
    met = None if rate is None else rate >= 20_000 and rp.get("mismatches") == 0
    out.append(("mix: ladder verify >= 20,000 events/s, 0 mismatches", _fmt(rate), met))
    out.extend(history.goals(result))
    out.extend(floorbench.goals(result))
    return out


def print_table(result: dict[str, Any]) -> None:
    line = "-" * 96
    print(line)
    print(
        f"ladder benchmark  {result['started_at']}  mode={result['mode']}  "
        f"cpus={result['machine']['cpus']}  python={result['machine']['python']}"
    )
    print(line)
    print(
        f"{'ingest':<12}{'events':>8}{'drain s':>9}{'events/s':>10}{'wall ev/s':>11}"
        f"{'cpu us/ev':>10}{'no-op jobs/s':>14}{'ratio':>8}  check"
    )
    for name, r in result.get("ingest", {}).items():
        print(
            f"  {name:<10}{r['events']:>8,}{r['drain_seconds']:>9.2f}"
            f"{r['events_per_second']:>10,}{r['wall_events_per_second']:>11,}"
            f"{r['worker_cpu_us_per_event']:>10,}{_fmt(r.get('noop_jobs_per_second')):>14}"
            f"{_fmt(r.get('ratio_to_noop'), 'x'):>8}  "
            f"{'ok' if r['check']['ok'] else 'FAILED: ' + '; '.join(r['check']['problems'])}"
        )
        if _rounds(r):
            print(f"    events/s: {_rounds(r)}")
    sweep = result.get("batch_sizes") or {}
    if sweep:
        print(
            f"{'LADDER_BATCH_SIZE, 2 workers':<30}{'events':>8}{'drain s':>9}{'events/s':>10}"
            f"{'wall ev/s':>11}{'cpu us/ev':>10}"
        )
        for name, r in sweep.items():
            print(
                f"  {name:<28}{r['events']:>8,}{r['drain_seconds']:>9.2f}"
                f"{r['events_per_second']:>10,}{r['wall_events_per_second']:>11,}"
                f"{r['worker_cpu_us_per_event']:>10,}  "
                f"{'ok' if r['check']['ok'] else 'FAILED'}"
            )
    for workload in arrival.WORKLOADS:
        lat = (result.get("latency") or {}).get(workload)
        if lat is None:
            continue
        print(
            f"latency, {workload}: {lat['events']:,} events at "
            f"{lat['offered_events_per_second']:,}/s for {lat['seconds']:.0f} s, "
            f"{lat['workers']} workers: p50 {_fmt(lat['p50_ms'])} ms, "
            f"p90 {_fmt(lat['p90_ms'])} ms, p99 {_fmt(lat['p99_ms'])} ms, "
            f"max {_fmt(lat['max_ms'])} ms, not visible {lat['not_visible_within_grace']} "
            f"({lat['grace_seconds']:.0f} s after)"
        )
        if _rounds(lat):
            print(f"         p99: {_rounds(lat, ' ms')}")
        print(
            f"         seen on the receipt stream; CPU in cores: workers "
            f"{lat['worker_cpu_cores']:.2f}, publisher and reader {lat['bench_cpu_cores']:.2f}"
        )
    rd = result.get("reads")
    if rd:
        print(
            f"{'reads (' + format(rd['players'], ',') + ' players)':<34}"
            f"{'reader/s':>10}{'raw/s':>10}{'ratio':>8}  note"
        )
        for name, e in rd.items():
            if isinstance(e, dict):
                print(
                    f"  {name:<32}{_fmt(e['reader_per_second']):>10}"
                    f"{_fmt(e['raw_per_second']):>10}{_fmt(e['ratio'], 'x'):>8}  {e['note']}"
                )
    rb = result.get("rebuild")
    if rb:
        if rb.get("seconds") is None:
            print(f"rebuild {rb['players']:,} players: n/a ({rb['note']})")
        else:
            print(
                f"rebuild {rb['players']:,} players: {rb['seconds']:.2f} s "
                f"({_fmt(rb.get('command_seconds'), ' s')} with the command's start-up); Redis "
                f"{rb['bytes_per_player_memory_usage']} B/player (MEMORY USAGE), "
                f"{rb['bytes_per_player_used_memory_delta']} B/player (used_memory delta)"
            )
            if _rounds(rb):
                print(f"    seconds: {_rounds(rb, ' s')}")
    rp = result.get("replay")
    if rp:
        print(
            f"ladder verify: {rp['events']:,} events in {_fmt(rp['seconds'], ' s')} "
            f"({_fmt(rp['events_per_second'])} events/s; "
            f"{_fmt(rp.get('command_seconds'), ' s')} with start-up"
            f"{env.cpu_text(rp)}; boards checked in "
            f"{_fmt(rp.get('redis_seconds'), ' s')} summed over ladders), "
            f"{rp.get('mismatches')} mismatches"
        )
    floorbench.print_lines(result)
    for shown in rulesets.lines(result):
        print(shown)
    boards_bench.print_section(result)
    if result.get("void"):
        print(moderation.line(result["void"]))
    for shown in history.lines(result):
        print(shown)
    print(f"worker peak RSS: {_fmt(result.get('worker_peak_rss_mib'), ' MiB')}")
    for name, error in (result.get("errors") or {}).items():
        print(f"{name}: FAILED: {error}")
    print(line)
    print(f"{'goal':<58}{'measured':>16}  met")
    for label, measured, met in result["goals"]:
        print(f"  {label:<56}{measured:>16}  {'n/a' if met is None else 'yes' if met else 'NO'}")
    print(line)


# -- main ------------------------------------------------------------------------------------
