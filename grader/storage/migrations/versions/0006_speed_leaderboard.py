"""Speed-graded problems: a submission's timing (`speed`) and the name a course gives its submitter
(`submitter`); each speed-graded problem's leaderboard, the best accepted speed-up per entrant.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("speed", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("submitter", sa.String(length=64), nullable=True))
    op.create_table(
        "leaderboard_entries",
        sa.Column("problem_id", sa.String(length=64), nullable=False),
        sa.Column("entrant", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("speedup", sa.Float(), nullable=False),
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("problem_version", sa.String(length=32), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("problem_id", "entrant"),
    )
    op.create_index("ix_leaderboard_entries_problem_id_speedup", "leaderboard_entries", ["problem_id", "speedup"])


def downgrade() -> None:
    op.drop_index("ix_leaderboard_entries_problem_id_speedup", table_name="leaderboard_entries")
    op.drop_table("leaderboard_entries")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("submitter")
        batch.drop_column("speed")
