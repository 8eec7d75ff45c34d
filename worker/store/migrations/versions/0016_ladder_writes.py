"""``ladder_writes``: per ladder, a count of the transactions that changed what its windows
read (``worker.store.windowcache``): every worker batch that stores events of it, every
moderation action, season close, erase and archive of it. A worker keeps the windows of the
players it scored in memory for as long as the count says nobody else changed the ladder.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ladder_writes",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("writes", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ladder_writes")
