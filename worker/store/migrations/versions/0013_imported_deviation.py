"""An imported player's deviation and volatility (glicko2; openskill's sigma), where the import
file gives them, beside the rest of what the import gave them: a file imported again with the
same values changes nothing. Both nullable; adding a nullable column rewrites no row.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_COLUMNS = ("deviation", "volatility")


def upgrade() -> None:
    for name in _COLUMNS:
        op.add_column("imported_players", sa.Column(name, sa.Float(53), nullable=True))


def downgrade() -> None:
    for name in _COLUMNS:
        op.drop_column("imported_players", name)
