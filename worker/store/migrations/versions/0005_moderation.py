"""Moderation: the log of operators' actions, changed outcomes, and banned players.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "players", sa.Column("banned", sa.Boolean, nullable=False, server_default=sa.false())
    )
    op.create_table(
        "moderation_actions",
        sa.Column(
            "id",
            sa.BigInteger(),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("ladder", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target", sa.String(128), nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("by", sa.String(128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("after_seq", sa.BigInteger, nullable=False),
        sa.Column("details", JSONB(), nullable=False),
    )
    op.create_index("moderation_actions_ladder", "moderation_actions", ["ladder", "id"])
    op.create_table(
        "event_effects",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("event_id", sa.String(128), primary_key=True),
        sa.Column("action_id", sa.BigInteger, primary_key=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("event_effects")
    op.drop_table("moderation_actions")
    op.drop_column("players", "banned")
