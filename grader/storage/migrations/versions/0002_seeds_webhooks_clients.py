"""Submissions record their seed (hidden inputs drawn per submission), an optional callback URL with
its delivery state, and the client address an anonymous submission came from (its rate limit).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("seed", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("callback_url", sa.Text(), nullable=True))
        batch.add_column(sa.Column("webhook_status", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("webhook_attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("webhook_error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("webhook_next_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("client_address", sa.String(length=64), nullable=True))
    op.create_index("ix_submissions_client_address_created_at", "submissions", ["client_address", "created_at"])
    op.create_index("ix_submissions_webhook_status_next_at", "submissions", ["webhook_status", "webhook_next_at"])


def downgrade() -> None:
    op.drop_index("ix_submissions_webhook_status_next_at", table_name="submissions")
    op.drop_index("ix_submissions_client_address_created_at", table_name="submissions")
    with op.batch_alter_table("submissions") as batch:
        for column in (
            "client_address",
            "webhook_next_at",
            "webhook_error",
            "webhook_attempts",
            "webhook_status",
            "callback_url",
            "seed",
        ):
            batch.drop_column(column)
