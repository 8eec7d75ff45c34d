"""``game_players``: every player of every draw and team game, with its team's place, the
number of teams and whether all tied (``worker.store.game_players``), so that a player's games
are found whatever the game's shape. A 1v1 win has no row. The draws and team games already
in the log get theirs, each id resolved through the links made before the game.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from worker.store import game_players

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "game_players",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(128), primary_key=True),
        sa.Column("event_id", sa.String(128), primary_key=True),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("teams", sa.Integer, nullable=False),
        sa.Column("draw", sa.Boolean, nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False),
    )
    game_players.fill(op.get_bind())


def downgrade() -> None:
    op.drop_table("game_players")
