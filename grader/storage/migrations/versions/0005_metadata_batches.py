"""Submissions carry the client's own metadata (a bounded object echoed in every view), the batch they
came in (POST /api/submissions/batch) and, without API keys, their owner (a hash of a browser's or a CLI's
own token: its history); a problem's submissions are listed and exported in time order.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("client_metadata", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("batch_id", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("owner_hash", sa.String(length=64), nullable=True))
    op.create_index("ix_submissions_batch_id", "submissions", ["batch_id"])
    op.create_index("ix_submissions_owner_hash_created_at", "submissions", ["owner_hash", "created_at"])
    op.create_index("ix_submissions_problem_id_created_at", "submissions", ["problem_id", "created_at", "id"])
    op.create_index("ix_submissions_created_at_id", "submissions", ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_submissions_created_at_id", table_name="submissions")
    op.drop_index("ix_submissions_problem_id_created_at", table_name="submissions")
    op.drop_index("ix_submissions_owner_hash_created_at", table_name="submissions")
    op.drop_index("ix_submissions_batch_id", table_name="submissions")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("owner_hash")
        batch.drop_column("batch_id")
        batch.drop_column("client_metadata")
