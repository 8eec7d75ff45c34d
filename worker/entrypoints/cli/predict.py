"""``ladder predict LADDER --team alice,bob --team carol,dan``: each team's expected score for
a proposed game under the ladder's ruleset in force now (SPEC 7), as a table or ``--json``.

Reads Redis alone (the players' cards). A mistake (fewer than two teams, an empty or invalid
id, an id twice, a team game on a ruleset that rates 1v1 games only) is one line, exit 2.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from worker.entrypoints.cli.common import board_ladder, positive, print_json, read_command
from worker.entrypoints.cli.terminal import safe
from worker.service import predict

if TYPE_CHECKING:
    from worker.bootstrap import Runtime


def register(sub: Any) -> None:
    p = read_command(
        sub,
        "predict",
        cmd_predict,
        help="each team's expected score for a proposed game",
        description="Give each team with --team, its player ids comma-separated, in order: "
        "--team alice --team bob is a 1v1, --team alice,bob --team carol,dan a 2v2, three or "
        "more teams a free-for-all. A player id not on the ladder is a new player at the "
        "ruleset's start.",
    )
    p.add_argument(
        "--team",
        action="append",
        default=[],
        metavar="IDS",
        help=f"a team's player ids, comma-separated; once per team ({predict.MIN_TEAMS} to "
        f"{predict.MAX_TEAMS} teams, at most {predict.MAX_PLAYERS} players in all, no id twice)",
    )
    p.add_argument("--match-length", type=positive, default=1, help="points of the match (fibs)")
    p.add_argument("--json", action="store_true")


def cmd_predict(rt: Runtime, args: argparse.Namespace) -> int:
    ladder_config = board_ladder(rt, args)
    teams = [predict.parse_team(text, n) for n, text in enumerate(args.team, 1)]
    found = predict.predict(
        ladder_config, teams, rt.leaderboard_redis, match_length=args.match_length
    )
    if args.json:
        print_json(found.as_json())
        return 0
    game = (
        f", {found.match_length}-point match"
        if ladder_config.current.stake == "match_length"
        else ""
    )
    print(f"{found.ladder} ({found.ruleset} {found.version}{game}): expected score of each team")
    print(f"{'team':>4}  {'expected':>8}  players")
    for number, team in enumerate(found.teams, 1):
        players = ", ".join(_shown(seat) for seat in team.players)
        print(f"{number:>4}  {predict.format_expected(team.expected):>8}  {players}")
    if any(seat.new for team in found.teams for seat in team.players):
        print("new: not on the ladder yet, at the ruleset's start")
    if not found.rated:
        print("banned: a game with a banned player is unrated for every player")
    return 0


def _shown(seat: predict.Seat) -> str:
    name = safe(seat.player_id)
    if seat.rated_as is not None:
        name = f"{name} (as {safe(seat.rated_as)})"
    elif seat.new:
        name = f"{name} (new)"
    return f"{name} (banned)" if seat.banned else name
