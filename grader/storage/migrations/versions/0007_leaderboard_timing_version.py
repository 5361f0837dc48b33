"""The leaderboard says how each entry was timed (grading/speed_stats.py TIMING_VERSION): entries made before
this revision were timed under version 1.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("leaderboard_entries") as batch:
        batch.add_column(sa.Column("timing_version", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("leaderboard_entries") as batch:
        batch.drop_column("timing_version")
