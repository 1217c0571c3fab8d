"""Golden tests on the real Article 2 guide pages (CSV with the page text and the itemids linked on each
page); every expected value below was read by eye from the page text.

tests/golden/guides/ holds the whole parsed output (EXAMPLES below; regenerate with
`.venv/bin/python tests/golden/regenerate.py guides`): the paragraphs as parse_guide gives them, and the
citations with their resolution exactly as the ingest stage computes them (guide id from the file name,
links of the citing paragraph's pages, the French → English table; the warehouse's judgment names are
empty here, as in a first run, so only link resolution can succeed).
"""
from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from golden.golden import assert_golden

from caseforge.tasks.guides.citations import citation_rows
from caseforge.tasks.guides.ingest import guide_id_from_name, page_links
from caseforge.tasks.guides.pages import read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from caseforge.tasks.guides.resolve import Resolver, load_french_map

pytestmark = pytest.mark.samples
SOURCE = "guides"
GUIDE_FILE = "guide_art_2_pages_first.csv"


def stage_output(samples_dir: Path) -> tuple:
    """(GuideParse, resolved citation rows) as tasks/guides/ingest.parse_source computes them."""
    folder = samples_dir / "echr_guides"
    guide_id = guide_id_from_name(GUIDE_FILE)
    pages = read_pages((folder / GUIDE_FILE).read_bytes(), GUIDE_FILE)
    parsed = parse_guide(guide_id, pages, "0" * 64)
    mapping, _ = load_french_map((folder / "french_to_english_citations.csv").read_bytes())
    resolver = Resolver(mapping)
    rows = citation_rows(guide_id, parsed.rows)
    pages_of = {p["para_no"]: p["pages"] for p in parsed.rows}
    for row in rows:
        row.update(resolver.resolve(row, page_links(pages, pages_of[row["para_no"]])))
    return parsed, rows


def golden_paragraphs(samples_dir: Path) -> dict:
    parsed, _ = stage_output(samples_dir)
    return {"version_date": parsed.version_date, "dropped_lines": parsed.dropped_lines, "problems": parsed.problems,
            "rows": [{k: v for k, v in row.items() if k != "raw_sha256"} for row in parsed.rows]}


def golden_citations(samples_dir: Path) -> list[dict]:
    return stage_output(samples_dir)[1]


# Defects found reviewing guide_art_2.citations against the page text, fixed since (tests in
# tests/samples/test_guides_bad_input.py; the regenerated file was reviewed again):
# - a respondent split by the PDF extraction was not rejoined: § 12 "Dumpe v. L atvia" and § 37
#   "S.F. v. Switzerl and" are now "Latvia" and "Switzerland" (a respondent whose letters spell a State);
# - § 12 "Dumpe v. L atvia (dec.), 201 )": the extraction cut the year; year is now null and the row carries a
#   "problem" (the ingest stage lands that citation without a year, counts and logs it); raw_citation keeps the
#   text as read.
# Known defect still baked in: § 24 "Olewnik -Cieplińska and Olewnik v. Poland": the extraction's space before
# the hyphen stays in case_name and applicant.
# Paragraph texts keep the extraction's split words ("Cou rt", "The Court ’s") by design; pages are the
# CSV's page_number (the 0-based PDF page: printed page "6/57" is page 5).
EXAMPLES = {
    "guide_art_2.paragraphs": golden_paragraphs,
    "guide_art_2.citations": golden_citations,
}


@pytest.mark.parametrize("example", EXAMPLES)
def test_matches_reviewed_golden_output(samples_dir, example):
    assert_golden(SOURCE, example, EXAMPLES[example], samples_dir)


@pytest.fixture(scope="module")
def guide(samples_dir):
    parsed, rows = stage_output(samples_dir)
    return parsed, {(r["para_no"], r["ordinal"]): r for r in rows}, rows


def test_paragraphs_run_1_to_38_without_page_headers(guide):
    parsed, _, _ = guide
    assert [r["para_no"] for r in parsed.rows] == [str(n) for n in range(1, 39)]
    assert parsed.version_date == date(2023, 8, 31)
    texts = " ".join(r["text"] for r in parsed.rows)
    assert "Last update" not in texts and "Guide on Article 2" not in texts and "HUDOC keywords" not in texts
    assert "Everyone ’s right to life shall be protecte d by law" not in texts      # the boxed Article text


def test_paragraphs_crossing_a_page_are_joined(guide):
    paras = {r["para_no"]: r for r in guide[0].rows}
    assert paras["4"]["pages"] == [5, 6]
    assert "use of force by State agents which does not result in death may disclose a violation of Article 2" \
        in paras["4"]["text"]
    assert paras["12"]["pages"] == [7, 8]
    assert paras["12"]["text"].endswith("or a river ( Alhowais v. Hungary , 2023).")
    assert paras["21"]["pages"] == [8, 9]


def test_numbered_headings_are_not_paragraphs(guide):
    paras = {r["para_no"]: r for r in guide[0].rows}
    assert paras["1"]["heading_path"] == "I. General considerations > A. Interpretation of Article 2"
    assert paras["1"]["text"].startswith("The Court ’s approach to the interpretation of Article 2")
    assert paras["17"]["heading_path"] == ("II. Protection of life > C. Protection of life in context > "
                                           "1. Protection of persons from lethal use of force by non -State actors")
    assert paras["29"]["heading_path"].endswith("2. Protection of persons from self -harm")


def test_a_dozen_citations_read_by_eye(guide):
    _, by_key, _ = guide
    mccann = by_key[("1", 1)]
    assert (mccann["case_name"], mccann["year"], mccann["pinpoints"], mccann["itemid"]) == \
           ("McCann and Others v. the United Kingdom", 1995, [146], "001-57943")
    giuliani = by_key[("2", 1)]
    assert giuliani["grand_chamber"] and giuliani["pinpoints"] == [174] and giuliani["itemid"] == "001-104098"
    boso = by_key[("3", 1)]
    assert boso["is_decision"] and boso["whole_case"] and boso["pinpoints"] == [] and boso["itemid"] == "001-23338"
    soare = by_key[("4", 2)]            # linked to the French judgment, resolved to the English one
    assert (soare["case_name"], soare["pinpoints"], soare["resolution_method"], soare["itemid"]) == \
           ("Soare and Others v. Romania", [108, 109], "link_fr_to_en", "001-103722")
    assert by_key[("4", 3)]["pinpoints"] == list(range(55, 62))             # "§§ 55- 61"
    brincat = by_key[("5", 6)]
    assert (brincat["case_name"], brincat["signal"], brincat["pinpoints"]) == ("Brincat and Others v. Malta", "a contrario", [84])
    demirtas = by_key[("6", 3)]
    assert (demirtas["case_name"], demirtas["signal"], demirtas["pinpoints"]) == \
           ("Selahattin Demirtaş v. Turkey", "by contrast", list(range(30, 37)))
    jeanty = by_key[("8", 2)]            # "( § 62)" after "In Jeanty v. Belgium, 2020, where ..."
    assert jeanty["repeats_previous"] and jeanty["case_name"] == "Jeanty v. Belgium" and jeanty["pinpoints"] == [62]
    assert by_key[("15", 1)]["pinpoints"] == [84]                            # "§ 84 and the cases cited therein"
    tomasic = by_key[("17", 2)]           # "Branko Tomaši ć and Others" split by the PDF extraction
    assert (tomasic["case_name"], tomasic["itemid"]) == ("Branko Tomašić and Others v. Croatia", "001-90625")
    derenik = by_key[("23", 2)]
    assert derenik["signal"] == "see also" and derenik["pinpoints"] == [59, 60]
    assert by_key[("23", 4)]["pinpoints"] == [131, 132]                      # "§ 131-132"
    assert by_key[("24", 5)]["case_name"] == "A and B v. Georgia"
    finogenov = by_key[("25", 6)]
    assert finogenov["signal"] == "by contrast" and finogenov["is_decision"] and finogenov["pinpoints"] == [173]
    assert by_key[("28", 1)]["pinpoints"] == list(range(91, 111))
    assert by_key[("36", 1)]["case_name"] == "Eremiášová and Pechová v. the Czech Republic"


def test_several_cases_in_one_parenthesis_and_no_article_citations(guide):
    _, by_key, rows = guide
    para_12 = [r["case_name"] for r in rows if r["para_no"] == "12"]
    assert len(para_12) == 26 and para_12[14] == "Furdík v. Slovakia"            # "Furdí k" rejoined
    assert [r["case_name"] for r in rows if r["para_no"] == "10"] == [
        "Centre for Legal Resources on behalf of Valentin Câmpeanu v. Romania"]      # "Article 2 § 1 enjoins"
    assert [r["repeats_previous"] for r in rows if r["para_no"] == "27"] == [False, True, True]
    assert not any(r["case_name"].startswith(("Article", "Rule")) for r in rows)
    assert all(r["case_name"] and (r["pinpoints"] or r["whole_case"]) for r in rows)


def test_resolution_rate_on_the_sample(guide):
    rows = guide[2]
    resolved = [r for r in rows if r["itemid"]]
    assert len(rows) == 135 and len(resolved) == 135
    assert sum(r["resolution_method"] == "link" for r in rows) == 108
