"""The tables every ingest appends to (the archive, cases, judgments, paragraphs) carry no index: DuckDB 1.5
rewrites the whole last row group of an indexed table at every checkpoint after an append, so a small increment
into a big warehouse cost time and memory growing with what was stored (bench/scale.py shows the ratios).
Their keys stay unique by the statements that write them; migration 130 keeps every row."""
from __future__ import annotations

from caseforge.archive import RawArchive
from caseforge.warehouse import connect
from migration_support import connect_before

GROWING = ("ops.raw_payloads", "curated.scotus_cases", "curated.echr_judgments", "curated.echr_paragraphs",
           "curated.cn_judgments")


def _indexed(con) -> set[str]:
    keys = {f"{s}.{t}" for s, t in con.execute(
        "SELECT schema_name, table_name FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
    ).fetchall()}
    indexes = {f"{s}.{t}" for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_indexes()").fetchall()}
    return (keys | indexes) & set(GROWING)


def test_the_tables_every_ingest_appends_to_carry_no_index(db_path):
    con = connect(db_path)
    assert _indexed(con) == set()
    archive = RawArchive(con)
    assert archive.store("oyez", "2015/14-1", b"{}")[1] is True
    assert archive.store("oyez", "2015/14-1", b"{}")[1] is False        # the same content for the key: kept once
    assert archive.store("oyez", "2015/14-1", b"{ }")[1] is True
    assert con.execute("SELECT count(*) FROM ops.raw_payloads").fetchone()[0] == 2
    con.close()


def test_migration_130_keeps_every_row(db_path, tmp_path, monkeypatch):
    con = connect_before(130, db_path, tmp_path, monkeypatch)
    assert _indexed(con) == set(GROWING)
    con.execute("INSERT INTO ops.raw_payloads VALUES ('oyez', 'k', 's', NULL, now(), 200, NULL, 'body'::BLOB)")
    con.execute("INSERT INTO curated.scotus_cases (case_id, name, raw_sha256, disposition, updated_at) "
                "VALUES (1, 'A v. B', 's', 'affirmed', now())")
    con.execute("INSERT INTO curated.echr_judgments (itemid, judgment_date, appnos, raw_sha256, updated_at) "
                "VALUES ('001-1', DATE '2020-01-02', ['1/20'], 's', now())")
    con.execute("INSERT INTO curated.echr_paragraphs (itemid, part, text, ordinal, footnotes, raw_sha256, updated_at) "
                "VALUES ('001-1', 'judgment', 'text', 3, ['n'], 's', now())")
    con.execute("INSERT INTO curated.cn_judgments (doc_id, source_format, full_text, complete, gold_sections, "
                "content_sha256, raw_sha256, updated_at) VALUES ('d', 'jsonl', '全文', true, '{\"a\": 1}', 'c', 's', now())")
    before = {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in GROWING}
    con.close()

    con = connect(db_path)
    assert _indexed(con) == set()
    assert {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in GROWING} == before
    con.execute("SELECT count(*) FROM curated.guide_citation_pinpoints").fetchone()   # the view over paragraphs reads
    con.close()
