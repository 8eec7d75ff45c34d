"""Where a season's close falls in the ladder's scoring order: ``after_seq``, the scoring
number of the last event stored when it committed (as a moderation action's), so that every
replay applies its reset after exactly the events it followed, whatever their processing
times (a worker's batch that waited for the close's lock was processed before the close
began and applied after it). A close recorded before this revision gets the last event
processed before its instant, the place its time gave it.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("seasons", sa.Column("after_seq", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE seasons s SET after_seq = coalesce((SELECT max(e.seq) FROM events e"
        " WHERE e.ladder = s.ladder AND e.processed_at < s.closed_at), 0)"
        " WHERE s.closed_at IS NOT NULL"
    )


def downgrade() -> None:
    op.drop_column("seasons", "after_seq")
