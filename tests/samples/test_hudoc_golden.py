"""Golden tests on the real HUDOC samples; expected values read by eye from the documents.

tests/golden/hudoc/ holds the whole parsed output of every HUDOC sample (EXAMPLES below; regenerate with
`.venv/bin/python tests/golden/regenerate.py hudoc`): each judgment body (HTML, DOCX, the older DOCX
template with and without smart tags) as paragraph rows plus the numbering problems and the number of
blocks skipped (front matter, signatures), and each metadata payload as judgment rows with the default
filter's decision. The explicit asserts below repeat what a reviewer checked.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from golden.golden import assert_golden

from caseforge.tasks.hudoc import metadata as meta
from caseforge.tasks.hudoc.ingest import ITEMID_IN_NAME
from caseforge.tasks.hudoc.paragraphs import OPERATIVE
from caseforge.tasks.hudoc.readers import parse_document

pytestmark = pytest.mark.samples
SOURCE = "hudoc"


def _parse(samples_dir, relative, itemid):
    body = (samples_dir / "hudoc" / relative).read_bytes()
    return parse_document(itemid, body, "0" * 64)


def parsed_body(samples_dir: Path, relative: str) -> dict:
    """What the ingest stage gets from parse_document for one body (raw_sha256, an input, left out)."""
    itemid = ITEMID_IN_NAME.match(Path(relative).name)[1]         # as the stage names a replayed body
    parsed = _parse(samples_dir, relative, itemid)
    rows = [{k: v for k, v in row.items() if k != "raw_sha256"} for row in parsed.rows]
    return {"problems": parsed.problems, "skipped_blocks": parsed.skipped_blocks, "rows": rows}


def parsed_metadata(samples_dir: Path, name: str) -> dict:
    """A metadata payload as the stage reads it: every record with the default filter's decision and its row
    (or the MetadataError the stage would quarantine it for)."""
    count, records = meta.records_from_payload((samples_dir / "hudoc" / "metadata" / name).read_bytes())
    out = []
    for record in records:
        try:
            row, error = meta.parse_record(record, "0" * 64), None
            row.pop("raw_sha256")
        except meta.MetadataError as exc:
            row, error = None, str(exc)
        out.append({"kept_by_default_filter": meta.RecordFilter().keeps(record), "row": row, "error": error})
    return {"resultcount": count, "records": out}


# Defects found reviewing these compare files against the documents, fixed since (tests in
# tests/samples/test_hudoc_bad_input.py; the regenerated files were reviewed again):
# - html.001-192223: the heading "A. Background events related to the murder of Mr and Ms S." (no
#   page-break-after:avoid, ends with "S.", but wholly bold) was glued onto paragraph 5's text and missing from
#   the heading_path of paragraphs 6-7;
# - docx.*: Word's non-breaking hyphen (<w:noBreakHyphen/>, 23 in 001-175180, 1 in 001-83979) was dropped:
#   "ECHR 2001VII" for "ECHR 2001-VII" (§ 49), "whistleblowers" (§§ 62, 65), "NonGovernmental" (heading of § 46),
#   "ECHR 2006..." in 001-83979 § 30;
# - metadata.RECONSTRUCTED_* / echrod_raw_*: 001-202608's application was the string "NULL" (HUDOC's null marker).
# Still as upstream: "Fith Section" is the code table's own spelling.
EXAMPLES = {
    "html.001-192223": partial(parsed_body, relative="html/001-192223.html"),       # Malyy v. Ukraine (2019)
    "docx.001-175180": partial(parsed_body, relative="docx/001-175180.docx"),       # Medžlis Islamske Zajednice Brčko [GC] (2017), 3 opinions
    "docx.001-83979": partial(parsed_body, relative="docx/001-83979.docx"),         # Uysal and Others v. Turkey (2007), older template
    "docx.001-83979_without_smarttags": partial(parsed_body, relative="docx/001-83979_without_smarttags.docx"),
    **{f"metadata.{name.removesuffix('.json')}": partial(parsed_metadata, name=name) for name in (
        "RECONSTRUCTED_query_results_page_from_echrod_columns.json",   # a query page: six records, US dates
        "echrod_raw_cases_input_columns.json",                         # the same records as a bare list
        "001-192223_tum_mongo_metadata.json",                          # Malyy: list-valued fields, day-first date
        "echrod_originatingbody_codes.json",                           # a code table: no records
    )},
}


@pytest.mark.parametrize("example", EXAMPLES)
def test_matches_reviewed_golden_output(samples_dir, example):
    assert_golden(SOURCE, example, EXAMPLES[example], samples_dir)


def _numbered(rows, part="judgment", operative=False):
    return [r for r in rows if r["part"] == part and r["para_no"] is not None
            and (r["section"] == OPERATIVE) == operative]


def _by_no(rows, number, part="judgment", operative=False):
    matches = [r for r in _numbered(rows, part, operative) if r["para_no"] == str(number)]
    assert len(matches) == 1, f"paragraph {number}: {len(matches)} rows"
    return matches[0]


def test_malyy_html_has_141_paragraphs_and_10_operative_points(samples_dir):
    parsed = _parse(samples_dir, "html/001-192223.html", "001-192223")
    assert parsed.problems == []
    body = _numbered(parsed.rows)
    assert [r["para_no"] for r in body] == [str(n) for n in range(1, 142)]
    assert [r["para_no"] for r in _numbered(parsed.rows, operative=True)] == [str(n) for n in range(1, 11)]
    assert len(parsed.rows) == 151
    assert {r["part"] for r in parsed.rows} == {"judgment"}


def test_malyy_html_sections_headings_and_texts(samples_dir):
    rows = _parse(samples_dir, "html/001-192223.html", "001-192223").rows
    assert _by_no(rows, 1)["section"] == "PROCEDURE"
    assert _by_no(rows, 1)["text"].startswith("The case originated in an application (no. 14486/07) against Ukraine")
    assert _by_no(rows, 5)["section"] == "THE FACTS"
    assert _by_no(rows, 5)["heading_path"] == "THE FACTS > I. THE CIRCUMSTANCES OF THE CASE"
    assert _by_no(rows, 63)["section"] == "THE LAW"
    # quoted Convention text stays inside the paragraph that quotes it, its "1." and "3." are not paragraphs
    p94 = _by_no(rows, 94)["text"]
    assert "“1. In the determination of ... any criminal charge" in p94
    assert "\n3. Everyone charged with a criminal offence" in p94
    assert "(c) to defend himself in person" in p94
    assert "“No one shall be subjected to torture" in _by_no(rows, 63)["text"]
    # numbered headings ("1. Admissibility", "(a)", "(i)", "(α)") are headings, not paragraphs
    assert _by_no(rows, 95)["heading_path"].endswith("A. Lack of access to a lawyer on 28 January 2005 > 1. Admissibility")
    assert _by_no(rows, 98)["heading_path"].endswith("2. Merits > (b) The Court’s assessment > (i) General case-law principles")
    assert _by_no(rows, 107)["heading_path"].endswith("(β) Whether there were compelling reasons for the restriction")
    assert _by_no(rows, 106)["text"] == "It follows that there was a restriction on the applicant’s right to legal assistance."
    # the number sits in its own span: "63" "." nbsp nbsp text → number and text separated cleanly
    assert _by_no(rows, 141)["text"].startswith("The Court considers it appropriate that the default interest rate")


def test_malyy_html_footnote_and_operative_part(samples_dir):
    rows = _parse(samples_dir, "html/001-192223.html", "001-192223").rows
    p105 = _by_no(rows, 105)
    assert "[1]" not in p105["text"]
    assert "repeated confession on 1 February 2005, it cannot be regarded" in p105["text"]
    assert p105["footnotes"] == ["Rectified on 14 May 2019: the text was “(...) that waiver prior to his repeated "
                                 "confession on 1 February 2015 (…).”"]
    nine = _by_no(rows, 9, operative=True)
    assert nine["section"] == OPERATIVE
    assert nine["text"].startswith("Holds\n(a) that the respondent State is to pay the applicant, within three months,")
    assert "\n(b) that from the expiry of the above-mentioned three months" in nine["text"]
    assert _by_no(rows, 10, operative=True)["text"] == "Dismisses the remainder of the applicant’s claim for just satisfaction."
    assert not any("Done in English" in r["text"] for r in rows)


def test_uysal_docx_older_template_with_and_without_smart_tags(samples_dir):
    tagged = _parse(samples_dir, "docx/001-83979.docx", "001-83979")
    plain = _parse(samples_dir, "docx/001-83979_without_smarttags.docx", "001-83979")
    assert tagged.problems == [] and plain.problems == []
    assert [r["para_no"] for r in _numbered(tagged.rows)] == [str(n) for n in range(1, 42)]
    assert [r["para_no"] for r in _numbered(tagged.rows, operative=True)] == ["1", "2", "3", "4"]
    assert len(tagged.rows) == 45
    # text inside smart tags (place names) is kept: both files give the same paragraphs
    assert [(r["para_no"], r["text"], r["heading_path"]) for r in tagged.rows] == \
           [(r["para_no"], r["text"], r["heading_path"]) for r in plain.rows]
    assert _by_no(tagged.rows, 1)["text"].startswith("The case originated in an application (no. 1206/03) against the Republic of Turkey")
    assert "On 3 July 1998 the Diyarbakır State Security Court, composed of three judges" in _by_no(tagged.rows, 8)["text"]
    # a printed paragraph continued in a second Word paragraph
    assert _by_no(tagged.rows, 33)["text"].endswith("“reasonable time” requirement.\nThere has accordingly been a breach of Article 6 § 1.")
    assert _by_no(tagged.rows, 29)["heading_path"].endswith("2. The period to be taken into consideration > i. In respect of the first applicant")
    assert _by_no(tagged.rows, 4)["heading_path"] == "THE FACTS > THE CIRCUMSTANCES OF THE CASE"


def test_medzlis_docx_grand_chamber_with_three_opinions(samples_dir):
    parsed = _parse(samples_dir, "docx/001-175180.docx", "001-175180")
    rows = parsed.rows
    assert parsed.problems == []
    assert [r["para_no"] for r in _numbered(rows)] == [str(n) for n in range(1, 123)]
    operative = [r for r in rows if r["section"] == OPERATIVE]
    assert [r["text"] for r in operative] == [
        "Holds, by eleven votes to six, that there has been no violation of Article 10 of the Convention."]
    parts = [r["part"] for r in rows]
    assert parts.count("opinion:1") == 10 and parts.count("opinion:2") == 9 and parts.count("opinion:3") == 8
    assert [r["para_no"] for r in _numbered(rows, "opinion:3")] == [str(n) for n in range(1, 9)]
    assert [r["para_no"] for r in _numbered(rows, "opinion:2")] == ["1", "2", "3"]
    # a quoted domestic decision with its own "34." ... "45." stays inside paragraph 33
    p33 = _by_no(rows, 33)["text"]
    assert "“34. At the outset the Constitutional Court notes" in p33 and "\n45. In view of the above" in p33
    assert _by_no(rows, 34)["text"] == "On 21 September 2010 the Constitutional Court’s decision was served on the applicants."
    assert _by_no(rows, 1)["footnotes"][0].startswith("Brčko District is a self-governing administrative unit")
    assert rows[[r["part"] for r in rows].index("opinion:1")]["text"].startswith("To our regret, we disagree with the majority")
    assert len(rows) == 150


def test_every_metadata_sample_parses_with_both_date_forms(samples_dir):
    folder = samples_dir / "hudoc" / "metadata"
    _, page = meta.records_from_payload((folder / "RECONSTRUCTED_query_results_page_from_echrod_columns.json").read_bytes())
    rows = {r["itemid"]: r for r in (meta.parse_record(rec, "0" * 64) for rec in page)}
    assert rows["001-201353"]["judgment_date"].isoformat() == "2020-02-13"      # "2/13/2020 12:00:00 AM"
    assert rows["001-201353"]["appnos"] == ["8675/15", "8697/15"]
    assert rows["001-201353"]["articles"][:3] == ["1", "13", "13+P4-4"]
    assert rows["001-201353"]["chamber"] == "GRANDCHAMBER" and rows["001-201353"]["originating_body"] == "Grand Chamber"
    assert rows["001-201353"]["separate_opinion"] is True
    assert rows["001-202608"]["is_placeholder"] is True
    assert rows["001-63325"]["respondents"] == ["SMR"]
    kept = [rec["itemid"] for rec in page if meta.RecordFilter().keeps(rec)]
    assert kept == ["001-201353", "001-202428", "001-202608"]
    _, mongo = meta.records_from_payload((folder / "001-192223_tum_mongo_metadata.json").read_bytes())
    malyy = meta.parse_record(mongo[0], "0" * 64)
    assert malyy["judgment_date"].isoformat() == "2019-04-11"                 # "11/04/2019 00:00:00", day first
    assert malyy["articles"] == ["3", "6", "6+6-1", "6-1", "6-3-c", "34"]
    assert malyy["originating_body"] == "Fith Section Committee" and malyy["importance"] == 4
    assert meta.records_from_payload((folder / "echrod_originatingbody_codes.json").read_bytes()) == (None, [])
