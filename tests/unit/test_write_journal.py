"""The write journal (caseforge.warehouse.changes, ops.table_changes): every statement file that changes rows of a
curated table records so in the same transaction; one that changes nothing records nothing; and no code of
caseforge writes a curated table any other way."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from caseforge.settings import SQL_DIR
from caseforge.warehouse import changes
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import replace_staging, run_sql, transaction

PROJECT = Path(__file__).resolve().parent.parent.parent
PRODUCT_CODE = ("caseforge", "tasks", "flows", "cli")


def journal(con) -> list[tuple]:
    return con.execute("SELECT table_name, statement, rows FROM ops.table_changes ORDER BY change_id").fetchall()


@pytest.fixture
def con(db_path):
    con = connect(db_path)
    yield con
    con.close()


def targets(text: str) -> list[tuple[str, ...]]:
    return [changes.written_tables(s) for s in duckdb.connect().extract_statements(text)]


def test_each_kind_of_write_names_its_table_and_a_read_names_none():
    assert targets("INSERT OR REPLACE INTO curated.a SELECT * FROM curated.b") == [("curated.a",)]
    assert targets("WITH x AS (SELECT 1) INSERT INTO curated.a SELECT * FROM x") == [("curated.a",)]
    assert targets("DELETE FROM curated.a WHERE id IN (SELECT id FROM curated.b)") == [("curated.a",)]
    assert targets("UPDATE curated.a AS c SET x = l.x FROM curated.b AS l WHERE l.id = c.id") == [("curated.a",)]
    assert targets("MERGE INTO curated.a USING staging.a s ON a.id = s.id WHEN MATCHED THEN UPDATE SET x = s.x") \
        == [("curated.a",)]
    assert targets("COPY curated.a FROM 'f.csv'") == [("curated.a",)]
    assert targets("COPY curated.a TO 'f.parquet' (FORMAT parquet)") == [()]          # a read of the table
    assert targets("COPY (SELECT * FROM curated.a) TO 'f.parquet'") == [()]
    assert targets("CREATE OR REPLACE TABLE curated.a AS SELECT 1") == [("curated.a",)]
    assert targets("DROP TABLE IF EXISTS curated.a") == [("curated.a",)]
    assert targets("ALTER TABLE curated.a ADD COLUMN y INTEGER") == [("curated.a",)]
    assert targets("INSERT INTO ops.runs SELECT * FROM curated.a") == [()]            # not journaled: ops
    assert targets("SELECT * FROM curated.a; -- DELETE FROM curated.a\nSELECT 1") == [(), ()]
    # a write whose target cannot be read counts as a write of every curated table it names
    assert targets("CREATE VIEW curated.v AS SELECT * FROM curated.a") == [("curated.a", "curated.v")]


def test_a_curate_that_changes_rows_is_journaled_and_one_that_changes_none_is_not(con):
    rows = pd.DataFrame({"guide_id": ["g1"], "para_no": ["1"], "heading_path": ["I"], "text": ["Some text."],
                         "guide_version_date": [None], "pages": [[1]], "ordinal": [0], "raw_sha256": ["a" * 64]})
    replace_staging(con, "guide_paragraphs", rows)
    run_sql(con, "guides/curate_guide_paragraphs.sql")
    assert journal(con) == [("curated.guide_paragraphs", "guides/curate_guide_paragraphs.sql", 1)]
    run_sql(con, "guides/curate_guide_paragraphs.sql")             # the same batch again: no row changes
    assert len(journal(con)) == 1
    replace_staging(con, "guide_paragraphs", rows.assign(text=["Other text."]))
    run_sql(con, "guides/curate_guide_paragraphs.sql")             # a deleted and an inserted row
    assert journal(con)[1:] == [("curated.guide_paragraphs", "guides/curate_guide_paragraphs.sql", 2)]


def test_a_file_is_one_transaction_with_its_journal(con):
    """A statement that fails leaves neither the file's earlier statements nor their journal rows (before the
    journal, a curate's DELETE committed alone when its INSERT failed)."""
    con.execute("INSERT INTO curated.echr_itemid_translations VALUES ('001-1', '001-2', 'X v. Y')")
    con.execute("CREATE TEMP TABLE translations_frame (fre_id VARCHAR, eng_id VARCHAR, eng_docname VARCHAR)")
    con.execute("INSERT INTO translations_frame VALUES ('001-3', NULL, 'A v. B')")   # eng_id is NOT NULL in curated
    with pytest.raises(duckdb.ConstraintException):
        run_sql(con, "guides/store_translations.sql")
    assert con.execute("SELECT fre_id FROM curated.echr_itemid_translations").fetchall() == [("001-1",)]
    assert journal(con) == []


def test_inside_a_callers_transaction_the_journal_rolls_back_with_the_write(con):
    replace_staging(con, "guide_paragraphs", pd.DataFrame({
        "guide_id": ["g1"], "para_no": ["1"], "heading_path": ["I"], "text": ["t"], "guide_version_date": [None],
        "pages": [[1]], "ordinal": [0], "raw_sha256": ["b" * 64]}))
    with pytest.raises(RuntimeError):
        with transaction(con):
            run_sql(con, "guides/curate_guide_paragraphs.sql")
            assert len(journal(con)) == 1
            raise RuntimeError("the batch's next step failed")
    assert journal(con) == [] and con.execute("SELECT count(*) FROM curated.guide_paragraphs").fetchone()[0] == 0


def test_the_last_statements_answer_comes_back(con):
    con.execute("INSERT INTO curated.guide_paragraphs VALUES ('g1', '1', 'I', 't', NULL, [1], 0, ?, now())",
                ["c" * 64])
    replace_staging(con, "guide_paragraphs", pd.DataFrame({
        "guide_id": ["g1"], "para_no": ["1"], "heading_path": ["I"], "text": ["t"], "guide_version_date": [None],
        "pages": [[1]], "ordinal": [0], "raw_sha256": ["c" * 64]}))
    deleted = run_sql(con, "ops/delete_remade_rows.sql", identifiers={"table": "guide_paragraphs", "unit": "guide_id"})
    assert deleted.fetchone()[0] == 1
    assert journal(con) == [("curated.guide_paragraphs", "ops/delete_remade_rows.sql", 1)]


# ---- no other way into curated --------------------------------------------------------------------------------

def _files_writing_curated() -> set[str]:
    """sql/ files (migrations aside) with a statement that writes a curated table, `{placeholder}`s read as
    curated tables (a generic statement may be handed one)."""
    parser = duckdb.connect()
    found = set()
    for path in sorted(SQL_DIR.rglob("*.sql")):
        relative = path.relative_to(SQL_DIR).as_posix()
        if relative.startswith("migrations/"):
            continue
        text = re.sub(r"\{schema\}\.\{table\}|\{table\}|\{[a-z_]+\}", "curated.placeholder", path.read_text())
        text = text.replace("curated.curated.placeholder", "curated.placeholder")
        try:
            statements = parser.extract_statements(text)
        except duckdb.ParserException:
            statements = [s for part in text.split(";") if part.strip()
                          for s in _parse_or_none(parser, part)]
        if any(changes.written_tables(s) for s in statements):
            found.add(relative)
    return found


def _parse_or_none(parser, text: str) -> list:
    try:
        return parser.extract_statements(text)
    except duckdb.ParserException:
        return []


def test_every_statement_file_that_writes_curated_is_run_only_through_run_sql():
    """A file that writes curated handed to execute()/executemany() as text (sql_text) would write without the
    journal: none is. Migrations write without it too, and every fingerprint holds the migrations applied."""
    writing = _files_writing_curated()
    assert {"hudoc/curate_echr_paragraphs.sql", "cn/curate_cn_judgments.sql", "oyez/curate_scotus_cases.sql",
            "guides/store_translations.sql", "casefacts/replace_stage_table.sql"} <= writing
    misuse = []
    for folder in PRODUCT_CODE:
        for path in sorted((PROJECT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "sql_text":
                    name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
                    if name in writing and path.relative_to(PROJECT).as_posix() != "caseforge/warehouse/statements.py":
                        misuse.append(f"{path.relative_to(PROJECT)}:{node.lineno} sql_text({name!r})")
    assert misuse == []


INLINE_WRITE = re.compile(r"\b(INSERT|DELETE|UPDATE|MERGE|COPY|CREATE|DROP|ALTER|TRUNCATE)\b[^\"']*\bcurated\s*\.",
                          re.IGNORECASE)


def test_no_product_code_writes_curated_with_inline_sql():
    """A string in caseforge's code that writes a curated table (docstrings aside) would be a write the journal
    cannot see: there is none (SQL lives in sql/, docs/sql.md)."""
    found = []
    for folder in PRODUCT_CODE:
        for path in sorted((PROJECT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                          if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                          and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            found += [f"{path.relative_to(PROJECT)}:{node.lineno}" for node in ast.walk(tree)
                      if isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in docstrings
                      and INLINE_WRITE.search(ast.unparse(node))]
    assert found == []
