"""The expected-output cache is kept within a byte budget (GRADER_EXPECTED_CACHE_MB): each entry's size and when
it was last used, the least recently used evicted first (grader/storage/problem_data.py).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("expected_outputs") as batch:
        batch.add_column(sa.Column("size", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("used_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE expected_outputs SET size = length(data), used_at = created_at")
    with op.batch_alter_table("expected_outputs") as batch:
        batch.alter_column("used_at", existing_type=sa.DateTime(timezone=True), nullable=False)
        batch.create_index("ix_expected_outputs_used_at", ["used_at"])


def downgrade() -> None:
    with op.batch_alter_table("expected_outputs") as batch:
        batch.drop_index("ix_expected_outputs_used_at")
        batch.drop_column("used_at")
        batch.drop_column("size")
