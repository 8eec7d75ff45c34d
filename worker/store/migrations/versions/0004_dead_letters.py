"""Dead letters beyond what Redis keeps (``LADDER_DLQ_MAX``): the oldest move here.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("event_id", sa.String(128), nullable=True),
        sa.Column("ladder", sa.String(64), nullable=True),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("traceback", sa.Text, nullable=False),
    )
    op.create_index("dead_letters_event", "dead_letters", ["event_id"])
    op.create_index("dead_letters_failed_at", "dead_letters", ["failed_at", "id"])


def downgrade() -> None:
    op.drop_table("dead_letters")
