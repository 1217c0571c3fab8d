"""The DuckDB warehouse, one module per job:

- statements: the statement files of sql/ on a connection (sql_text, run_sql, transaction, table_exists, ...)
- migrations: the numbered migrations, applied when a writer connects
- connection: opening the file (connect, open_warehouse), waiting while another process holds it
- mirror: the Parquet mirror beside it (export_curated_parquet, find_mirror)
- query: the sandboxed, bounded connection for ad-hoc SQL (open_for_query)
- errors: why the warehouse cannot be used as asked

Import what you use from its module.
"""


def __getattr__(name: str):
    # Kept for caseforge/llm only, which imports these three from here until it imports them from their modules
    # (issue 33's branch rewrites it); looked up when asked, so importing a module of this package imports no other.
    if name == "connect":
        from caseforge.warehouse.connection import connect
        return connect
    if name in ("sql_text", "transaction"):
        from caseforge.warehouse import statements
        return getattr(statements, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
