"""Operator commands: ``rebuild``, ``reconcile`` and ``season`` (``dlq`` has its own module).

Every handler takes the runtime and the parsed arguments and returns the exit status:
0 done, 1 the check found something (reconcile without ``--repair``) or nothing matched,
2 refused (bad arguments, unknown ladder, no confirmation).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.terminal import configured_ladder, error, plural, safe
from worker.ladders import SEASON_RESETS, season_reset
from worker.ops.progress import Progress

if TYPE_CHECKING:
    from worker.bootstrap import Runtime
    from worker.ops.reconcile import Report


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("rebuild", help="rebuild a ladder's Redis keys from PostgreSQL")
    p.add_argument("ladder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_rebuild)

    p = subparsers.add_parser("reconcile", help="compare Redis with PostgreSQL; --repair fixes")
    p.add_argument("ladder", nargs="?", help="one ladder (default: every configured ladder)")
    p.add_argument("--repair", action="store_true", help="re-project the players that differ")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_reconcile)

    season = subparsers.add_parser("season", help="close and list seasons").add_subparsers(
        dest="season_command", required=True, metavar="{close,list}"
    )
    p = season.add_parser("close", help="archive the standings, reset, open the next season")
    p.add_argument("ladder")
    p.add_argument("--name", required=True, help="the name the closed season is archived as")
    p.add_argument(
        "--reset",
        type=season_reset,  # toward-start is toward_start
        choices=SEASON_RESETS,
        help="override the ladder's configured reset policy",
    )
    p.add_argument("--fraction", type=float, help="for toward_start: share of the way (0-1]")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_season_close)
    p = season.add_parser("list", help="the ladder's seasons")
    p.add_argument("ladder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_season_list)


# -- rebuild and reconcile -----------------------------------------------------------------


def cmd_rebuild(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.rebuild import count_players, rebuild

    ladder_config = configured_ladder(rt.config, args.ladder)
    engine = rt.databases.for_ladder(args.ladder)
    progress = Progress(f"rebuild {args.ladder}", count_players(engine, args.ladder))
    report = rebuild(engine, rt.leaderboard_redis, ladder_config, progress)
    if args.json:
        print(json.dumps(report.as_json()))
    else:
        print(
            f"ladder: rebuilt {report.ladder}: {plural(report.players, 'player')}, "
            f"{report.boards['rating']} rated, {report.boards['public']} public, "
            f"{report.boards['boosted']} boosted, {report.seasons} season archives, "
            f"{report.stale_hashes} stale hashes deleted, in {report.seconds:.1f}s"
        )
    return 0


def cmd_reconcile(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.logreplay import refresh_receipts
    from worker.ops.rebuild import count_players
    from worker.ops.reconcile import Report, check, marked, repair, settle

    if args.ladder is not None:
        ladders = [configured_ladder(rt.config, args.ladder)]
    else:
        ladders = list(rt.config.ladders.values())
    total = Report()
    remaining = Report()
    redis = rt.leaderboard_redis
    for ladder_config in ladders:
        name = ladder_config.name
        engine = rt.databases.for_ladder(name)
        progress = Progress(f"reconcile {name}", count_players(engine, name))
        # A moderation action marked not projected (its Redis write failed) is healed by the
        # repair (and, for a void, the receipts it changed made true): its mark comes off once
        # the ladder is clean.
        through = marked(engine, name) if args.repair else None
        report = check(engine, redis, ladder_config, progress)
        after = report
        if args.repair and not report.clean:
            repair(engine, redis, ladder_config, report)
            after = check(engine, redis, ladder_config)
            remaining.merge(after)
        if through is not None and after.clean:
            if rt.receipts is not None:  # a void's receipts too
                refresh_receipts(engine, ladder_config, rt.receipts)
            settle(engine, name, through)
        total.merge(report)
    if args.json:
        shown = total.as_json()
        if args.repair:
            shown["remaining"] = {k: len(getattr(remaining, k)) for k in ("missing", "extra")}
            shown["remaining"]["wrong"] = len(remaining.wrong)
        print(json.dumps(shown))
    else:
        _print_drift(total)
        if args.repair and not total.clean:
            state = "clean" if remaining.clean else "still drifting (run again)"
            print(f"ladder: repaired {plural(total.repaired, 'player')}; Redis is now {state}")
    if total.clean:
        return 0
    return 0 if args.repair and remaining.clean else 1


def _print_drift(report: Report) -> None:
    print(
        f"ladder: {plural(report.players, 'player')} compared: {len(report.missing)} missing, "
        f"{len(report.extra)} extra, {len(report.wrong)} wrong"
    )
    for kind in ("missing", "extra", "wrong"):
        for drift in getattr(report, kind):
            detail = ""
            if drift.expected is not None or drift.actual is not None:
                detail = f" expected={drift.expected!r} actual={drift.actual!r}"
            print(f"  {kind:<8} {safe(drift.key)} {safe(drift.player)}{detail}")


# -- seasons -------------------------------------------------------------------------------


def cmd_season_close(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import seasons

    ladder_config = configured_ladder(rt.config, args.ladder)
    try:
        policy, source = seasons.choose_policy(ladder_config, args.reset, args.fraction)
        engine = rt.databases.for_ladder(args.ladder)
        closed = seasons.close(engine, rt.leaderboard_redis, ladder_config, args.name, policy)
    except seasons.SeasonError as exc:
        error(str(exc))
        return 2
    if args.json:
        print(json.dumps({**closed.as_json(), "policy": policy.as_json(), "source": source}))
    elif closed.already:
        print(
            f"ladder: season {closed.name!r} of {closed.ladder} was already closed "
            f"at {closed.closed_at.isoformat()}; nothing changed"
        )
    else:
        print(
            f"ladder: closed season {closed.number} of {closed.ladder} as {closed.name!r}: "
            f"{plural(closed.players, 'player')} archived, reset {policy.reset} ({source}), "
            f"{closed.reset} ratings changed; season {closed.number + 1} is open"
        )
    return 0


def cmd_season_list(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import seasons

    configured_ladder(rt.config, args.ladder)
    shown = seasons.list_seasons(rt.databases.for_ladder(args.ladder), args.ladder)
    if args.json:
        print(json.dumps(shown))
        return 0
    header = ("no", "name", "state", "opened", "closed", "players")
    rows = [
        (
            str(s["number"]),
            safe(s["name"]),
            "open" if s["open"] else "closed",
            _moment(s["opened_at"]),
            _moment(s["closed_at"]),
            "-" if s["players"] is None else str(s["players"]),
        )
        for s in shown
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        number, *rest = row
        print(
            "  ".join(
                [
                    number.rjust(widths[0]),
                    *(c.ljust(w) for c, w in zip(rest, widths[1:], strict=True)),
                ]
            ).rstrip()
        )
    return 0


def _moment(iso: str | None) -> str:
    """A stored time to the second, in UTC (``2026-12-03T12:04:56Z``); ``-`` for none."""
    if iso is None:
        return "-"
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
