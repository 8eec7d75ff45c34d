"""Initial schema: players, events, rating_changes, links, tournaments.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Json = JSONB()
Id = sa.String(128)
Ladder = sa.String(64)
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "players",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("player_id", Id, primary_key=True),
        sa.Column("rating", sa.Float(53), nullable=False),
        sa.Column("rated_games", sa.Integer, nullable=False, server_default="0"),
        sa.Column("experience", sa.Integer, nullable=False, server_default="0"),
        sa.Column("listed", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("boosted_points", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("email_verified", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("display_name_chosen", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("linked_to", Id, nullable=True),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("last_game_at", When, nullable=True),
        sa.Column("updated_at", When, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("event_id", Id, primary_key=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("ruleset", sa.String(32), nullable=False),
        sa.Column("ruleset_version", sa.String(32), nullable=False),
        sa.Column("ended_at", When, nullable=True),
        sa.Column("processed_at", When, nullable=False),
        sa.Column("mode", sa.String(16), nullable=True),
        sa.Column("winner_id", Id, nullable=True),
        sa.Column("loser_id", Id, nullable=True),
        sa.Column("cube", sa.Integer, nullable=True),
        sa.Column("coefficient", sa.Float(53), nullable=True),
        sa.Column("match_length", sa.Integer, nullable=True),
        sa.Column("payload", Json, nullable=False),
    )
    op.create_index("events_winner_window", "events", ["ladder", "winner_id", "ended_at"])
    op.create_index("events_loser_window", "events", ["ladder", "loser_id", "ended_at"])
    op.create_table(
        "rating_changes",
        sa.Column(
            "id",
            sa.BigInteger(),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("ladder", Ladder, nullable=False),
        sa.Column("player_id", Id, nullable=False),
        sa.Column("event_id", Id, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("rating_before", sa.Float(53), nullable=False),
        sa.Column("rating_after", sa.Float(53), nullable=False),
        sa.Column("delta", sa.Float(53), nullable=False),
        sa.Column("k", sa.Float(53), nullable=True),
        sa.Column("expected", sa.Float(53), nullable=True),
        sa.Column("at", When, nullable=False),
    )
    op.create_index("rating_changes_player", "rating_changes", ["ladder", "player_id", "id"])
    op.create_table(
        "links",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("anonymous_id", Id, primary_key=True),
        sa.Column("account_id", Id, nullable=False),
        sa.Column("event_id", Id, nullable=False),
        sa.Column("adopted", sa.Boolean, nullable=False),
        sa.Column("linked_at", When, nullable=False),
        sa.UniqueConstraint("ladder", "account_id", name="links_account_once"),
    )
    op.create_table(
        "tournaments",
        sa.Column("ladder", Ladder, primary_key=True),
        sa.Column("tournament_id", Id, primary_key=True),
        sa.Column("event_id", Id, nullable=False),
        sa.Column("public", sa.Boolean, nullable=False),
        sa.Column("settled_at", When, nullable=False),
    )


def downgrade() -> None:
    for table in ("tournaments", "links", "rating_changes", "events", "players"):
        op.drop_table(table)
