"""Each moderation action records when its Redis projection was done: an action whose Redis
write failed after its commit stays marked (``projected_at`` NULL) until the next worker
batch, ``ladder reconcile --repair`` or the command run again re-projects its ladder. A
partial index holds only the marked ones, so the worker's probe per batch reads an index
that is empty but for them.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "moderation_actions", sa.Column("projected_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute("UPDATE moderation_actions SET projected_at = at")  # taken before: projected
    op.create_index(
        "moderation_actions_unprojected",
        "moderation_actions",
        ["ladder"],
        postgresql_where=sa.text("projected_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("moderation_actions_unprojected", table_name="moderation_actions")
    op.drop_column("moderation_actions", "projected_at")
