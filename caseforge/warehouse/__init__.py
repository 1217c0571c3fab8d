"""The DuckDB warehouse, one module per job:

- statements: the statement files of sql/ on a connection (sql_text, run_sql, transaction, table_exists, ...)
- changes: the write journal, which curated tables each statement file changed (ops.table_changes)
- table_state: a curated table's state without reading its rows (the journal, its columns, DuckDB's storage facts)
- migrations: the numbered migrations, applied when a writer connects
- connection: opening the file (connect, open_warehouse), waiting while another process holds it
- mirror: the Parquet mirror beside it (export_curated_parquet, find_mirror)
- query: the sandboxed, bounded connection for ad-hoc SQL (open_for_query)
- errors: why the warehouse cannot be used as asked

Import what you use from its module.
"""

