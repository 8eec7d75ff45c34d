"""``ladder_imports``: per ladder, the instant of its latest import (``worker.store.marks``).
A replay places an import's rows before the events processed after that instant, so a batch
that finds an import at or after its own instant once it holds its players takes a later one.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ladder_imports",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ladder_imports")
