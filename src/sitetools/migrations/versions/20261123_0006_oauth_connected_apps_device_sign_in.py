"""oauth connected apps device sign-in

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:33:14.826377
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import sitetools.core.db

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "device_sign_ins",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("user_code", sa.String(length=16), nullable=False),
        sa.Column("network", sa.String(length=64), nullable=False),
        sa.Column("client_name", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("account_id", sa.String(length=40), nullable=True),
        sa.Column("membership_id", sa.String(length=40), nullable=True),
        sa.Column("key_id", sa.String(length=40), nullable=True),
        sa.Column("secret_enc", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_device_sign_ins")),
    )
    with op.batch_alter_table("device_sign_ins", schema=None) as batch_op:
        batch_op.create_index(
            "ix_device_sign_ins_network_created", ["network", "created_at"], unique=False
        )
        batch_op.create_index("ix_device_sign_ins_user_code", ["user_code"], unique=False)

    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("client_uri", sa.String(length=2000), nullable=True),
        sa.Column("registration", sa.JSON(), nullable=False),
        sa.Column("secret_enc", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_clients")),
    )
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("client_id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("membership_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("resource", sa.String(length=2000), nullable=False),
        sa.Column("permissions", sitetools.core.db.JSONList(none_as_null=True), nullable=False),
        sa.Column("created_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_oauth_grants_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.id"],
            name=op.f("fk_oauth_grants_client_id_oauth_clients"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_grants")),
    )
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.create_index(
            "ix_oauth_grants_membership_client", ["membership_id", "client_id"], unique=False
        )

    op.create_table(
        "oauth_codes",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=False),
        sa.Column("code_challenge", sa.String(length=200), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("redirect_uri_explicit", sa.Boolean(), nullable=False),
        sa.Column("expires_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("used_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_codes_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_oauth_codes")),
    )
    op.create_table(
        "oauth_tokens",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("used_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sitetools.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            name=op.f("fk_oauth_tokens_grant_id_oauth_grants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_oauth_tokens")),
    )
    with op.batch_alter_table("oauth_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_tokens_grant_id"), ["grant_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("oauth_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_tokens_grant_id"))

    op.drop_table("oauth_tokens")
    op.drop_table("oauth_codes")
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_grants_membership_client")

    op.drop_table("oauth_grants")
    op.drop_table("oauth_clients")
    with op.batch_alter_table("device_sign_ins", schema=None) as batch_op:
        batch_op.drop_index("ix_device_sign_ins_user_code")
        batch_op.drop_index("ix_device_sign_ins_network_created")

    op.drop_table("device_sign_ins")
