"""An index of the ledger by event (``rating_changes_event``: ladder, event_id): a stored
receipt (a duplicate's, which repeats its original's numbers; ``ladder event`` and the API's
``/events/{event_id}`` once the Redis copy expired) reads its event's ledger rows by it, where
it read every ledger row of the ladder. Built on every monthly partition; on a large ledger
the build takes a while, and writes to the ledger wait for it.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("rating_changes_event", "rating_changes", ["ladder", "event_id"])


def downgrade() -> None:
    op.drop_index("rating_changes_event", "rating_changes")
