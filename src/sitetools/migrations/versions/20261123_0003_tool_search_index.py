"""SQLite: an FTS5 index over the tools' search words, kept in step by triggers.

The catalog uses it only to find candidate rows (word-prefix matches); ranking stays the same
SQL on every backend. PostgreSQL needs nothing here.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A later migration that rebuilds `tools` in batch mode on SQLite drops these triggers and may
# renumber rows: it must run these statements again (the last one rebuilds the index).
STATEMENTS = [
    "CREATE VIRTUAL TABLE tools_fts USING fts5("
    "search_name, search_text, content='tools', content_rowid='rowid')",
    "CREATE TRIGGER tools_fts_insert AFTER INSERT ON tools BEGIN "
    "INSERT INTO tools_fts(rowid, search_name, search_text) "
    "VALUES (new.rowid, new.search_name, new.search_text); END",
    "CREATE TRIGGER tools_fts_delete AFTER DELETE ON tools BEGIN "
    "INSERT INTO tools_fts(tools_fts, rowid, search_name, search_text) "
    "VALUES ('delete', old.rowid, old.search_name, old.search_text); END",
    "CREATE TRIGGER tools_fts_update AFTER UPDATE OF search_name, search_text ON tools BEGIN "
    "INSERT INTO tools_fts(tools_fts, rowid, search_name, search_text) "
    "VALUES ('delete', old.rowid, old.search_name, old.search_text); "
    "INSERT INTO tools_fts(rowid, search_name, search_text) "
    "VALUES (new.rowid, new.search_name, new.search_text); END",
    "INSERT INTO tools_fts(tools_fts) VALUES ('rebuild')",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in ("tools_fts_insert", "tools_fts_delete", "tools_fts_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS tools_fts")
