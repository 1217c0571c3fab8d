"""Docs name only tables that exist: every schema-qualified table, view or sequence named in README.md and docs/*.md
is in a warehouse after all migrations (issue 28: docs/sql.md described curated.casefacts_windows, which migration 111
dropped)."""
import re

from caseforge.settings import PROJECT_ROOT
from caseforge.warehouse.connection import connect

# schema.name, not a prefix followed by a wildcard (build.casefacts_*), not a file (ops/quality_results.parquet)
NAMED = re.compile(r"(?<![\w/.])(ops|staging|curated|build|eval)\.([a-z_][a-z0-9_]*)(?![\w*(])")


def named_tables() -> dict[str, list[str]]:
    """schema.name -> the documents naming it."""
    found: dict[str, list[str]] = {}
    for path in [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]:
        for schema, name in NAMED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(f"{schema}.{name}", []).append(path.relative_to(PROJECT_ROOT).as_posix())
    return found


def test_every_table_the_docs_name_exists_after_the_migrations(db_path):
    con = connect(db_path)
    try:
        existing = {f"{schema}.{name}" for schema, name in con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "UNION ALL SELECT schema_name, sequence_name FROM duckdb_sequences()").fetchall()}
    finally:
        con.close()
    named = named_tables()
    assert len(named) > 20                     # the pattern finds what the docs name
    missing = {name: sorted(set(docs)) for name, docs in named.items() if name not in existing}
    assert missing == {}
