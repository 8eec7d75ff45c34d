"""Players imported from another rating system, with what the import said about each.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "imported_players",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(128), primary_key=True),
        sa.Column("event_id", sa.String(128), nullable=False),
        sa.Column("rating", sa.Float(53), nullable=False),
        sa.Column("rated_games", sa.Integer, nullable=False),
        sa.Column("experience", sa.Integer, nullable=False),
        sa.Column("last_game_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("email_verified", sa.Boolean, nullable=False),
        sa.Column("display_name_chosen", sa.Boolean, nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("imported_players")
