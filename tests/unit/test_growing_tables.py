"""The tables every ingest appends to (the archive, cases, judgments, paragraphs) carry no index: DuckDB 1.5
rewrites the whole last row group of an indexed table at every checkpoint after an append, so a small increment
into a big warehouse cost time and memory growing with what was stored (bench/scale.py shows the ratios).
Their keys stay unique by the statements that write them; migration 130 keeps every row."""
from __future__ import annotations

from caseforge.archive import RawArchive
from caseforge.warehouse.connection import connect
from migration_support import connect_before

GROWING = ("ops.raw_payloads", "curated.scotus_cases", "curated.echr_judgments", "curated.echr_paragraphs",
           "curated.cn_judgments")


def _indexed(con, tables=GROWING) -> set[str]:
    keys = {f"{s}.{t}" for s, t in con.execute(
        "SELECT schema_name, table_name FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
    ).fetchall()}
    indexes = {f"{s}.{t}" for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_indexes()").fetchall()}
    return (keys | indexes) & set(tables)


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


def test_payload_bodies_are_kept_beside_the_warehouse_not_in_it(db_path):
    """A body in the DuckDB file made every checkpoint after an append rewrite the archive's last row group: one
    2 MB dump into an archive of 48 × 20 MB dumps cost 2.8 s and 2.9 GB at checkpoint (12 dumps: 0.7 s, 0.8 GB).
    Bodies are files named by their hash in `<db>-archive/`; ops.raw_payloads keeps what describes them."""
    from caseforge.settings import load_settings

    con = connect(db_path)
    archive = RawArchive(con)
    payload, _ = archive.store("oyez", "2015/14-1", b'{"name": "A v. B"}')
    (second, _), (third, _) = archive.store_many("hudoc", [("html/001-1", b"<html>1</html>", None, "text/html"),
                                                           ("html/001-2", b'{"name": "A v. B"}', None, None)])
    assert con.execute("SELECT count(*) FROM ops.raw_payloads WHERE body IS NOT NULL").fetchone()[0] == 0
    folder = load_settings(db_path).archive_dir
    assert (folder / payload.sha256[:2] / payload.sha256).read_bytes() == b'{"name": "A v. B"}'
    assert archive.latest("oyez", "2015/14-1").body == b'{"name": "A v. B"}'
    assert archive.by_sha(second.sha256).body == b"<html>1</html>" and third.sha256 == payload.sha256
    # a body archived in the table before (an older warehouse) still reads
    con.execute("INSERT INTO ops.raw_payloads VALUES ('oyez', 'old', 'abc', NULL, now(), 200, NULL, 'kept'::BLOB)")
    assert archive.latest("oyez", "old").body == b"kept"
    con.close()


def test_the_ledger_of_parsed_payloads_carries_no_index_and_keeps_one_row_a_key(db_path):
    """ops.loaded_payloads gains a row for every payload a night parses and is read by every source: with its
    primary key, 200 rows more in a ledger of 28,404 (the real sizes) cost 1.25 CPU-s at the checkpoint, every
    time a stage closed, against nothing in an empty warehouse. A payload recorded again replaces its key's row."""
    from caseforge.archive import ParsedPayloads

    con = connect(db_path)
    assert _indexed(con, ("ops.loaded_payloads",)) == set()
    ledger = ParsedPayloads(con, "oyez", "oyez-test", "scotus_cases")
    first, second = (RawArchive(con).store("oyez", "2015/14-1", body)[0] for body in (b"{}", b"{ }"))
    ledger.settle(1, {first: 1}, [])
    ledger.settle(2, {second: 1}, [])
    assert con.execute("SELECT key, sha256, run_id FROM ops.loaded_payloads").fetchall() == [
        ("2015/14-1", second.sha256, 2)]
    con.close()


def test_migration_181_keeps_every_ledger_row(db_path, tmp_path, monkeypatch):
    con = connect_before(181, db_path, tmp_path, monkeypatch)
    assert _indexed(con, ("ops.loaded_payloads",)) == {"ops.loaded_payloads"}
    con.execute("INSERT INTO ops.loaded_payloads VALUES ('oyez', 'k', 's', 'p', 3, 3, 7, now(), 1, 7, 'c'), "
                "('hudoc', 'html/001-1', 't', 'q', 9, 9, NULL, now(), 0, NULL, NULL)")
    before = con.execute("SELECT * FROM ops.loaded_payloads ORDER BY source").fetchall()
    con.close()

    con = connect(db_path)
    assert _indexed(con, ("ops.loaded_payloads",)) == set()
    assert con.execute("SELECT * FROM ops.loaded_payloads ORDER BY source").fetchall() == before
    con.close()
