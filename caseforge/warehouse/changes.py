"""The write journal (ops.table_changes, migration 170): every statement file run through `run_sql` that changes
rows of a journaled table (schema `curated`) records so in the same transaction (run_sql does it), so an input
fingerprint (caseforge.fingerprints) reads how often each table changed instead of hashing all of its rows. Here:
which tables a statement writes, how many rows it said it changed, and which connections are in a transaction.

Which statements write which table is read from the statement itself: DuckDB's parser says whether a statement
writes (its type), and the statement's head names the table it writes (`INSERT INTO curated.x`, `DELETE FROM`,
`UPDATE`, `MERGE INTO`, `COPY … FROM`, `CREATE|DROP|ALTER TABLE`, `TRUNCATE`). A writing statement that names a
journaled table but whose target cannot be read counts as a change of every journaled table it names. A
statement that reports changing 0 rows (an upsert that found nothing new) records nothing; one that reports no
count (DDL) always records. docs/scaling.md says why no write can miss the journal."""
from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

JOURNALED_SCHEMAS = ("curated",)
JOURNAL_TABLE = "ops.table_changes"

_NAME = r'"?([A-Za-z_][A-Za-z0-9_]*)"?\s*\.\s*"?([A-Za-z_][A-Za-z0-9_]*)"?'
_TARGET = re.compile(
    r"\b(?:INSERT\s+(?:OR\s+(?:REPLACE|IGNORE)\s+)?INTO|DELETE\s+FROM|UPDATE|MERGE\s+INTO|TRUNCATE(?:\s+TABLE)?"
    r"|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?TABLE(?:\s+IF\s+NOT\s+EXISTS)?"
    r"|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|ALTER\s+TABLE(?:\s+IF\s+EXISTS)?)\s+" + _NAME, re.IGNORECASE)
_COPY_FROM = re.compile(r"^\s*COPY\s+" + _NAME + r"\s*(?:\([^)]*\))?\s+FROM\b", re.IGNORECASE)
_COPY_OUT = re.compile(r"^\s*COPY\s+(?:\(|" + _NAME + r"\s*(?:\([^)]*\))?\s+TO\b)", re.IGNORECASE)
_MENTION = re.compile(r"\b(" + "|".join(JOURNALED_SCHEMAS) + r")\s*\.\s*\"?([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_LINE_COMMENT = re.compile(r"--[^\n]*")
_READS = {duckdb.StatementType.SELECT, duckdb.StatementType.PRAGMA, duckdb.StatementType.EXPLAIN,
          duckdb.StatementType.SET, duckdb.StatementType.VARIABLE_SET, duckdb.StatementType.TRANSACTION,
          duckdb.StatementType.CALL, duckdb.StatementType.VACUUM, duckdb.StatementType.ANALYZE,
          duckdb.StatementType.PREPARE, duckdb.StatementType.LOAD}
_ROW_COUNTING = {duckdb.StatementType.INSERT, duckdb.StatementType.UPDATE, duckdb.StatementType.DELETE,
                 duckdb.StatementType.MERGE_INTO}


def journaled(table: str) -> bool:
    """Whether writes of `schema.table` are journaled (else a fingerprint hashes its rows)."""
    return table.partition(".")[0].lower() in JOURNALED_SCHEMAS


def mentions_journaled(text: str) -> bool:
    """A cheap first look: does the text name a journaled table at all (most statements do not)."""
    return _MENTION.search(_LINE_COMMENT.sub("", text)) is not None


def written_tables(statement: duckdb.Statement) -> tuple[str, ...]:
    """The journaled tables a parsed statement writes (none for a read, or a write of another schema)."""
    if statement.type in _READS:
        return ()
    text = _LINE_COMMENT.sub("", statement.query)
    if statement.type == duckdb.StatementType.COPY:
        if _COPY_OUT.match(text):                  # COPY table TO file, COPY (query) TO file: reads
            return ()
        found = _COPY_FROM.match(text)
        targets = [found.groups()] if found else []
    else:
        targets = [match.groups() for match in _TARGET.finditer(text)][:1]
    if not targets:        # a write whose target this cannot read: every journaled table it names, to be safe
        targets = _MENTION.findall(text)
    return tuple(sorted({f"{schema.lower()}.{table.lower()}" for schema, table in targets
                         if schema.lower() in JOURNALED_SCHEMAS}))


@dataclass
class FetchedResult:
    """The last statement's answer, fetched (the journal's own insert comes after it on the connection)."""

    rows: list[tuple]
    description: list | None

    def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    def fetchall(self) -> list[tuple]:
        rows, self.rows = self.rows, []
        return rows


_IN_TRANSACTION: set[int] = set()       # id() of each connection inside caseforge.warehouse.statements.transaction


def entered_transaction(con) -> None:
    _IN_TRANSACTION.add(id(con))


def left_transaction(con) -> None:
    _IN_TRANSACTION.discard(id(con))


def in_transaction(con) -> bool:
    return id(con) in _IN_TRANSACTION


def changed_rows(statement: duckdb.Statement, rows: list[tuple]) -> int | None:
    """The rows a statement reported changing, or None when it reports no count (DDL: a change, to be safe)."""
    if statement.type not in _ROW_COUNTING and statement.type != duckdb.StatementType.COPY:
        return None
    if len(rows) == 1 and len(rows[0]) == 1 and isinstance(rows[0][0], int):
        return int(rows[0][0])
    return None

