"""``ladder calibrate`` and ``ladder backtest``: is the rating right, and would another be?

``calibrate LADDER [--since T] [--until T] [--version V] [--json] [--plot FILE.svg|FILE.png]``
reports how well the stored expected scores forecast the stored results (``worker.ops.
calibrate``). ``backtest LADDER [--ruleset NAME] --set KEY=VALUE... [--from T] [--json]
[--plot FILE]`` replays the stored events with candidate parameters, or under another
ruleset, and reports both side by side (``worker.ops.backtest``); it writes nothing.

Times are RFC 3339 (``2026-11-01T00:00:00Z``) or a date (``2026-11-01``, midnight UTC); a time
without an offset is UTC. Exit status: 0 done; 1 could not do it (a store unreachable, a plot
that cannot be written); 2 asked wrongly (unknown ladder or version, a bad time, an unknown
parameter or ruleset: the valid names are listed).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import display_rating
from worker.entrypoints.cli.terminal import EXIT_FAILED, Refused, configured_ladder, plural, safe

if TYPE_CHECKING:
    from engine import Ruleset
    from worker.bootstrap import Runtime

SHOWN_MOVES = 10  # players listed by how far they move (``--json`` lists all)


def register(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="how well the stored expected scores forecast the results")
    p.add_argument("ladder")
    p.add_argument("--since", type=_time, help="games that ended at or after this time")
    p.add_argument("--until", type=_time, help="games that ended before this time")
    p.add_argument("--version", help="one ruleset version (default: every version)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=_plot_path, help="draw the curve to FILE.svg or FILE.png")
    p.set_defaults(handler=cmd_calibrate)

    p = sub.add_parser(
        "backtest",
        help="replay the stored events with other parameters or ruleset (writes nothing)",
        description="Replays the ladder's stored events with the --set values in every ruleset "
        "version in force from --from, or under the --ruleset named (its defaults with the "
        "--set values), and compares with the stored history.",
    )
    p.add_argument("ladder")
    p.add_argument(
        "--ruleset",
        metavar="NAME",
        help="another ruleset in force from --from: gammon42, fibs, prostriker, glicko2, openskill",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of the ruleset, e.g. divisor=1600 (repeat for more)",
    )
    p.add_argument("--from", dest="start", type=_time, help="default: the first event")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=_plot_path, help="draw both curves to FILE.svg or FILE.png")
    p.set_defaults(handler=cmd_backtest)


def cmd_calibrate(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.calibrate import calibrate

    ladder_config = configured_ladder(rt.config, args.ladder)
    if args.since is not None and args.until is not None and args.since >= args.until:
        raise Refused(
            f"--since {args.since.isoformat()} must be before --until {args.until.isoformat()}"
        )
    if args.version is not None:
        known = [v.rules.version for v in ladder_config.versions]
        if args.version not in known:
            raise Refused(
                f"ladder {args.ladder!r} has no version {args.version!r} (has: {', '.join(known)})"
            )
    found = calibrate(
        rt.databases.for_ladder(ladder_config.name),
        ladder_config,
        args.since,
        args.until,
        args.version,
    )
    if args.plot is not None:
        from worker.entrypoints.console.charts import Series, calibration_svg

        series = [Series(f"version {v}", m["buckets"]) for v, m in found.versions.items()]
        _write_plot(rt, args.plot, calibration_svg(series, f"{args.ladder}: calibration"))
    if args.json:
        print(json.dumps(found.as_json()))
        return 0
    window = _window(args.since, args.until)
    print(f"{args.ladder}: {found.games} rated games{window}")
    for version, metrics in found.versions.items():
        print()
        _print_metrics(ladder_config.current, f"version {version}", metrics)
    if not found.versions:
        print("  (no rated games in the window)")
    return 0


def cmd_backtest(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.backtest import BadParameter, backtest, parse_overrides, parse_ruleset

    ladder_config = configured_ladder(rt.config, args.ladder)
    ruleset = None
    try:
        if args.ruleset is not None:
            ruleset, overrides = parse_ruleset(args.ruleset, args.overrides)
        elif args.overrides:
            overrides = parse_overrides(ladder_config, args.overrides)
        else:
            raise BadParameter("give --set KEY=VALUE (e.g. divisor=1600) or --ruleset NAME")
    except BadParameter as exc:
        raise Refused(str(exc)) from None
    found = backtest(
        rt.databases.for_ladder(ladder_config.name),
        ladder_config,
        overrides,
        args.start,
        ruleset,
    )
    shown = " ".join(f"{k}={v}" for k, v in overrides.items())
    stored_name, candidate_name = "stored", "candidate"
    if ruleset is not None:
        described = ruleset.kind + (f" {shown}" if shown else "")
        stored_name, candidate_name = f"stored {ladder_config.ruleset}", f"candidate {described}"
    legend = [stored_name, candidate_name if ruleset is None else f"candidate {ruleset.kind}"]
    report = found.as_json()
    if args.plot is not None:
        from worker.entrypoints.console.charts import Series, calibration_svg

        series = [
            Series(legend[0], report["stored"]["buckets"]),
            Series(legend[1], report["candidate"]["buckets"]),
        ]
        if ruleset is None:
            listed = ", ".join(f"{k}={v}" for k, v in overrides.items())
            title = f"{args.ladder}: stored against {listed}"
        else:
            title = f"{args.ladder}: stored against {described}"
        _write_plot(rt, args.plot, calibration_svg(series, title))
    if args.json:
        print(json.dumps(report))
        return 0
    since = f" from {found.start.isoformat()}" if found.start else ""
    under = "" if ruleset is None else f"under {ruleset.kind}" + (" " if shown else "")
    print(
        f"{args.ladder}: backtest {under}{shown}{since}: {plural(found.events, 'event')} "
        f"replayed in {found.seconds:.2f}s ({found.rate:,.0f} events/s), nothing written"
    )
    candidate_rules = ladder_config.current if ruleset is None else ruleset
    sides = [
        (stored_name, ladder_config.current, report["stored"]),
        (candidate_name, candidate_rules, report["candidate"]),
    ]
    print()
    _print_comparison(sides, report["rated_by_one_side_only"])
    for title, rules, metrics in sides:
        print()
        _print_metrics(rules, title, metrics)
    moves = found.moves() if found.same_scale else []
    if moves:
        rules = ladder_config.current
        print()
        print(f"largest moves of {plural(len(moves), 'player')} (candidate - stored):")
        for pid, move in moves[:SHOWN_MOVES]:
            stored, candidate = found.players[pid]
            assert stored is not None
            delta = display_rating(rules, move)
            print(
                f"  {safe(pid)[:24]:<24} {display_rating(rules, stored):>9} -> "
                f"{display_rating(rules, candidate):>9}  "
                f"({delta if delta.startswith('-') else '+' + delta})"
            )
    return 0


def _print_comparison(
    sides: list[tuple[str, Ruleset, dict[str, Any]]], one_side: dict[str, int]
) -> None:
    """Both sides' figures side by side, on the same games."""

    def figure(value: float | None, form: str) -> str:
        return "-" if value is None else format(value, form)

    width = max(18, *(len(name) + 2 for name, _, _ in sides))
    print(f"{'':<26}" + "".join(f"{name:>{width}}" for name, _, _ in sides))
    rows: list[tuple[str, list[str]]] = [
        ("games", [str(m["games"]) for _, _, m in sides]),
        ("log loss", [figure(m["log_loss"], ".4f") for _, _, m in sides]),
        ("Brier", [figure(m["brier"], ".4f") for _, _, m in sides]),
        ("hit rate", [figure(m["hit_rate"], ".4f") for _, _, m in sides]),
        ("board sd", [figure(m["inflation"]["stdev"], ".2f") for _, _, m in sides]),
        ("drift a month", [figure(m["inflation"]["drift"], "+.3f") for _, _, m in sides]),
        (
            "drift a month / board sd",
            [figure(m["inflation"]["drift_in_sd"], "+.4f") for _, _, m in sides],
        ),
    ]
    for name, values in rows:
        print(f"{name:<26}" + "".join(f"{v:>{width}}" for v in values))
    if one_side["stored"] or one_side["candidate"]:
        print(
            f"(left out, rated by one side only: {one_side['stored']} by the stored ladder, "
            f"{one_side['candidate']} by the candidate)"
        )


def _print_metrics(rules: Ruleset, title: str, metrics: dict[str, Any]) -> None:
    games = metrics["games"]
    if not games:
        print(f"{title}: no rated games")
        return
    print(
        f"{title}: {plural(games, 'game')}, Brier {metrics['brier']:.4f}, "
        f"log loss {metrics['log_loss']:.4f}, hit rate {metrics['hit_rate']:.4f}"
    )
    print(f"  {'expected':<14} {'games':>8} {'mean p':>8} {'observed':>9}")
    for b in metrics["buckets"]:
        if not b["games"]:
            continue
        close = "]" if b["high"] == 1.0 else ")"
        span = f"[{b['low']:.2f}, {b['high']:.2f}{close}"
        print(f"  {span:<14} {b['games']:>8} {b['mean_expected']:>8.3f} {b['observed']:>9.3f}")
    s = metrics["spread"]
    if s["players"]:

        def r(v: float) -> str:
            return display_rating(rules, v)

        print(
            f"  ratings of {s['players']} active players: p10 {r(s['p10'])}, p50 {r(s['p50'])}, "
            f"p90 {r(s['p90'])}, sd {s['stdev']:.1f}, central half {r(s['central_half'])} "
            f"(p25 {r(s['p25'])} to p75 {r(s['p75'])})"
        )
    for length, m in metrics.get("match_lengths", {}).items():
        print(
            f"  {length}-point matches: {plural(m['games'], 'game')}, Brier {m['brier']:.4f}, "
            f"log loss {m['log_loss']:.4f}"
        )
    _print_inflation(rules, metrics.get("inflation"))


def _print_inflation(rules: Ruleset, found: dict[str, Any] | None) -> None:
    """The mean board rating at each month's end, and its drift a month."""
    if not found or not found["months"]:
        return
    months = [m for m in found["months"] if m["mean"] is not None]
    shown = ", ".join(f"{m['month']} {display_rating(rules, m['mean'])}" for m in months[-12:])
    more = "..., " if len(months) > 12 else ""
    print(f"  mean board rating at each month's end: {more}{shown}")
    if found["drift"] is not None:
        share = found["drift_in_sd"]
        print(
            f"  inflation: {found['drift']:+.3f} a month"
            + ("" if share is None else f" ({share:+.4f} of the board's sd {found['stdev']:.2f})")
        )


def _write_plot(rt: Runtime, path: Path, svg: str) -> None:
    """``svg`` written to ``path`` (as a PNG, drawn by the browser); refused with 1 if not."""
    try:
        if path.suffix.lower() == ".png":
            from worker.entrypoints.console.png import BrowserMissing, svg_to_png

            try:
                svg_to_png(svg, path, rt.given.chromium)
            except (BrowserMissing, RuntimeError) as exc:
                raise Refused(str(exc), EXIT_FAILED) from None
        else:
            path.write_text(svg, encoding="utf-8")
    except OSError as exc:
        raise Refused(f"cannot write {path}: {exc.strerror or exc}", EXIT_FAILED) from None
    print(f"ladder: plot written to {path}", file=sys.stderr)


def _window(since: datetime | None, until: datetime | None) -> str:
    parts = []
    if since is not None:
        parts.append(f"since {since.isoformat()}")
    if until is not None:
        parts.append(f"until {until.isoformat()}")
    return f" ({', '.join(parts)})" if parts else ""


def _time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time; write 2026-11-01T00:00:00Z or 2026-11-01"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _plot_path(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() not in (".svg", ".png"):
        raise argparse.ArgumentTypeError(f"{text!r}: the plot is FILE.svg or FILE.png")
    return path
