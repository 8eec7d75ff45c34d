"""The store side of a data-protection request: find, and rename, every row naming a player.
A player id is stored in ``players`` (key, ``linked_to``), ``events`` (``winner_id``,
``loser_id`` and anywhere in the payload: podium, link, profile, a draw's or team game's
players), ``rating_changes``, ``game_players``, ``links``, ``season_standings``,
``imported_players``, ``moderation_actions`` and archived ``dead_letters``. ``rows_naming``
reads them all; ``rename`` replaces the id by the pseudonym in each, in the caller's
transaction, and in what ``ladder archive`` keeps: the checkpoint (``checkpoint_players``,
``checkpoints.state``) and the archived months' tables (``game_players`` keeps no row of an
archived game: ``worker.store.game_players``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from sqlalchemy import String, and_, cast, or_, select, update
from sqlalchemy import text as text_sql
from sqlalchemy.engine import Connection

from worker.store.tables import (
    checkpoint_players,
    checkpoints,
    dead_letters,
    events,
    game_players,
    imported_players,
    links,
    moderation_actions,
    players,
    rating_changes,
    season_standings,
)


def _like(value: str) -> str:
    """A LIKE pattern for the JSON string ``"value"`` anywhere in a text."""
    quoted = json.dumps(value)[1:-1]
    escaped = quoted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f'%"{escaped}"%'


def _payload_names(ladder: str, player_id: str) -> Any:
    text = cast(events.c.payload, String)
    return and_(
        events.c.ladder == ladder,
        or_(
            events.c.winner_id == player_id,
            events.c.loser_id == player_id,
            text.like(_like(player_id), escape="\\"),
        ),
    )


def _rows(conn: Connection, query: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(query).mappings()]


def rows_naming(conn: Connection, ladder: str, player_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every PostgreSQL row of the ladder that names the player, table by table."""
    mine = and_(rating_changes.c.ladder == ladder, rating_changes.c.player_id == player_id)
    return {
        "players": _rows(
            conn,
            select(players).where(
                players.c.ladder == ladder,
                or_(players.c.player_id == player_id, players.c.linked_to == player_id),
            ),
        ),
        "events": _rows(
            conn, select(events).where(_payload_names(ladder, player_id)).order_by(events.c.seq)
        ),
        "rating_changes": _rows(
            conn, select(rating_changes).where(mine).order_by(rating_changes.c.id)
        ),
        "game_players": _rows(
            conn,
            select(game_players)
            .where(game_players.c.ladder == ladder, game_players.c.player_id == player_id)
            .order_by(game_players.c.event_id),
        ),
        "links": _rows(
            conn,
            select(links).where(
                links.c.ladder == ladder,
                or_(links.c.anonymous_id == player_id, links.c.account_id == player_id),
            ),
        ),
        "season_standings": _rows(
            conn,
            select(season_standings).where(
                season_standings.c.ladder == ladder, season_standings.c.player_id == player_id
            ),
        ),
        "imported_players": _rows(
            conn,
            select(imported_players).where(
                imported_players.c.ladder == ladder, imported_players.c.player_id == player_id
            ),
        ),
        "moderation_actions": _rows(
            conn,
            select(moderation_actions).where(
                moderation_actions.c.ladder == ladder,
                or_(
                    moderation_actions.c.target == player_id,
                    moderation_actions.c.reason.contains(player_id, autoescape=True),
                    cast(moderation_actions.c.details, String).like(_like(player_id), escape="\\"),
                ),
            ),
        ),
        "dead_letters": letters_naming(conn, ladder, player_id),
    }


def letters_naming(conn: Connection, ladder: str, player_id: str) -> list[dict[str, Any]]:
    """The archived dead letters of the ladder (or of none) that mention the id: on the
    default primary, which holds every dead letter (``worker.store.routes``)."""
    return _rows(
        conn,
        select(dead_letters).where(
            or_(dead_letters.c.ladder == ladder, dead_letters.c.ladder.is_(None)),
            or_(
                dead_letters.c.payload.contains(player_id, autoescape=True),
                dead_letters.c.detail.contains(player_id, autoescape=True),
                dead_letters.c.traceback.contains(player_id, autoescape=True),
            ),
        ),
    )


def in_json(value: Any, old: str, new: str) -> Any:
    """``value`` with every string equal to ``old`` (keys included) replaced by ``new``."""
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [in_json(v, old, new) for v in value]
    if isinstance(value, dict):
        return {in_json(k, old, new): in_json(v, old, new) for k, v in value.items()}
    return value


def in_text(text: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced where it stands as a whole id (not inside another)."""
    pattern = re.compile(r"(?<![\w.\-])" + re.escape(old) + r"(?![\w.\-])")
    return pattern.sub(new, text)


class Renamed(NamedTuple):
    rows: int
    """How many rows were rewritten."""
    events: list[str]
    """The ids of the events (live and archived) that named the player."""


def rename(conn: Connection, ladder: str, old: str, new: str) -> Renamed:
    """Replace ``old`` by ``new`` in every row of the ladder."""
    found = rows_naming(conn, ladder, old)
    count = sum(len(rows) for rows in found.values())
    for row in found["events"]:
        conn.execute(
            update(events)
            .where(events.c.ladder == ladder, events.c.event_id == row["event_id"])
            .values(
                payload=in_json(row["payload"], old, new),
                winner_id=new if row["winner_id"] == old else row["winner_id"],
                loser_id=new if row["loser_id"] == old else row["loser_id"],
            )
        )

    def column(table: Any, name: str, *where: Any) -> None:
        conn.execute(update(table).where(*where, table.c[name] == old).values({name: new}))

    column(players, "player_id", players.c.ladder == ladder)
    column(players, "linked_to", players.c.ladder == ladder)
    column(rating_changes, "player_id", rating_changes.c.ladder == ladder)
    column(game_players, "player_id", game_players.c.ladder == ladder)
    column(links, "anonymous_id", links.c.ladder == ladder)
    column(links, "account_id", links.c.ladder == ladder)
    column(season_standings, "player_id", season_standings.c.ladder == ladder)
    column(imported_players, "player_id", imported_players.c.ladder == ladder)
    column(checkpoint_players, "player_id", checkpoint_players.c.ladder == ladder)
    column(checkpoint_players, "linked_to", checkpoint_players.c.ladder == ladder)
    archived = _archives(conn, ladder, old, new)
    for row in found["moderation_actions"]:  # a ban's void names the player in its reason
        conn.execute(
            update(moderation_actions)
            .where(moderation_actions.c.id == row["id"])
            .values(
                target=new if row["target"] == old else row["target"],
                reason=in_text(row["reason"], old, new),
                details=in_json(row["details"], old, new),
            )
        )
    _rename_letters(conn, found["dead_letters"], old, new)
    return Renamed(count, [row["event_id"] for row in found["events"]] + archived)


def events_naming(conn: Connection, ladder: str, player_id: str) -> list[str]:
    """The ids of the ladder's live events that name the player."""
    query = select(events.c.event_id).where(_payload_names(ladder, player_id))
    return list(conn.execute(query).scalars())


def rename_letters(conn: Connection, ladder: str, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` in the archived dead letters of the ladder (or of none):
    those on the default primary, for a ladder whose rows are on another."""
    found = letters_naming(conn, ladder, old)
    _rename_letters(conn, found, old, new)
    return len(found)


def _rename_letters(conn: Connection, found: list[dict[str, Any]], old: str, new: str) -> None:
    text: Callable[[str], str] = lambda value: in_text(value, old, new)  # noqa: E731
    for row in found:
        conn.execute(
            update(dead_letters)
            .where(dead_letters.c.id == row["id"])
            .values(
                payload=text(row["payload"]),
                detail=text(row["detail"]),
                traceback=text(row["traceback"]),
            )
        )


def _archives(conn: Connection, ladder: str, old: str, new: str) -> list[str]:
    """The ladder's checkpoint (links, windows) and the archived months' tables
    (``ladder archive``: ``archived_events_*``, ``archived_rating_changes_*``); returns the
    ids of the archived events renamed."""
    renamed: list[str] = []
    point = conn.execute(select(checkpoints.c.state).where(checkpoints.c.ladder == ladder)).first()
    if point is not None:
        state = dict(point[0])
        state["ranked"] = in_json(state["ranked"], old, new)  # keys are player ids
        state["links"] = in_json(state["links"], old, new)
        state["rated_pairs"] = [  # a pair keeps its order: the smaller id first
            [*sorted((in_json(a, old, new), in_json(b, old, new))), times]
            for a, b, times in state["rated_pairs"]
        ]
        conn.execute(update(checkpoints).where(checkpoints.c.ladder == ladder).values(state=state))
    names = conn.execute(
        text_sql(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename LIKE 'archived\\_%'"
        )
    ).scalars()
    for name in names:
        params = {"ladder": ladder, "old": old, "new": new}
        if name.startswith("archived_events_"):
            rows = conn.execute(
                text_sql(
                    f'SELECT event_id, payload FROM "{name}" WHERE ladder = :ladder AND '
                    "(winner_id = :old OR loser_id = :old OR payload::text LIKE :like "
                    "ESCAPE '\\')"
                ),
                {**params, "like": _like(old)},
            )
            for event_id, payload in rows.all():
                renamed.append(event_id)
                conn.execute(
                    text_sql(
                        f'UPDATE "{name}" SET payload = CAST(:payload AS jsonb), '
                        "winner_id = CASE WHEN winner_id = :old THEN :new ELSE winner_id END, "
                        "loser_id = CASE WHEN loser_id = :old THEN :new ELSE loser_id END "
                        "WHERE ladder = :ladder AND event_id = :event_id"
                    ),
                    {
                        **params,
                        "event_id": event_id,
                        "payload": json.dumps(in_json(payload, old, new)),
                    },
                )
        elif name.startswith("archived_rating_changes_"):
            conn.execute(
                text_sql(
                    f'UPDATE "{name}" SET player_id = :new '
                    "WHERE ladder = :ladder AND player_id = :old"
                ),
                params,
            )
    return renamed


def last_erase(conn: Connection, ladder: str, pseudonym: str) -> tuple[int, str] | None:
    """The moderation log's number and target of the latest erase that made ``pseudonym`` or
    one of its later forms (``<pseudonym>-<n>``), if there is one."""
    query = (
        select(moderation_actions.c.id, moderation_actions.c.target)
        .where(
            moderation_actions.c.ladder == ladder,
            moderation_actions.c.kind == "erase",
            or_(
                moderation_actions.c.target == pseudonym,
                moderation_actions.c.target.startswith(f"{pseudonym}-", autoescape=True),
            ),
        )
        .order_by(moderation_actions.c.id.desc())
        .limit(1)
    )
    found = conn.execute(query).first()
    return None if found is None else (int(found[0]), str(found[1]))
