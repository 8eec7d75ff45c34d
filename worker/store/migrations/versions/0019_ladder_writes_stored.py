"""``ladder_writes`` counts apart what worker batches stored and what operators did: ``stored``,
the audit rows every worker batch stored of the ladder (added in the batch's transaction), and
``actions``, the operator actions on it (moderation, season close, erase, archive). A worker
that keeps windows in memory reads the games another worker stored since its last read by
their scoring order, and knows it read them all when ``stored`` moved by as many rows and
``actions`` did not move (``worker.store.windowcache``).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name in ("stored", "actions"):
        column = sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
        op.add_column("ladder_writes", column)


def downgrade() -> None:
    op.drop_column("ladder_writes", "actions")
    op.drop_column("ladder_writes", "stored")
