"""``ladder_archives``: per ladder, the boundary of its latest archive (``worker.store.marks``).
An archive marks its ladders before it reads the log for their checkpoints, so that a batch
validated before the boundary and stored after that read takes an instant on or after it.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ladder_archives",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("before", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ladder_archives")
