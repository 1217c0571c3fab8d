"""A warehouse as it was before a migration, for tests that prove the migration keeps every row."""
from __future__ import annotations

import shutil

from caseforge.warehouse import migrations
from caseforge.warehouse.connection import connect
from caseforge.warehouse.migrations import migration_files


def connect_before(migration: int, db_path, tmp_path, monkeypatch):
    """A writable connection to `db_path` migrated up to, not including, `migration`."""
    earlier = tmp_path / "migrations_before"
    earlier.mkdir()
    for number, path in migration_files():
        if number < migration:
            shutil.copy(path, earlier / path.name)
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS_DIR", earlier)
        con = connect(db_path)
    assert max(n for (n,) in con.execute("SELECT number FROM ops.migrations").fetchall()) < migration
    return con
