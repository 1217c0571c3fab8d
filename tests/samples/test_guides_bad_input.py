"""A guide whose numbering the parser loses fails loudly, one bad guide never loses another, citations keep
their respondent whole and never a year the extraction cut; all on the real Article 2 guide pages."""
from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest

from caseforge.settings import Settings
from caseforge.tasks.guides import ingest
from caseforge.tasks.guides.citations import citation_rows
from caseforge.tasks.guides.pages import GuideSourceError, read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from warehouse_rows import rows as _table

pytestmark = pytest.mark.samples

GUIDE_FILE = "guide_art_2_pages_first.csv"


def _pages_csv(samples_dir: Path, first: int = 0, last: int | None = None) -> bytes:
    """The sample's page CSV keeping only pages[first:last] (a guide given from a later page on)."""
    csv.field_size_limit(sys.maxsize)
    with (samples_dir / "echr_guides" / GUIDE_FILE).open(newline="", encoding="utf-8-sig") as source:
        rows = list(csv.reader(source))
    out = io.StringIO()
    csv.writer(out).writerows([rows[0]] + rows[1:][first:last])
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("first", [1, 2, 3])
def test_a_guide_whose_numbering_is_lost_fails_with_the_reason(samples_dir, first):
    pages = read_pages(_pages_csv(samples_dir, first), "g.csv")
    parsed = parse_guide("guide_art_2", pages, "0" * 64)
    assert parsed.problems, (len(parsed.rows), parsed.dropped_lines)
    assert any("outside numbered paragraphs" in p for p in parsed.problems), parsed.problems


def test_the_whole_sample_guide_passes(samples_dir):
    parsed = parse_guide("guide_art_2", read_pages(_pages_csv(samples_dir), "g.csv"), "0" * 64)
    assert parsed.problems == [] and len(parsed.rows) == 38


def test_a_guide_losing_its_numbering_does_not_land_and_the_other_guide_does(samples_dir, tmp_path, db_path):
    folder = tmp_path / "guides"
    folder.mkdir()
    (folder / "guide_art_2_pages.csv").symlink_to(samples_dir / "echr_guides" / GUIDE_FILE)
    (folder / "guide_art_2_from_page_7_pages.csv").write_bytes(_pages_csv(samples_dir, 1))
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert _table(db_path, "SELECT guide_id, count(*) FROM curated.guide_paragraphs GROUP BY 1") == \
        [("guide_art_2", 38)]
    lost = [f for f in report.failures if f.startswith("guide guide_art_2_from_page_7: ")]
    assert len(lost) == 1 and "outside numbered paragraphs" in lost[0]
    assert not report.ok


def test_an_unreadable_guide_is_quarantined_and_the_other_guide_lands(samples_dir, tmp_path, db_path):
    folder = tmp_path / "guides"
    folder.mkdir()
    (folder / "guide_art_2_pages.csv").symlink_to(samples_dir / "echr_guides" / GUIDE_FILE)
    (folder / "guide_art_9_eng.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    (folder / "guide_art_8_pages.csv").write_bytes(b"page_number,citations,page_text\nx,{},text\n")
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert _table(db_path, "SELECT count(*) FROM curated.guide_paragraphs") == [(38,)]
    guide_level = sorted(f.split(":")[0] for f in report.failures if " § " not in f.split(":")[0])
    assert guide_level == ["guide guide_art_8", "guide guide_art_9_eng"]


def test_a_guide_over_the_size_limit_is_quarantined_unread(samples_dir, tmp_path, db_path, monkeypatch):
    monkeypatch.setenv("CASEFORGE_MAX_MB_GUIDES_GUIDE", "0.01")
    folder = tmp_path / "guides"
    folder.mkdir()
    (folder / "guide_art_2_pages.csv").symlink_to(samples_dir / "echr_guides" / GUIDE_FILE)
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    [line] = report.failures
    assert line.startswith("guide guide_art_2: ") and "over the guides guide limit" in line
    assert _table(db_path, "SELECT count(*) FROM ops.raw_payloads") == [(0,)]


def test_a_page_csv_row_that_is_not_a_page_names_its_line():
    body = b"page_number,citations,page_text\n5,{},text\n6,[1],text\n"
    with pytest.raises(GuideSourceError, match="line 3"):
        read_pages(body, "g.csv")


# ---- citation defects named in tests/samples/test_guides_golden.py ----

@pytest.fixture(scope="module")
def citations(samples_dir):
    pages = read_pages(_pages_csv(samples_dir), GUIDE_FILE)
    return citation_rows("guide_art_2", parse_guide("guide_art_2", pages, "0" * 64).rows)


def test_respondents_split_by_the_extraction_are_rejoined(citations):
    names = {(r["para_no"], r["case_name"]) for r in citations}
    assert ("12", "Dumpe v. Latvia") in names and ("37", "S.F. v. Switzerland") in names
    assert not any(" atvia" in (r["respondent"] or "") or "Switzerl and" in (r["respondent"] or "") for r in citations)


def test_a_year_cut_by_the_extraction_is_not_a_year_and_is_flagged(citations):
    [dumpe] = [r for r in citations if r["case_name"] == "Dumpe v. Latvia"]
    assert dumpe["year"] is None
    assert dumpe["problem"] == "year '201' is not a four-digit year (cut by the PDF extraction?)"
    assert all(r["year"] is None or 1950 <= r["year"] <= 2100 for r in citations)


def test_a_citation_with_a_cut_year_lands_without_its_year_and_is_counted(samples_dir, tmp_path, db_path):
    folder = tmp_path / "guides"
    folder.mkdir()
    (folder / "guide_art_2_pages.csv").symlink_to(samples_dir / "echr_guides" / GUIDE_FILE)
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert report.failures == []
    assert _table(db_path, "SELECT count(*) FROM curated.guide_citations") == [(135,)]
    assert _table(db_path, "SELECT year FROM curated.guide_citations WHERE case_name = 'Dumpe v. Latvia'") == [(None,)]
    assert report.counts["citations_without_year"] == 1
