"""Read-side commands: ``top``, ``page``, ``rank``, ``around``, ``player``, ``history``,
``preview`` and ``serve`` (the read-only HTTP API).

Every command prints a human table by default and JSON with ``--json``. An unknown ladder
or board exits 2, an unknown player 1, each with one line on standard error.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from engine import PlayerState, display_change, display_rating
from worker.access import Access
from worker.boards import reader
from worker.entrypoints.cli.common import (
    board_ladder,
    board_option,
    non_negative,
    positive,
    print_json,
    read_command,
)
from worker.entrypoints.cli.terminal import Refused, plural, safe
from worker.service import cards, preview

if TYPE_CHECKING:
    from worker.bootstrap import Runtime


def register(sub: Any) -> None:
    p = read_command(sub, "top", cmd_top, help="the top of a leaderboard")
    p.add_argument("--limit", type=positive, default=10)
    board_option(p)

    p = read_command(sub, "page", cmd_page, help="one page of a leaderboard, forwards or backwards")
    p.add_argument("--size", type=positive, default=20)
    p.add_argument("--cursor", help="next_cursor or prev_cursor of the page before")
    p.add_argument("--offset", type=non_negative, help="0-based position to start from")
    p.add_argument("--direction", choices=["next", "prev"], default="next")
    board_option(p)

    p = read_command(sub, "rank", cmd_rank, help="a player's rank on a leaderboard")
    p.add_argument("player")
    board_option(p)

    p = read_command(sub, "around", cmd_around, help="the players around a player")
    p.add_argument("player")
    p.add_argument("--radius", type=non_negative, default=5)
    board_option(p)

    p = read_command(sub, "player", cmd_player, help="a player's card")
    p.add_argument("player")
    p.add_argument("--json", action="store_true")

    p = read_command(
        sub, "history", cmd_history, help="a player's rating history, newest first (scoring order)"
    )
    p.add_argument("player")
    p.add_argument("--limit", type=positive, default=20)
    p.add_argument("--json", action="store_true")

    p = read_command(
        sub,
        "preview",
        cmd_preview,
        help="what one game would do to A's rating",
        description="A and B are player ids, or ratings written as =1500.",
    )
    p.add_argument("a", help="player id, or a rating such as =1500")
    p.add_argument("b", help="player id, or a rating such as =1500")
    p.add_argument("--cube", type=positive, default=1)
    p.add_argument("--match-length", type=positive, default=1)
    for side in ("a", "b"):
        p.add_argument(f"--{side}-games", type=non_negative, help="rated games so far")
        p.add_argument(f"--{side}-experience", type=non_negative, help="fibs experience")
        p.add_argument(
            f"--{side}-recent", type=non_negative, help="gammon42 ranked games this week"
        )
    p.add_argument("--json", action="store_true")

    p = sub.add_parser(
        "serve",
        help="serve the read-only HTTP API, with /metrics and /healthz",
        description="Callers send Authorization: Bearer <token> (LADDER_API_TOKENS or "
        "LADDER_API_TOKENS_FILE: name:token:scope|scope,...; scopes boards, history, export, "
        "console); LADDER_PUBLIC_SCOPES (default boards) is what callers without a token get. "
        "No client address is logged: the access log is off unless --access-log, "
        "which masks the address and redacts query strings. X-Forwarded-For is read only "
        "from the proxies in LADDER_TRUSTED_PROXIES.",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default %(default)s); another one needs LADDER_API_TOKENS",
    )
    p.add_argument("--port", type=non_negative, default=8000)
    p.add_argument(
        "--insecure",
        action="store_true",
        help="bind a non-loopback address with no API token configured",
    )
    p.add_argument(
        "--access-log",
        action="store_true",
        help="log each request, client address masked and query string redacted",
    )
    p.set_defaults(handler=cmd_serve)


def cmd_top(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    entries = reader.top(rt.leaderboard_redis, args.ladder, args.limit, args.board)
    if args.json:
        print_json([e.as_json() for e in entries])
    else:
        _print_board(ladder_config, args.board, f"{args.ladder} ({args.board})", entries)
    return 0


def cmd_page(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    found = reader.page(
        rt.leaderboard_redis,
        args.ladder,
        cursor=args.cursor,
        offset=args.offset,
        size=args.size,
        direction=args.direction,
        board=args.board,
    )
    if args.json:
        print_json(found.as_json())
        return 0
    title = f"{args.ladder} ({args.board}), {plural(found.total, 'player')}"
    _print_board(ladder_config, args.board, title, found.entries)
    if found.prev_cursor:
        print(f"previous: --direction prev --cursor {found.prev_cursor}")
    if found.next_cursor:
        print(f"next:     --cursor {found.next_cursor}")
    return 0


def cmd_rank(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    entry = reader.rank(rt.leaderboard_redis, args.ladder, args.player, args.board)
    if args.json:
        print_json(entry.as_json())
    else:
        _print_board(ladder_config, args.board, f"{args.ladder} ({args.board})", [entry])
    return 0


def cmd_around(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    entries = reader.around(rt.leaderboard_redis, args.ladder, args.player, args.radius, args.board)
    if args.json:
        print_json([e.as_json() for e in entries])
    else:
        title = f"{args.ladder} ({args.board}) around {args.player}"
        _print_board(ladder_config, args.board, title, entries, mark=args.player)
    return 0


def cmd_player(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    found = cards.card(
        rt.leaderboard_redis, rt.databases.for_ladder(args.ladder), args.ladder, args.player
    )
    if args.json:
        print_json(found.as_json())
        return 0
    lines = [("player", found.player_id)]
    for label, value in cards.facts(ladder_config, found, lambda at: at or "-"):
        provisional = label == "Rating" and found.provisional
        lines.append((label.lower(), f"{value} (provisional)" if provisional else value))
    from worker.store.history import archived

    before = archived(rt.databases.for_ladder(args.ladder), args.ladder, args.player)
    if before is not None:
        lines.append(("history", before.note()))
    for label, value in lines:
        print(f"{label:<15} {safe(value)}")
    return 0


def cmd_history(rt: Runtime, args: argparse.Namespace) -> int:
    from worker.store.history import archived, history

    ladder_config = board_ladder(rt, args)
    changes = history(rt.databases.for_ladder(args.ladder), args.ladder, args.player, args.limit)
    if args.json:
        print_json([c.as_json() for c in changes])
        return 0
    rules = ladder_config.current
    print(f"{args.ladder}: {safe(args.player)}, newest first (scoring order)")
    print(f"{'ended':<20} {'event':<20} {'kind':<13} {'opponent':<16} {'change':>8} {'rating':>9}")
    for c in changes:
        delta = display_change(rules, c.counted)
        what = c.kind if c.result is None else c.result  # a team game's "rank 12 of 64" fits
        when = (c.ended_at or c.at)[:19]  # when the game ended; a prize or link: when applied
        note = f"  {safe(c.note)}" if c.note else ""
        if c.voided:  # taken back by a void: its change is not applied
            delta, note = "-", f"  voided: {display_change(rules, c.delta)} not applied"
        elif c.counted != c.delta:  # a void's correction, with the voided games taken back
            ledger = display_change(rules, c.delta)
            note += f" ({ledger} in the ledger: it took the voided games back too)"
        print(
            f"{when:<20} {safe(c.event_id)[:20]:<20} {what[:13]:<13} "
            f"{safe(c.opponent or '-')[:16]:<16} "
            f"{delta:>8} {display_rating(rules, c.running):>9}{note}"
        )
    if not changes:
        print("  (no rating changes yet)")
    before = archived(rt.databases.for_ladder(args.ladder), args.ladder, args.player)
    if before is not None:
        print(f"  ({before.note()})")
    return 0


def cmd_preview(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    a = _preview_side(rt, ladder_config, args, "a")
    b = _preview_side(rt, ladder_config, args, "b")
    found = preview.preview(ladder_config, a, b, cube=args.cube, match_length=args.match_length)
    shown = preview.format_preview(ladder_config, found)
    if args.json:
        print_json({**found.as_json(), "display": shown})
        return 0
    rules = ladder_config.current
    for label, side in (("A", found.a), ("B", found.b)):
        who = safe(side.player_id or "(given)")
        print(f"{label}  {who:<24} {display_rating(rules, side.state.rating):>9}")
    stake = ladder_config.current.stake
    game = f"cube {found.cube}" if stake == "cube" else ""
    if stake == "match_length":
        game = f"{found.match_length}-point match"
    print(f"{args.ladder} {found.version}{', ' + game if game else ''}")
    print(f"A wins with probability {shown['win_probability']}")
    print(f"if A wins   {shown['if_win']:>8}")
    print(f"if A loses  {shown['if_lose']:>8}")
    return 0


def cmd_serve(rt: Runtime, args: argparse.Namespace) -> int:
    import uvicorn

    from worker.entrypoints.api.app import create_app
    from worker.entrypoints.api.limits import BodyLimit
    from worker.observability.metrics import operations_app

    rt.config  # refuse a broken configuration before listening  # noqa: B018
    refuse_open_bind(rt.settings, args.host, args.insecure)
    access = Access(rt.settings.api_tokens, rt.settings.public_scopes)
    app = operations_app(
        create_app(rt.config, rt.leaderboard_redis, rt.databases, rt.redis, access=access),
        alive=lambda: bool(rt.leaderboard_redis.ping()),
    )
    app = BodyLimit(app)  # /healthz and /metrics refuse a body too
    if args.access_log:
        logging.getLogger("uvicorn.access").addFilter(mask_client_address)
    uvicorn.run(app, **serve_options(rt.settings, args.host, args.port, args.access_log))
    return 0


def refuse_open_bind(settings: Any, host: str, insecure: bool) -> None:
    """SPEC 6: ``ladder serve`` binds 127.0.0.1 unless tokens exist or ``--insecure``."""
    if settings.api_tokens or insecure or _loopback(host):
        return
    raise Refused(
        f"refusing to serve on {host} with no LADDER_API_TOKENS: anyone who can reach it "
        "would read every scope; configure tokens, or pass --insecure"
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_options(settings: Any, host: str, port: int, access_log: bool) -> dict[str, Any]:
    """uvicorn's options: SPEC 2.4, raw IPs are never logged; a forwarded client address is
    believed only from a configured proxy (uvicorn would trust 127.0.0.1 by default).
    ``log_config=None``: uvicorn's loggers are left to ladder's, so its lines are JSON too."""
    proxies = list(settings.trusted_proxies)
    return {
        "host": host,
        "port": port,
        "log_level": "info",
        "log_config": None,
        "access_log": access_log,
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or [],
    }


def mask_client_address(record: logging.LogRecord) -> bool:
    """uvicorn's access line is ``'%s - "%s %s HTTP/%s" %d'`` with the client first: mask it,
    and redact the query string of the path (a caller may have put a token there)."""
    if isinstance(record.args, tuple) and record.args:
        args = list(record.args)
        args[0] = "-"
        if len(args) > 2 and isinstance(args[2], str) and "?" in args[2]:
            args[2] = args[2].partition("?")[0] + "?<redacted>"
        record.args = tuple(args)
    return True


def _preview_side(
    rt: Runtime, ladder_config: Any, args: argparse.Namespace, side: str
) -> preview.Side:
    """A given rating (``=1500``) or a stored player, with the command's overrides."""
    value: str = getattr(args, side)
    rating: float | None = None
    if value.startswith("="):
        try:
            rating = PlayerState(float(value[1:])).rating
        except ValueError:
            raise reader.InvalidArgument(f"{side}: {value!r} is not a finite rating") from None
    return preview.given_side(
        ladder_config,
        None if rating is not None else value,
        rt.leaderboard_redis,
        rt.databases.for_ladder(args.ladder),
        rating=rating,
        games=getattr(args, f"{side}_games"),
        experience=getattr(args, f"{side}_experience"),
        recent=getattr(args, f"{side}_recent"),
    )


def _print_board(
    ladder_config: Any, board: str, title: str, entries: list[reader.Entry], mark: str = ""
) -> None:
    rules = ladder_config.current
    points = board == "boosted"
    print(title)
    print(f"{'rank':>6}  {'player':<24} {'points' if points else 'rating':>9}")
    for e in entries:
        shown = str(int(e.rating)) if points else display_rating(rules, e.rating)
        flag = " P" if e.provisional else ""
        pointer = ">" if mark and e.player_id == mark else " "
        print(f"{pointer}{e.rank:>5}  {safe(e.player_id):<24} {shown:>9}{flag}")
    if not entries:
        print("  (no rated players yet)")
    elif any(e.provisional for e in entries):
        print("P: provisional rating")
