"""Each ledger row keeps the player's rated games and provisional flag right after it, so an
event's receipt can be read back from PostgreSQL after its Redis copy expired.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rating_changes", sa.Column("games", sa.Integer, nullable=True))
    op.add_column("rating_changes", sa.Column("provisional", sa.Boolean, nullable=True))


def downgrade() -> None:
    op.drop_column("rating_changes", "provisional")
    op.drop_column("rating_changes", "games")
