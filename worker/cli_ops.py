"""Operator commands: ``dlq``, ``rebuild``, ``reconcile`` and ``season``.

Every handler takes the runtime and the parsed arguments and returns the exit status:
0 done, 1 the check found something (reconcile without ``--repair``) or nothing matched,
2 refused (bad arguments, unknown ladder, no confirmation).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from schemas import REASONS
from worker.deadletter import RETRIES_EXHAUSTED, AmbiguousReference, DeadLetter, Filter
from worker.progress import Progress
from worker.terminal import safe

if TYPE_CHECKING:
    from worker.runtime import Runtime

AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def register(subparsers: Any) -> None:
    _register_dlq(subparsers)

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
        choices=["none", "start", "toward-start", "toward_start"],
        help="override the ladder's configured reset policy",
    )
    p.add_argument("--fraction", type=float, help="for toward-start: share of the way (0-1]")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_season_close)
    p = season.add_parser("list", help="the ladder's seasons")
    p.add_argument("ladder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_season_list)


def _register_dlq(subparsers: Any) -> None:
    dlq = subparsers.add_parser("dlq", help="the dead-letter queue").add_subparsers(
        dest="dlq_command", required=True, metavar="{list,show,replay,discard}"
    )

    def filters(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--reason", type=reason, metavar="REASON", help="only this reason, e.g. unknown_ladder"
        )
        p.add_argument("--ladder", help="only events of this ladder")
        p.add_argument("--older-than", type=age, metavar="AGE", help="e.g. 10m, 2h, 3d")
        p.add_argument("--newer-than", type=age, metavar="AGE", help="e.g. 10m, 2h, 3d")

    p = dlq.add_parser("list", help="list dead-lettered events")
    filters(p)
    p.add_argument("--json", action="store_true", help="a JSON array of objects")
    p.add_argument("--limit", type=int, default=100, help="most dead letters shown (100)")
    p.add_argument("--offset", type=int, default=0, help="matching dead letters to skip first")
    p.set_defaults(handler=cmd_dlq_list)

    p = dlq.add_parser("show", help="one dead letter: payload, reason, traceback")
    p.add_argument("id", help="a dead-letter id, or an event id that names one dead letter")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_dlq_show)

    p = dlq.add_parser("replay", help="requeue dead letters (by id, --all, or by filter)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")
    filters(p)
    p.set_defaults(handler=cmd_dlq_replay)

    p = dlq.add_parser("discard", help="delete dead letters for good (by id, --all, or filter)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")
    filters(p)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=cmd_dlq_discard)


#: Every reason a dead letter can carry.
DEAD_LETTER_REASONS: tuple[str, ...] = (*REASONS, RETRIES_EXHAUSTED, "failed")


def reason(text: str) -> str:
    """One of :data:`DEAD_LETTER_REASONS`."""
    if text not in DEAD_LETTER_REASONS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a reason; the reasons are {', '.join(DEAD_LETTER_REASONS)}"
        )
    return text


def plural(count: int, noun: str) -> str:
    """``1 dead letter``, ``2 dead letters``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def age(text: str) -> timedelta:
    """``10m``, ``2h``, ``3d``, ``1w`` or ``90s`` as a duration."""
    found = AGE.match(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age like 90s, 10m, 2h, 3d or 1w")
    return timedelta(seconds=float(found.group(1)) * UNITS[found.group(2)])


def _filter(args: argparse.Namespace) -> Filter:
    return Filter(
        reason=args.reason,
        ladder=args.ladder,
        older_than=args.older_than,
        newer_than=args.newer_than,
    )


def _err(message: str) -> None:
    print(f"ladder: {message}", file=sys.stderr)


def _age_text(letter: DeadLetter, now: datetime) -> str:
    age = letter.age(now)
    if age is None:
        return "?"
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# -- dlq ------------------------------------------------------------------------------------


def cmd_dlq_list(rt: Runtime, args: argparse.Namespace) -> int:
    if args.limit < 1 or args.offset < 0:
        _err("--limit must be at least 1 and --offset at least 0")
        return 2
    now = datetime.now(UTC)
    where = _filter(args)
    letters = rt.dead_letters.page(
        None if where.empty else where, offset=args.offset, limit=args.limit, now=now
    )
    if args.json:
        print(json.dumps([letter.as_json(now) for letter in letters]))
        return 0
    print(f"{'id':<45} {'event_id':<24} {'ladder':<12} {'reason':<22} {'age':>5} {'tries':>5}")
    for d in letters:
        print(
            f"{d.id:<45} {safe(d.event_id):<24} {safe(d.ladder):<12} {safe(d.reason):<22} "
            f"{_age_text(d, now):>5} {d.attempts:>5}"
        )
    total = rt.dead_letters.count()
    more = f"; --offset {args.offset + len(letters)} for more" if len(letters) == args.limit else ""
    if len(letters) == total:
        print(f"({plural(total, 'dead letter')})", file=sys.stderr)
    else:
        print(f"({len(letters)} shown of {plural(total, 'dead letter')}{more})", file=sys.stderr)
    return 0


def _resolve(rt: Runtime, reference: str) -> str | None:
    try:
        found: str | None = rt.dead_letters.resolve(reference)
    except AmbiguousReference as exc:
        _err(f"{exc}; name one by its dead-letter id")
        return None
    if found is None:
        _err(f"no dead letter {safe(reference)!r}")
    return found


def cmd_dlq_show(rt: Runtime, args: argparse.Namespace) -> int:
    job_id = _resolve(rt, args.id)
    if job_id is None:
        return 2
    found = rt.dead_letters.get(job_id)
    if found is None:
        _err(f"no dead letter {args.id!r}")
        return 2
    letter, trace = found
    now = datetime.now(UTC)
    if args.json:
        print(json.dumps({**letter.as_json(now), "payload": letter.payload, "traceback": trace}))
        return 0
    for name, value in letter.as_json(now).items():
        print(f"{name + ':':<14}{safe(value)}")
    print("payload:")
    print(f"  {safe(letter.payload)}")
    print("traceback:")
    for line in (trace or "(none)").rstrip().splitlines():
        print(f"  {safe(line)}")
    return 0


def _select(rt: Runtime, args: argparse.Namespace, verb: str) -> list[str] | None:
    """The dead-letter ids named (by id, ``--all``, or filters); None after an error."""
    where = _filter(args)
    if args.ids and (args.all or not where.empty):
        _err("name dead letters by id, or select them with --all or filters, not both")
        return None
    if args.ids:
        ids = []
        for reference in args.ids:
            job_id = _resolve(rt, reference)
            if job_id is None:
                return None
            ids.append(job_id)
        return ids
    if args.all or not where.empty:
        return [d.id for d in rt.dead_letters.list(None if args.all else where)]
    _err(f"{verb} what? give ids, --all, or a filter (--reason, --ladder, --older-than)")
    return None


def cmd_dlq_replay(rt: Runtime, args: argparse.Namespace) -> int:
    ids = _select(rt, args, "replay")
    if ids is None:
        return 2
    replayed = rt.dead_letters.replay(ids)
    for job_id in replayed:
        print(job_id)
    print(f"ladder: replayed {len(replayed)} of {plural(len(ids), 'dead letter')}", file=sys.stderr)
    return 0 if len(replayed) == len(ids) else 1


def cmd_dlq_discard(rt: Runtime, args: argparse.Namespace) -> int:
    ids = _select(rt, args, "discard")
    if ids is None:
        return 2
    if not args.yes:
        if not _is_terminal(sys.stdin):
            _err("discard deletes dead letters for good: confirm with --yes")
            return 2
        try:
            answer = input(f"Delete {plural(len(ids), 'dead letter')} for good? [y/N] ")
        except EOFError:  # Ctrl-D at the prompt: no answer is no
            print(file=sys.stderr)
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            _err("nothing discarded")
            return 2
    deleted = rt.dead_letters.discard(ids)
    for job_id in deleted:
        print(job_id)
    print(f"ladder: discarded {plural(len(deleted), 'dead letter')}", file=sys.stderr)
    return 0


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- rebuild and reconcile -----------------------------------------------------------------


def _ladder(rt: Runtime, name: str) -> Any:
    ladder_config = rt.config.ladder(name)
    if ladder_config is None:
        _err(f"no ladder named {name!r} is configured")
    return ladder_config


def cmd_rebuild(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.rebuild import count_players, rebuild

    ladder_config = _ladder(rt, args.ladder)
    if ladder_config is None:
        return 2
    progress = Progress(f"rebuild {args.ladder}", count_players(rt.engine, args.ladder))
    report = rebuild(rt.engine, rt.leaderboard_redis, ladder_config, progress)
    if args.json:
        print(json.dumps(report.as_json()))
    else:
        print(
            f"ladder: rebuilt {report.ladder}: {report.players} players, "
            f"{report.boards['rating']} rated, {report.boards['public']} public, "
            f"{report.boards['boosted']} boosted, {report.seasons} season archives, "
            f"{report.stale_hashes} stale hashes deleted, in {report.seconds:.1f}s"
        )
    return 0


def cmd_reconcile(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.rebuild import count_players
    from worker.reconcile import Report, check, repair

    if args.ladder is not None:
        one = _ladder(rt, args.ladder)
        if one is None:
            return 2
        ladders = [one]
    else:
        ladders = list(rt.config.ladders.values())
    total = Report()
    remaining = Report()
    redis = rt.leaderboard_redis
    for ladder_config in ladders:
        name = ladder_config.name
        progress = Progress(f"reconcile {name}", count_players(rt.engine, name))
        report = check(rt.engine, redis, ladder_config, progress)
        if args.repair and not report.clean:
            repair(rt.engine, redis, ladder_config, report)
            remaining.merge(check(rt.engine, redis, ladder_config))
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
            print(f"ladder: repaired {total.repaired} players; Redis is now {state}")
    if total.clean:
        return 0
    return 0 if args.repair and remaining.clean else 1


def _print_drift(report: Any) -> None:
    print(
        f"ladder: {report.players} players compared: {len(report.missing)} missing, "
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
    from worker import seasons

    ladder_config = _ladder(rt, args.ladder)
    if ladder_config is None:
        return 2
    try:
        policy, source = seasons.choose_policy(ladder_config, args.reset, args.fraction)
        closed = seasons.close(rt.engine, rt.leaderboard_redis, ladder_config, args.name, policy)
    except seasons.SeasonError as exc:
        _err(str(exc))
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
            f"{closed.players} players archived, reset {policy.reset} ({source}), "
            f"{closed.reset} ratings changed; season {closed.number + 1} is open"
        )
    return 0


def cmd_season_list(rt: Runtime, args: argparse.Namespace) -> int:
    from worker import seasons

    if _ladder(rt, args.ladder) is None:
        return 2
    shown = seasons.list_seasons(rt.engine, args.ladder)
    if args.json:
        print(json.dumps(shown))
        return 0
    print(f"{'no':>3}  {'name':<24} {'state':<7} {'opened':<26} {'closed':<26} players")
    for s in shown:
        print(
            f"{s['number']:>3}  {s['name']:<24} {'open' if s['open'] else 'closed':<7} "
            f"{s['opened_at'] or '-':<26} {s['closed_at'] or '-':<26} {s['players'] or '-'}"
        )
    return 0
