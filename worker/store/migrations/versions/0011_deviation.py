"""A player's deviation and volatility (glicko2; openskill's sigma), on the player, on each
ledger row and in an archive's checkpoint, where the ruleset keeps them. Both are nullable and
empty on the ladders of the seed rulesets; adding a nullable column rewrites no row.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_COLUMNS = ("deviation", "volatility")


def upgrade() -> None:
    for table in ("players", "rating_changes", "checkpoint_players"):
        for name in _COLUMNS:
            op.add_column(table, sa.Column(name, sa.Float(53), nullable=True))


def downgrade() -> None:
    for table in ("players", "rating_changes", "checkpoint_players"):
        for name in _COLUMNS:
            op.drop_column(table, name)
