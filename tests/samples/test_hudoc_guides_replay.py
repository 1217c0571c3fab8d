"""Replay the real HUDOC samples and a guide through archive → parse → gate → curated, twice."""
from __future__ import annotations

import pytest

from caseforge.archive import RawArchive
from caseforge.stage_report import StageReport
from caseforge.tasks.guides import ingest as guides
from caseforge.tasks.hudoc import ingest as hudoc
from caseforge.tasks.hudoc.metadata import RecordFilter
from caseforge.warehouse.connection import connect

pytestmark = pytest.mark.samples

GUIDE_TEXT = (
    "Guide on Article 3 of the Convention\nEuropean Court of Human Rights 5/40 Last update: 31.08.2024 "
    "I. Detention\n1. A metal cage in a courtroom is degrading in itself (Malyy v. Ukraine, 2019, §§ 91- 93; "
    "see also Uysal and Osal v. Turkey, 2007, § 33).\n2. Ill-treatment must be proven (ibid., § 68; "
    "Unknown v. Nowhere, 2001, § 5).\n"
)


def _replay(con, samples_dir, guide_dir):
    report = StageReport("replay")
    archive = RawArchive(con)
    files = hudoc.replay_files(samples_dir / "hudoc")
    hudoc.replay_metadata(con, archive, 1, files.metadata, RecordFilter(), report)
    # Uysal and Osal and Medžlis are only known as DOCX bodies, and a body lands only for a judgment the
    # warehouse knows: give it their metadata records by hand (read from the judgments' first pages)
    for itemid, docname, day in (("001-83979", "CASE OF UYSAL AND OSAL v. TURKEY", "2007-12-13"),
                                 ("001-175180", "CASE OF MEDŽLIS ISLAMSKE ZAJEDNICE BRČKO AND OTHERS v. BOSNIA AND "
                                                "HERZEGOVINA", "2017-06-27")):
        con.execute("INSERT INTO curated.echr_judgments (itemid, docname, doctype, judgment_date, raw_sha256, updated_at) "
                    "SELECT $id, $name, 'HEJUD', CAST($day AS DATE), $sha, now() WHERE NOT EXISTS "
                    "(SELECT 1 FROM curated.echr_judgments WHERE itemid = $id)",
                    {"id": itemid, "name": docname, "day": day, "sha": "0" * 64})
    hudoc.replay_documents(con, archive, 1, files.documents, report)
    sources, french = guides.replay_sources(archive, guide_dir, report)
    guides.store_translations(con, archive, french, report)
    resolver = guides.make_resolver(con)
    for source in sources:
        guides.load_guide(con, 1, *guides.parse_source(con, 1, source, resolver, report), report)
    return report


def test_replay_lands_every_table_and_a_second_run_changes_nothing(samples_dir, tmp_path):
    guide_dir = tmp_path / "guides"
    guide_dir.mkdir()
    (guide_dir / "guide_art_3_eng.txt").write_text(GUIDE_TEXT, encoding="utf-8")
    (guide_dir / "french_to_english_citations.csv").write_bytes(
        (samples_dir / "echr_guides" / "french_to_english_citations.csv").read_bytes())
    con = connect(tmp_path / "w.duckdb")
    first = _replay(con, samples_dir, guide_dir)
    assert first.ok, first.failures
    counts = lambda: con.execute(
        "SELECT (SELECT count(*) FROM curated.echr_judgments), (SELECT count(*) FROM curated.echr_paragraphs), "
        "(SELECT count(*) FROM curated.guide_paragraphs), (SELECT count(*) FROM curated.guide_citations)").fetchone()
    assert counts() == (6, 151 + 45 + 150, 2, 4)
    second = _replay(con, samples_dir, guide_dir)
    assert second.ok and counts() == (6, 346, 2, 4)
    assert first.counts["filtered_out"] == 6 and first.counts["extra_bodies_ignored"] == 1

    rows = con.execute("SELECT para_no, ordinal, case_name, itemid, resolution_method, is_ibid, unresolved_reason "
                       "FROM curated.guide_citations ORDER BY para_no, ordinal").fetchall()
    assert rows[0][2:5] == ("Malyy v. Ukraine", "001-192223", "name_year")
    assert rows[1][2:5] == ("Uysal and Osal v. Turkey", "001-83979", "name_year")
    assert rows[2][2:6] == ("Uysal and Osal v. Turkey", "001-83979", "name_year", True)
    assert rows[3][3] is None and rows[3][6].startswith("no linked title")
    pins = con.execute("SELECT itemid, pinpoint, echr_paragraph_ordinal IS NOT NULL FROM curated.guide_citation_pinpoints "
                       "ORDER BY para_no, ordinal, pinpoint").fetchall()
    assert pins[:3] == [("001-192223", 91, True), ("001-192223", 92, True), ("001-192223", 93, True)]
    text = con.execute("SELECT echr_paragraph_text FROM curated.guide_citation_pinpoints WHERE pinpoint = 91").fetchone()[0]
    assert text.startswith("The Court has held that holding a person in a metal cage during a trial")
    rate = guides.resolution_rates(con)
    assert [(r["guide_id"], r["citations"], r["resolved"], r["pinpoints_with_paragraph"]) for r in rate] == \
           [("guide_art_3_eng", 4, 3, 4)]
    order = con.execute("SELECT count(*) FROM (" + open(
        hudoc.run_sql.__globals__["SQL_DIR"] / "hudoc" / "paragraph_order_violations.sql").read().rstrip().rstrip(";") + ")").fetchone()
    assert order == (0,)
    con.close()
