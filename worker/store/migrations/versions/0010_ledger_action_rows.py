"""The ledger rows that are no event's, indexed apart: ``rating_changes_actions``, a partial
index by ladder and written order of the rows of a season's reset, an import, an adjustment
and a void's correction. They are few beside the games' rows, and the replaying commands read
them apart from the events (``worker.store.log.recorded_actions``,
``worker.store.moderation.action_rows``): through this index each month's partition answers
with its few rows instead of being read whole.

Made on the partitioned ledger, the index is made on each month's partition, and on each
month made later. Building it reads the whole ledger once, and the ledger takes no writes
until it is built.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "rating_changes_actions",
        "rating_changes",
        ["ladder", "id"],
        postgresql_where=sa.text("kind IN ('adjustment', 'correction', 'import', 'season')"),
    )


def downgrade() -> None:
    op.drop_index("rating_changes_actions", table_name="rating_changes")
