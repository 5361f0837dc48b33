"""Submissions count the gradings started since their last verdict (or regrade): a submission whose
grading keeps killing its grader is given up after GRADER_MAX_ATTEMPTS of them, as internal_error.
`attempts` stays what it was: every grading ever started, the token that fences a stale attempt off.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("grading_starts", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("grading_starts")
