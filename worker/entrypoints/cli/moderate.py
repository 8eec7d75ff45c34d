"""Moderation commands: ``void``, ``ban``, ``unban``, ``adjust``, ``rerate``,
``player export|erase``.

Each action is an entry in the ladder's moderation log with its reason, operator (``--by``,
default the OS user) and time. Exit status: 0 done (or nothing to do: an event already void, a
player already banned), 1 could not do it, 2 asked wrongly (unknown ladder, event or player,
a bad time or delta, erase without ``--yes``).
"""

from __future__ import annotations

import argparse
import getpass
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from worker.entrypoints.cli.terminal import (
    EXIT_FAILED,
    EXIT_USAGE,
    Refused,
    configured_ladder,
    error,
    plural,
    safe,
)
from worker.ops.progress import Progress

if TYPE_CHECKING:
    from worker.bootstrap import Runtime
    from worker.ladders import LadderConfig
    from worker.ops.moderation import Report

PLAYER_VERBS = ("export", "erase")
T = TypeVar("T")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("void", help="take games back, re-rating the ladder exactly")
    p.add_argument("ladder")
    p.add_argument("event_ids", nargs="+", metavar="EVENT_ID")
    _common(p, dry_run=True)
    p.set_defaults(handler=cmd_void)

    p = subparsers.add_parser(
        "rerate", help="re-rate the whole history under the ruleset the ladder switches to"
    )
    p.add_argument("ladder")
    _common(p, dry_run=True)
    p.set_defaults(handler=cmd_rerate)

    p = subparsers.add_parser("ban", help="take a player off the boards; later games unrated")
    p.add_argument("ladder")
    p.add_argument("player")
    p.add_argument(
        "--void-since",
        type=_time,
        metavar="TIME",
        help="also void every game of theirs that ended at or after TIME (RFC 3339)",
    )
    _common(p, dry_run=True)
    p.set_defaults(handler=cmd_ban)

    p = subparsers.add_parser("unban", help="put a banned player back on the boards")
    p.add_argument("ladder")
    p.add_argument("player")
    _common(p, dry_run=False)
    p.set_defaults(handler=cmd_unban)

    p = subparsers.add_parser("adjust", help="change a rating by hand, with a reason")
    p.add_argument("ladder")
    p.add_argument("player")
    p.add_argument("--delta", type=float, required=True, metavar="N")
    _common(p, dry_run=True)
    p.set_defaults(handler=cmd_adjust)

    # ``ladder player export|erase LADDER PLAYER`` beside ``ladder player LADDER PLAYER``.
    card = subparsers.choices["player"]
    card.add_argument("target", nargs="?", help=argparse.SUPPRESS)
    card.add_argument("--yes", action="store_true", help="erase: confirm")
    card.add_argument("--by", default=None, metavar="NAME", help="erase: the operator")
    card.set_defaults(handler=_player_verbs(card.get_default("handler")))


def _common(p: argparse.ArgumentParser, *, dry_run: bool) -> None:
    p.add_argument("--reason", required=True, metavar="TEXT")
    p.add_argument("--by", default=None, metavar="NAME", help="the operator (default: OS user)")
    if dry_run:
        p.add_argument(
            "--dry-run", action="store_true", help="show what would change, change nothing"
        )
    p.add_argument("--json", action="store_true")


def _time(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 time") from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset (end it with Z or +00:00)")
    return when


def _operator(args: argparse.Namespace) -> str:
    if args.by:
        return str(args.by)
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _asked(rt: Runtime, args: argparse.Namespace) -> tuple[LadderConfig, str, str]:
    """The ladder, the reason and the operator of an action; refused (exit 2) without a reason."""
    ladder_config = configured_ladder(rt.config, args.ladder)
    reason = str(args.reason).strip()
    if not reason:
        raise Refused("--reason must say why")
    return ladder_config, reason, _operator(args)


def _run(action: Callable[[], T]) -> T:
    """``action()``; what the moderation refuses exits 2 with its line."""
    from worker.ops.moderation import ModerationError

    try:
        return action()
    except ModerationError as exc:
        raise Refused(str(exc)) from None


def _on_player(
    rt: Runtime,
    args: argparse.Namespace,
    ladder_config: LadderConfig,
    action: Callable[..., Report],
    *given: Any,
    **options: Any,
) -> Report:
    """``moderation.ban`` or ``adjust`` of ``args.player``: ``given`` follows the player."""
    return _run(
        lambda: action(
            rt.databases.for_ladder(args.ladder),
            rt.leaderboard_redis,
            ladder_config,
            args.player,
            *given,
            dry_run=getattr(args, "dry_run", False),  # ``unban`` has no --dry-run
            receipts=rt.receipts,
            **options,
        )
    )


def _void(
    rt: Runtime,
    args: argparse.Namespace,
    ladder_config: LadderConfig,
    event_ids: Sequence[str],
    reason: str,
    by: str,
    details: dict[str, Any] | None = None,
) -> Any:
    """``void.void`` with a progress bar over the ladder's events."""
    from worker.ops import void
    from worker.store.log import count_events

    engine = rt.databases.for_ladder(args.ladder)
    progress = Progress(f"void {args.ladder}", count_events(engine, args.ladder), unit="events")
    report = _run(
        lambda: void.void(
            engine,
            rt.leaderboard_redis,
            ladder_config,
            event_ids,
            reason,
            by,
            dry_run=args.dry_run,
            progress=progress,
            details=details,
            receipt_sink=rt.receipts,
        )
    )
    if report.replayed:
        progress.finish()
    return report


def cmd_void(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config, reason, by = _asked(rt, args)
    _show(args, ladder_config, _void(rt, args, ladder_config, args.event_ids, reason, by))
    return 0


def cmd_rerate(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.rerate import rerate
    from worker.store.log import count_events

    ladder_config, reason, by = _asked(rt, args)
    engine = rt.databases.for_ladder(args.ladder)
    progress = Progress(f"rerate {args.ladder}", count_events(engine, args.ladder), unit="events")
    report = _run(
        lambda: rerate(
            engine,
            rt.leaderboard_redis,
            ladder_config,
            reason,
            by,
            dry_run=args.dry_run,
            progress=progress,
            receipt_sink=rt.receipts,
        )
    )
    if report.replayed:
        progress.finish()
    _show(args, ladder_config, report)
    return 0


def cmd_ban(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import moderation

    ladder_config, reason, by = _asked(rt, args)
    reports = [_on_player(rt, args, ladder_config, moderation.ban, reason, by)]
    if args.void_since is not None:
        from worker.store.moderation import games_since

        with rt.databases.for_ladder(args.ladder).connect() as conn:
            ids = games_since(conn, args.ladder, args.player, args.void_since)
        if ids:
            details = {"ban": args.player, "since": args.void_since.isoformat()}
            why = f"ban of {args.player}: {reason}"
            reports.append(_void(rt, args, ladder_config, ids, why, by, details))
    for index, one in enumerate(reports):
        if index and reports[0].warning:
            one.warning = ""  # the void after the ban failed as the ban did: one line says it
        _show(args, ladder_config, one)
    return 0


def cmd_unban(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import moderation

    ladder_config, reason, by = _asked(rt, args)
    report = _on_player(rt, args, ladder_config, moderation.ban, reason, by, banned=False)
    _show(args, ladder_config, report)
    return 0


def cmd_adjust(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops import moderation

    ladder_config, reason, by = _asked(rt, args)
    if ladder_config.current.whole_ratings and args.delta != int(args.delta):
        raise Refused(f"{args.ladder} keeps whole ratings: --delta must be a whole number")
    report = _on_player(rt, args, ladder_config, moderation.adjust, args.delta, reason, by)
    _show(args, ladder_config, report)
    return 0


def _show(args: argparse.Namespace, ladder_config: Any, report: Any) -> None:
    from engine import display_rating

    if report.warning:
        error(f"warning: {safe(report.warning)}")
    if args.json:
        print(json.dumps(report.as_json()))
        return
    rules = ladder_config.current
    for event_id, why in report.refused.items():
        print(f"ladder: {safe(event_id)}: {why}; nothing changed for it")
    if report.note:
        print(f"ladder: {safe(report.note)}")
    what = "would change" if report.dry_run else "changed"
    if report.kind == "void":
        if not report.done:
            print(f"ladder: nothing to void on {report.ladder}")
            return
        print(
            f"ladder: {'would void' if report.dry_run else 'voided'} "
            f"{plural(len(report.done), 'game')} "
            f"on {report.ladder}: {plural(len(report.players), 'player')} {what}, "
            f"{plural(report.effects, 'outcome')} {what}, "
            f"{plural(report.replayed, 'event')} replayed "
            f"in {report.seconds:.1f}s"
            + ("" if report.action is None else f" (action {report.action})")
            + ("" if report.dry_run else f", {plural(report.receipts, 'receipt')} refreshed")
        )
    elif report.kind == "rerate":
        print(
            f"ladder: {'would re-rate' if report.dry_run else 're-rated'} {report.ladder}: "
            f"{plural(len(report.players), 'player')} {what}, "
            f"{plural(report.effects, 'outcome')} {what}, "
            f"{plural(report.replayed, 'event')} replayed in {report.seconds:.1f}s"
            + ("" if report.action is None else f" (action {report.action})")
            + ("" if report.dry_run else f", {plural(report.receipts, 'receipt')} refreshed")
        )
    elif report.action is not None or report.dry_run:
        verb = {"ban": "banned", "unban": "unbanned", "adjust": "adjusted"}[report.kind]
        print(
            f"ladder: {'would ' + report.kind if report.dry_run else verb} on {report.ladder}"
            + ("" if report.action is None else f" (action {report.action})")
        )
    for player_id, now, after in report.players:
        change = "(rating unchanged)" if now == after else f"-> {display_rating(rules, after):>9}"
        print(f"  {safe(player_id):<24} {display_rating(rules, now):>9} {change}")


# -- data-protection requests ----------------------------------------------------------------


def _player_verbs(card: Any) -> Any:
    def run(rt: Runtime, args: argparse.Namespace) -> int:
        if args.ladder in PLAYER_VERBS and args.target is not None:
            from worker.store.migrate import require_current

            # unmigrated: one line and exit 2, as for every command
            for engine in rt.databases.all():
                require_current(engine)
            verb, args.ladder, args.player = args.ladder, args.player, args.target
            return cmd_player_export(rt, args) if verb == "export" else cmd_player_erase(rt, args)
        if args.target is not None:
            error(f"unexpected argument {safe(args.target)!r} (ladder player [export|erase] ...)")
            return EXIT_USAGE
        result: int = card(rt, args)
        return result

    return run


def cmd_player_export(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.erase import export

    configured_ladder(rt.config, args.ladder)
    print(json.dumps(_run(lambda: export(rt, args.ladder, args.player)), indent=2, default=str))
    return 0


def cmd_player_erase(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.ops.erase import ErasedInStore, erase

    ladder_config = configured_ladder(rt.config, args.ladder)
    if not args.yes:
        error(f"erase replaces {safe(args.player)!r} everywhere; confirm with --yes")
        return EXIT_USAGE
    try:
        report = _run(lambda: erase(rt, ladder_config, args.player, _operator(args)))
    except ErasedInStore as exc:
        error(safe(str(exc)))
        return EXIT_FAILED
    if "warning" in report:
        error(f"warning: {safe(report['warning'])}")
    if args.json:
        print(json.dumps(report))
    else:
        done = "finished erasing" if report["resumed"] else "erased"
        print(
            f"ladder: {done} the player on {args.ladder}: now {report['pseudonym']} "
            f"({plural(report['rows'], 'row')}, {report['keys']} Redis entries rewritten)"
        )
    return 0
