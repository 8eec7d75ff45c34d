"""PostgreSQL tables (SQLAlchemy Core). PostgreSQL is the system of record.

- ``players``: each player's current state per ladder (the Redis projection's source).
- ``events``: one audit row per accepted event: its outcome, the reason when unrated, the
  ruleset version used, the game's facts, the normalised payload (raw IP addresses are never
  stored: the network token stands in) and its digest, and ``seq``, the order of scoring.
- ``rating_changes``: the ledger, one row per change of a player's rating (game, prize,
  link adoption): before, after, delta, K, and the player's games and provisional flag right
  after it (what the event's receipt shows). Per player, each ``before`` equals the previous
  ``after``.
- ``links``: anonymous id -> account links (each side at most once per ladder).
- ``tournaments``: tournaments that have been settled (pays out at most once).
- ``game_players``: each player of a draw or team game (``events`` names a game's players as
  its winner and loser, which a game of more players has not), with its team's place
  (``worker.store.game_players``).

``events`` and ``rating_changes`` are partitioned by month of the time they were written
(``worker.store.partitions``); ``event_ids`` keeps every event id once across the months.

Migrations (``worker/store/migrations``) create these; this module only describes them
(``worker.store.engines`` makes the engine that reaches them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps are stored in UTC and always read back timezone-aware (a naive one is UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            return value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


metadata = MetaData()
Json = JSONB()
Id = String(128)
LadderName = String(64)

players = Table(
    "players",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("player_id", Id, primary_key=True),
    Column("rating", Float(53), nullable=False),
    Column("rated_games", Integer, nullable=False, server_default="0"),
    Column("experience", Integer, nullable=False, server_default="0"),
    Column("listed", Boolean, nullable=False, server_default="false"),
    Column("boosted_points", BigInteger, nullable=False, server_default="0"),
    Column("email_verified", Boolean, nullable=False, server_default="false"),
    Column("display_name_chosen", Boolean, nullable=False, server_default="false"),
    Column("linked_to", Id, nullable=True),
    Column("version", BigInteger, nullable=False, server_default="0"),
    Column("last_game_at", UTCDateTime(), nullable=True),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("banned", Boolean, nullable=False, server_default="false"),
    # glicko2's deviation and volatility, openskill's sigma (None: the ruleset's start values).
    Column("deviation", Float(53), nullable=True),
    Column("volatility", Float(53), nullable=True),
)

events = Table(
    "events",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("event_id", Id, primary_key=True),
    Column("type", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("reason", String(32), nullable=True),
    Column("ruleset", String(32), nullable=False),
    Column("ruleset_version", String(32), nullable=False),
    Column("ended_at", UTCDateTime(), nullable=True),
    Column("processed_at", UTCDateTime(), primary_key=True),  # the partition key
    Column("mode", String(16), nullable=True),
    Column("winner_id", Id, nullable=True),
    Column("loser_id", Id, nullable=True),
    Column("cube", Integer, nullable=True),
    Column("coefficient", Float(53), nullable=True),
    Column("match_length", Integer, nullable=True),
    Column("payload", Json, nullable=False),
    Column("digest", String(64), nullable=True),  # SHA-256 of the normalised payload
    # The scoring order: numbered as rows are written (a sequence, migration 0003).
    Column("seq", BigInteger, nullable=False),
    Index("events_winner_window", "ladder", "winner_id", "ended_at"),
    Index("events_loser_window", "ladder", "loser_id", "ended_at"),
    Index("events_scoring_order", "ladder", "seq"),
    postgresql_partition_by="RANGE (processed_at)",
)

# Every player of every draw and team game, as resolved (a 1v1 win has none: its audit row's
# winner_id and loser_id name its players): its team's place (1 + the teams ahead of it), the
# number of teams, whether all tied. Keyed for "this player's games" (``game_players``).
game_players = Table(
    "game_players",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("player_id", Id, primary_key=True),
    Column("event_id", Id, primary_key=True),
    Column("rank", Integer, nullable=False),
    Column("teams", Integer, nullable=False),
    Column("draw", Boolean, nullable=False),
    Column("ended_at", UTCDateTime(), nullable=False),
    Column("processed_at", UTCDateTime(), nullable=False),  # the audit row's
)

# Every stored event id of every ladder (archived ones too), filled by a trigger on ``events``:
# the duplicate check reads it, and its key stores an id once across every month's partition.
event_ids = Table(
    "event_ids",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("event_id", Id, primary_key=True),
    Column("digest", String(64), nullable=True),
    Column("processed_at", UTCDateTime(), nullable=False),
)

# The ledger rows no event wrote (seasons, imports, moderation): few, indexed apart (0010).
ACTION_ROWS = "kind IN ('adjustment', 'correction', 'import', 'season')"
rating_changes = Table(
    "rating_changes",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("ladder", LadderName, nullable=False),
    Column("player_id", Id, nullable=False),
    Column("event_id", Id, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("rating_before", Float(53), nullable=False),
    Column("rating_after", Float(53), nullable=False),
    Column("delta", Float(53), nullable=False),
    Column("k", Float(53), nullable=True),
    Column("expected", Float(53), nullable=True),
    Column("at", UTCDateTime(), primary_key=True),  # the partition key
    # The player's rated games and provisional flag right after the change (the receipt's);
    # None on rows written before they were stored.
    Column("games", Integer, nullable=True),
    Column("provisional", Boolean, nullable=True),
    # The player's deviation and volatility right after the change (glicko2, openskill).
    Column("deviation", Float(53), nullable=True),
    Column("volatility", Float(53), nullable=True),
    Index("rating_changes_player", "ladder", "player_id", "id"),
    Index("rating_changes_event", "ladder", "event_id"),  # an event's rows (its receipt)
    Index("rating_changes_actions", "ladder", "id", postgresql_where=text(ACTION_ROWS)),
    postgresql_partition_by="RANGE (at)",
)

links = Table(
    "links",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("anonymous_id", Id, primary_key=True),
    Column("account_id", Id, nullable=False),
    Column("event_id", Id, nullable=False),
    Column("adopted", Boolean, nullable=False),
    Column("linked_at", UTCDateTime(), nullable=False),
    UniqueConstraint("ladder", "account_id", name="links_account_once"),
)

tournaments = Table(
    "tournaments",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("tournament_id", Id, primary_key=True),
    Column("event_id", Id, nullable=False),
    Column("public", Boolean, nullable=False),
    Column("settled_at", UTCDateTime(), nullable=False),
)


# Seasons of a ladder (SPEC 2.3: "Season 0" is the first). The open season has no name and no
# closed_at; closing names it, archives its standings and opens the next number.
seasons = Table(
    "seasons",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("name", String(64), nullable=True),
    Column("opened_at", UTCDateTime(), nullable=True),
    Column("closed_at", UTCDateTime(), nullable=True),
    Column("reset", String(16), nullable=True),
    Column("fraction", Float(53), nullable=True),
    Column("players", Integer, nullable=True),
    # A closed season's place in scoring order: the last event stored when it committed.
    Column("after_seq", BigInteger, nullable=True),
    UniqueConstraint("ladder", "name", name="seasons_name_once"),
)

# A closed season's final standings: the rating board at close, ranked 1, 2, 2, 4.
season_standings = Table(
    "season_standings",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("season", String(64), primary_key=True),
    Column("player_id", Id, primary_key=True),
    Column("rank", Integer, nullable=False),
    Column("rating", Float(53), nullable=False),
    Column("rated_games", Integer, nullable=False),
    Column("experience", Integer, nullable=False),
)


# Players created by ``ladder import`` from another rating system, with what the file said of
# each (``worker.store.imports``): ``verify`` starts their history from it, and importing the
# same line again finds it here and changes nothing.
imported_players = Table(
    "imported_players",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("player_id", Id, primary_key=True),
    Column("event_id", Id, nullable=False),
    Column("rating", Float(53), nullable=False),
    Column("rated_games", Integer, nullable=False),
    Column("experience", Integer, nullable=False),
    Column("last_game_at", UTCDateTime(), nullable=True),
    Column("email_verified", Boolean, nullable=False),
    Column("display_name_chosen", Boolean, nullable=False),
    Column("imported_at", UTCDateTime(), nullable=False),
    Column("deviation", Float(53), nullable=True),  # where the file gave one (migration 0013)
    Column("volatility", Float(53), nullable=True),
)


# Dead letters moved out of Redis once it holds LADDER_DLQ_MAX of them (worker.queue.deadletter).
dead_letters = Table(
    "dead_letters",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("event_id", Id, nullable=True),
    Column("ladder", LadderName, nullable=True),
    Column("reason", String(32), nullable=False),
    Column("detail", Text, nullable=False),
    Column("failed_at", UTCDateTime(), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("payload", Text, nullable=False),
    Column("traceback", Text, nullable=False),
    Index("dead_letters_event", "event_id"),
    Index("dead_letters_failed_at", "failed_at", "id"),
)

# Per ladder, how many transactions changed what its windows read: each worker batch that
# stores events of it and each operator action on it adds one (``worker.store.windowcache``).
ladder_writes = Table(
    "ladder_writes",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("writes", BigInteger, nullable=False),
    # the audit rows worker batches stored, and the operator actions (migration 0019)
    Column("stored", BigInteger, nullable=False, server_default="0"),
    Column("actions", BigInteger, nullable=False, server_default="0"),
)

# What a batch's instant must come after (``worker.store.marks``): the instant of each ladder's
# latest import (migration 0017) and the boundary of its latest archive (migration 0018).
ladder_imports = Table(
    "ladder_imports",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("imported_at", UTCDateTime(), nullable=False),
)
ladder_archives = Table(
    "ladder_archives",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("before", UTCDateTime(), nullable=False),
)

# Moderation (worker.ops.moderation): every action an operator took, in order, append-only.
# ``after_seq`` is the scoring number of the last event stored when it was taken: a replay
# applies it right after that event. ``details`` holds what it did (event ids, delta, ...).
moderation_actions = Table(
    "moderation_actions",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("ladder", LadderName, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("target", Id, nullable=True),
    Column("reason", Text, nullable=False),
    Column("by", String(128), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("after_seq", BigInteger, nullable=False),
    Column("details", Json, nullable=False),
    # When its Redis projection was done; NULL while it is not (a Redis write that failed
    # after the commit): the next worker batch of the ladder heals Redis and sets it.
    Column("projected_at", UTCDateTime(), nullable=True),
    Index("moderation_actions_ladder", "ladder", "id"),
    Index(
        "moderation_actions_unprojected",
        "ladder",
        postgresql_where=text("projected_at IS NULL"),
    ),
)

# An event's outcome as a moderation action changed it (the audit row keeps the original):
# ``voided`` for a voided game, or the outcome a re-rating gave a later one. The newest row
# of an event (highest ``action_id``) is its outcome now.
event_effects = Table(
    "event_effects",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("event_id", Id, primary_key=True),
    Column("action_id", BigInteger, primary_key=True),
    Column("outcome", String(16), nullable=False),
    Column("reason", String(32), nullable=True),
)

# A ladder's state at its archive boundary (``ladder archive``): its players in
# ``checkpoint_players``; links, settled tournaments and the games still in a window in ``state``;
# ``after_seq`` the scoring number of the last event archived. ``verify`` replays from it.
checkpoints = Table(
    "checkpoints",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("before", UTCDateTime(), nullable=False),
    Column("after_seq", BigInteger, nullable=False),
    Column("events", BigInteger, nullable=False),  # events archived, every archive together
    Column("state", Json, nullable=False),
    Column("made_at", UTCDateTime(), nullable=False),
)

checkpoint_players = Table(
    "checkpoint_players",
    metadata,
    Column("ladder", LadderName, primary_key=True),
    Column("player_id", Id, primary_key=True),
    Column("rating", Float(53), nullable=False),
    Column("rated_games", Integer, nullable=False),
    Column("experience", Integer, nullable=False),
    Column("listed", Boolean, nullable=False),
    Column("boosted_points", BigInteger, nullable=False),
    Column("email_verified", Boolean, nullable=False),
    Column("display_name_chosen", Boolean, nullable=False),
    Column("linked_to", Id, nullable=True),
    Column("version", BigInteger, nullable=False),
    Column("last_game_at", UTCDateTime(), nullable=True),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("banned", Boolean, nullable=False),
    Column("deviation", Float(53), nullable=True),
    Column("volatility", Float(53), nullable=True),
)
