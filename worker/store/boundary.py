"""A ladder's state at an instant as its log recorded it: a checkpoint built on the fly
(``ladder verify --since``).

``at(conn, ladder, boundary, ...)`` reads, without replaying anything, what the log recorded
before ``boundary`` of the players the log names from then on (the others are not read: no
later entry can change them), and returns it as the ``Checkpoint`` an archive at that instant
would have written (``worker.store.checkpoints``) for those players, so that a replay starts
from it exactly as it starts from an archive's. It starts from the ladder's archive checkpoint
when there is one and adds what was recorded between the two. Each player's

- rating: the ``after`` of its last ledger row before the boundary;
- rated games: the ``games`` its last ledger row recorded that records them;
- experience and last game: its rated games before the boundary (the game rows of events no
  void took back): their match lengths summed, the latest end;
- boosted points: its boosted wins before the boundary (when the ladder keeps that board);
- listed: a rating row before the boundary (a game, prize, import or adoption), and not linked;
- e-mail and display-name flags: its last ``player.updated`` before the boundary;
- link: the links made before it; ban: its last ban, unban or erase before it;
- fair-play windows: its ranked games that ended ``WINDOW_DAYS`` or less before the boundary
  (not voided), and its rated games with each other player named.

The links and the settled tournaments are read the same way. The checkpoint's ``events`` is
the count its archive recorded (0 without one): the events processed since are not counted.

What this reads of the log before the boundary does not grow with it: each player named is
read by a lateral query of its own, index probes of its rows in each month's partition (its
whole history for its experience, a sum over its games); the windows by the same probes in
the window's months only (``windows.PROCESSED_MARGIN``); the last event before the boundary by
one probe of the scoring order's index per month. Not a list (``player_id = ANY(:ids)``): the
planner takes each id for an average player and plans thousands of them as a scan of every
month, however few rows they have there.

What the log does not record is not invented: a player's ``version`` and ``updated_at`` at the
boundary (they start at 0 and unset: a comparison reads only what changed since); what a void
before the boundary did to the counts of a player's rated games after the last row that
records them (the count is taken as recorded); the profile an account adopted from its
anonymous id before the boundary (its experience and boosted points are its own games').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from engine import Player
from engine.ladder import RESULT_POINTS
from engine.replay import Action
from worker.store.checkpoints import WINDOW_DAYS, Checkpoint, Start, load
from worker.store.tables import ACTION_ROWS
from worker.store.windows import PROCESSED_MARGIN


class Interleaved(Exception):
    """Events processed before and after the instant interleave in scoring order."""


# The last event processed before the boundary: in each month, the scoring order's index read
# from its end (a month wholly before the boundary answers with its first entry).
_LAST_BEFORE = """
SELECT max(seq) FROM events
WHERE ladder = :ladder AND processed_at >= :since AND processed_at < :before
"""
_FIRST_AFTER = "SELECT min(seq) FROM events WHERE ladder = :ladder AND processed_at >= :before"
# Every id the log names from the boundary on: the events' (as sent and as resolved), the
# ledger rows', the moderation actions' targets. The events are those numbered after
# ``:after_seq``, the last one before the boundary: once ``at`` has found that no event
# processed from the boundary on was scored before it, they are the events processed from
# the boundary on, and the scoring order's index reads them alone, not the boundary's month
# before it (``processed_at`` still bounds the months read). The ledger rows are those that
# are no event's, by their index (a season's reset, an import, an adjustment, a correction):
# an event's rows are its players' as resolved, whom its audit row names (a game's winner and
# loser, a link's account) or, for a prize, its podium names or the link of a podium id does
# (``at`` adds the linked accounts); for a draw or team game its payload names them, team by
# team (a game of more than two players has no winner or loser), or their links do.
_SINCE = "ladder = :ladder AND seq > :after_seq AND processed_at >= :before"
_NAMED = f"""
SELECT winner_id FROM events WHERE {_SINCE} AND winner_id IS NOT NULL
UNION SELECT loser_id FROM events WHERE {_SINCE} AND loser_id IS NOT NULL
UNION SELECT n FROM events
    CROSS JOIN LATERAL (VALUES (payload->'winner'->>'player_id'),
        (payload->'loser'->>'player_id'), (payload->>'player_id'),
        (payload->>'anonymous_id'), (payload->>'account_id')) AS v(n)
    WHERE {_SINCE} AND n IS NOT NULL
UNION SELECT jsonb_array_elements_text(payload->'podium') FROM events
    WHERE {_SINCE} AND type = 'tournament.finished'
UNION SELECT jsonb_path_query(payload, '$.teams[*].players[*].player_id') #>> '{{}}'
    FROM events WHERE {_SINCE} AND type = 'game.finished'
UNION SELECT jsonb_path_query(payload, '$.players[*].player_id') #>> '{{}}'
    FROM events WHERE {_SINCE} AND type = 'game.finished'
UNION SELECT player_id FROM rating_changes WHERE ladder = :ladder AND {ACTION_ROWS}
    AND at >= :before
UNION SELECT target FROM moderation_actions WHERE ladder = :ladder AND at >= :before
    AND target IS NOT NULL
"""
# Each named player, read by the lateral query that follows it (its ``LIMIT`` or ``OFFSET 0``
# keeps the planner from folding it into one join of every player's rows).
_IDS = "unnest(CAST(:ids AS text[])) AS p(id)"
_LAST_ROWS = f"""
SELECT p.id, r.rating_after FROM {_IDS}
CROSS JOIN LATERAL (SELECT rating_after FROM rating_changes
    WHERE ladder = :ladder AND player_id = p.id AND at >= :since AND at < :before
    ORDER BY id DESC LIMIT 1) AS r
"""
_LAST_GAMES = f"""
SELECT p.id, r.games FROM {_IDS}
CROSS JOIN LATERAL (SELECT games FROM rating_changes
    WHERE ladder = :ladder AND player_id = p.id AND at >= :since AND at < :before
        AND games IS NOT NULL
    ORDER BY id DESC LIMIT 1) AS r
"""
# The deviation and volatility of a ladder whose ruleset keeps them: the last row that
# set them (a game, a link's adoption, a correction); other rows leave them as they were.
_LAST_DEVIATION = f"""
SELECT p.id, r.deviation, r.volatility FROM {_IDS}
CROSS JOIN LATERAL (SELECT deviation, volatility FROM rating_changes
    WHERE ladder = :ladder AND player_id = p.id AND at >= :since AND at < :before
        AND deviation IS NOT NULL
    ORDER BY id DESC LIMIT 1) AS r
"""
_LISTED_KINDS = ("game", "prize", "import", "link")
_RATED_ROWS = f"""
SELECT p.id FROM {_IDS}
CROSS JOIN LATERAL (SELECT FROM rating_changes
    WHERE ladder = :ladder AND player_id = p.id AND at >= :since AND at < :before
        AND kind = ANY(:kinds)
    LIMIT 1) AS r
"""
# An event's outcome now: the newest effect a moderation action gave it, else its audit row's.
_NOW = """
coalesce((SELECT x.outcome FROM event_effects x WHERE x.ladder = e.ladder
          AND x.event_id = e.event_id ORDER BY x.action_id DESC LIMIT 1), e.outcome)
"""
# A game row's event, one row (``event_ids`` holds each id once across the months): a batch
# writes a game's ledger rows with its audit row, both at its ``processed_at``
# (``worker.service.rows``), so the first probe, of that month alone, finds it; the second,
# of every month before the boundary, runs only for a row written otherwise.
_GAME_EVENT = """
(SELECT ladder, event_id, outcome, match_length, ended_at FROM events
    WHERE ladder = :ladder AND event_id = r.event_id AND processed_at = r.at)
UNION ALL
(SELECT ladder, event_id, outcome, match_length, ended_at FROM events
    WHERE ladder = :ladder AND event_id = r.event_id AND processed_at < :before)
LIMIT 1
"""
_PLAYED = f"""
SELECT p.id, sum(coalesce(e.match_length, 1)), max(e.ended_at) FROM {_IDS}
CROSS JOIN LATERAL (SELECT event_id, at FROM rating_changes
    WHERE ladder = :ladder AND player_id = p.id AND kind = 'game'
        AND at >= :since AND at < :before
    OFFSET 0) AS r
CROSS JOIN LATERAL ({_GAME_EVENT}) AS e
WHERE {_NOW} <> 'voided'
GROUP BY p.id
"""
_BOOSTED = f"""
SELECT p.id, e.payload->>'result', coalesce(e.cube, 1) FROM {_IDS}
CROSS JOIN LATERAL (SELECT ladder, event_id, outcome, payload, cube FROM events
    WHERE ladder = :ladder AND winner_id = p.id AND mode = 'boosted'
        AND processed_at >= :since AND processed_at < :before
        AND outcome = 'unrated' AND coalesce(reason, '') <> 'banned'
    OFFSET 0) AS e
WHERE {_NOW} <> 'voided'
"""
# A player's rows as winner, all of them (no index holds a player's rows in ``seq`` order).
_PROFILES = f"""
SELECT DISTINCT ON (p.id) p.id, u.payload FROM {_IDS}
CROSS JOIN LATERAL (SELECT seq, payload FROM events
    WHERE ladder = :ladder AND winner_id = p.id AND type = 'player.updated'
        AND outcome = 'applied' AND processed_at >= :since AND processed_at < :before
    OFFSET 0) AS u
ORDER BY p.id, u.seq DESC
"""
_BANS = """
SELECT DISTINCT ON (target) target, kind FROM moderation_actions
WHERE ladder = :ladder AND target = ANY(:ids) AND kind IN ('ban', 'unban', 'erase')
    AND at >= :since AND at < :before
ORDER BY target, id DESC
"""
_LINKS = "SELECT anonymous_id, account_id FROM links WHERE ladder = :ladder AND linked_at < :before"
_SETTLED = "SELECT tournament_id FROM tournaments WHERE ladder = :ladder AND settled_at < :before"
# A named player's ranked games in the window, from each side: the window index's range of the
# player, in the months from ``:processed`` on (a game ended at or after the window's start was
# processed after it, less ``PROCESSED_MARGIN``: the months before are never read).
_WINDOW_SIDE = """
SELECT ladder, event_id, outcome, ended_at, {side} AS player, {other} AS other, {won} AS won
FROM events
WHERE ladder = :ladder AND {side} = p.id AND ended_at >= :window
    AND processed_at >= :processed AND processed_at < :before
    AND type = 'game.finished' AND mode = 'ranked' AND outcome IN ('rated', 'unrated')
"""
_WINDOW_GAMES = f"""
SELECT e.player, e.other, e.won, e.ended_at, {_NOW} FROM {_IDS}
CROSS JOIN LATERAL (
    {_WINDOW_SIDE.format(side="winner_id", other="loser_id", won="true")}
    UNION ALL
    {_WINDOW_SIDE.format(side="loser_id", other="winner_id", won="false")}
) AS e
"""


def at(
    conn: Connection,
    ladder: str,
    before: datetime,
    start: float,
    earlier: Checkpoint | None,
    *,
    boosted_board: bool = True,
) -> Checkpoint:
    """The ladder's checkpoint at ``before`` as its log recorded it, from ``earlier`` (its
    archive checkpoint, before ``before``) when there is one; ``start``: a new player's rating.
    Raises ``Interleaved`` when an event processed before ``before`` was scored after one
    processed at or after it (a batch straddling the instant: choose another)."""
    since = earlier.before if earlier is not None else datetime.min.replace(tzinfo=before.tzinfo)
    window = before - timedelta(days=WINDOW_DAYS)
    args: dict[str, Any] = {"ladder": ladder, "before": before, "since": since}
    last = conn.execute(text(_LAST_BEFORE), args).scalar()
    first = conn.execute(text(_FIRST_AFTER), args).scalar()
    after_seq = int(last) if last is not None else (earlier.after_seq if earlier else 0)
    if last is not None and first is not None and int(first) < int(last):
        raise Interleaved(
            f"events processed before and after {before.isoformat()} interleave in scoring "
            f"order (event {first} after it was scored before event {last}): choose another time"
        )
    links = dict(earlier.links) if earlier is not None else {}
    links.update({str(a): str(b) for a, b in conn.execute(text(_LINKS), args)})
    named = {str(r[0]) for r in conn.execute(text(_NAMED), {**args, "after_seq": after_seq})}
    named |= {a for a, b in links.items() if b in named} | {links[a] for a in named & set(links)}
    args["ids"] = sorted(named)
    known = {p.player_id: p for p in (earlier.players if earlier is not None else ())}
    players = {pid: _copy(known[pid]) for pid in named if pid in known}

    def player(pid: str) -> Player:
        if pid not in players:
            players[pid] = Player(ladder, pid, start)
        return players[pid]

    for pid, rating in conn.execute(text(_LAST_ROWS), args):
        player(pid).rating = float(rating)
    for pid, games in conn.execute(text(_LAST_GAMES), args):
        player(pid).rated_games = int(games)
    for pid, deviation, volatility in conn.execute(text(_LAST_DEVIATION), args):
        player(pid).deviation, player(pid).volatility = deviation, volatility
    for (pid,) in conn.execute(text(_RATED_ROWS), {**args, "kinds": list(_LISTED_KINDS)}):
        player(pid).listed = True
    for pid, length, last_game in conn.execute(text(_PLAYED), args):
        one = player(pid)
        one.experience += int(length)
        one.last_game_at = last_game
    if boosted_board:
        for pid, result, cube in conn.execute(text(_BOOSTED), args):
            player(pid).boosted_points += RESULT_POINTS.get(result or "single", 1) * int(cube)
    for pid, payload in conn.execute(text(_PROFILES), args):
        one = player(pid)
        one.email_verified = bool(payload.get("email_verified", False))
        one.display_name_chosen = bool(payload.get("display_name_chosen", False))
    for pid, kind in conn.execute(text(_BANS), args):
        player(pid).banned = kind in ("ban", "erase")
    for anon, account in links.items():
        if anon in named:
            player(anon).linked_to = account
            player(anon).listed = False
        if account in named:
            player(account)
    for one in players.values():
        one.version, one.updated_at = 0, None
    ranked, pairs = _windows(conn, args, window, named, earlier)
    settled = set(earlier.settled) if earlier is not None else set()
    settled |= {str(r[0]) for r in conn.execute(text(_SETTLED), args)}
    return Checkpoint(
        ladder=ladder,
        before=before,
        after_seq=after_seq,
        events=earlier.events if earlier is not None else 0,
        players=tuple(players[p] for p in sorted(players)),
        links=links,
        settled=frozenset(settled),
        ranked=ranked,
        rated_pairs=pairs,
    )


def _windows(
    conn: Connection,
    args: dict[str, Any],
    window: datetime,
    named: set[str],
    earlier: Checkpoint | None,
) -> tuple[dict[str, list[datetime]], dict[tuple[str, str], list[datetime]]]:
    """The games of the fair-play windows of the players ``named`` at the boundary: their
    ranked games (and their rated games with each other, by pair) that ended within
    ``WINDOW_DAYS`` of it, each list in time order."""
    ranked: dict[str, list[datetime]] = {}
    pairs: dict[tuple[str, str], list[datetime]] = {}
    if earlier is not None:
        for pid, times in earlier.ranked.items():
            if pid in named:
                ranked[pid] = [t for t in times if t >= window]
        for (a, b), times in earlier.rated_pairs.items():
            if a in named and b in named:
                pairs[a, b] = [t for t in times if t >= window]
    processed = max(args["since"], window - PROCESSED_MARGIN)
    found = conn.execute(text(_WINDOW_GAMES), {**args, "window": window, "processed": processed})
    for pid, other, won, ended, outcome in found:
        if outcome == "voided":
            continue
        ranked.setdefault(pid, []).append(ended)
        if won and outcome == "rated" and other in named:  # once: from its winner's side
            pair = (pid, other) if pid <= other else (other, pid)
            pairs.setdefault(pair, []).append(ended)
    return _sorted(ranked), _sorted(pairs)


def _sorted(table: dict[Any, list[datetime]]) -> dict[Any, list[datetime]]:
    return {key: sorted(times) for key, times in sorted(table.items()) if times}


def _copy(player: Player) -> Player:
    return replace(player, dirty=False)


_VOIDED_FIRST = """
SELECT min(processed_at) FROM events
WHERE ladder = :ladder AND event_id = ANY(:ids) AND processed_at < :before
"""


def start(
    conn: Connection,
    ladder: str,
    actions: Sequence[Action],
    before: datetime,
    start_rating: float,
    *,
    boosted_board: bool = True,
) -> Start:
    """Where a replay of the ladder's log processed since ``before`` starts: the checkpoint
    at ``before`` as the log recorded it (``at``), moved back to the first game a void taken
    since then takes back (that void is derived from the game on); the ladder's archive
    checkpoint or its first event (``checkpoints.start``) when nothing was processed before
    that instant since them. ``actions``: the ladder's moderation actions."""
    earlier = load(conn, ladder)
    before = _first_voided(conn, ladder, actions, before)
    if earlier is not None and before <= earlier.before:
        return Start(earlier, earlier.after_seq, [a for a in actions if a.at >= earlier.before])
    point = at(conn, ladder, before, start_rating, earlier, boosted_board=boosted_board)
    if point.after_seq == 0:  # nothing processed before the instant, nor archived: the whole log
        return Start(None, 0, list(actions))
    return Start(point, point.after_seq, [a for a in actions if a.at >= before])


def _first_voided(
    conn: Connection, ladder: str, actions: Sequence[Action], before: datetime
) -> datetime:
    """``before``, moved back to the processing of the first game a void taken since then
    takes back (again, until no void since the instant takes back a game before it); to the
    log's start for a rerate taken since then, or a void after one (each re-rates from the
    first event)."""
    rerated = any(a.kind == "rerate" for a in actions)
    if any(a.at >= before and (a.kind == "rerate" or (rerated and a.voided)) for a in actions):
        return WHOLE
    while True:
        voided = sorted({e for a in actions if a.at >= before for e in a.voided})
        if not voided:
            return before
        args = {"ladder": ladder, "ids": voided, "before": before}
        first = conn.execute(text(_VOIDED_FIRST), args).scalar()
        if first is None:
            return before
        before = first


# Before every event: the instant a replay since which is the whole log's (or the archive's).
WHOLE = datetime(1970, 1, 1, tzinfo=UTC)
_ARCHIVED = "SELECT before, after_seq FROM checkpoints WHERE ladder = :ladder"
_COUNT_AFTER = "SELECT count(*) FROM events WHERE ladder = :ladder AND seq > :after_seq"


def replayed(conn: Connection, ladder: str, actions: Sequence[Action], before: datetime) -> int:
    """How many events the replay since ``before`` that ``start`` begins replays: those
    numbered after the last one processed before its instant (moved back for a void), else
    after the archive checkpoint's, else all of them, as ``start`` and ``at`` choose. Two
    reads of the scoring order's index, a probe of each month for the last event before
    (``_LAST_BEFORE``) and the count after it: what the part costs, not the whole log."""
    before = _first_voided(conn, ladder, actions, before)
    archived = conn.execute(text(_ARCHIVED), {"ladder": ladder}).one_or_none()
    since = datetime.min.replace(tzinfo=before.tzinfo) if archived is None else archived.before
    args = {"ladder": ladder, "before": before, "since": since}
    last = conn.execute(text(_LAST_BEFORE), args).scalar()
    after_seq = int(last) if last is not None else (0 if archived is None else archived.after_seq)
    count = conn.execute(text(_COUNT_AFTER), {"ladder": ladder, "after_seq": after_seq})
    return int(count.scalar_one())
