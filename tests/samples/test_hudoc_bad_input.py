"""One bad HUDOC input never loses the others, and bad data never lands silently: a DOCX without a body,
a truncated and garbled HTML body (with or without its metadata row), an oversized body and a malformed
metadata record are each quarantined with the itemid (or file and record) and the reason; the rest lands."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from caseforge.settings import Settings
from caseforge.tasks.hudoc import ingest, metadata as meta
from caseforge.tasks.hudoc.readers import DocumentError, parse_document
from caseforge.warehouse.connection import connect
from warehouse_rows import rows as _table

pytestmark = pytest.mark.samples

BODIES = {"001-192223": "html/001-192223.html", "001-175180": "docx/001-175180.docx", "001-83979": "docx/001-83979.docx"}
PARAGRAPHS = 151 + 150 + 45
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _docx_without_body() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", f'<w:document xmlns:w="{W_NS}"></w:document>')
    return out.getvalue()


def _truncated_garbled(samples_dir: Path) -> bytes:
    """Malyy's HTML cut 2,500 bytes into § 44, the tail read as cp1252 (mojibake: 'applicantâ€™s')."""
    body = (samples_dir / "hudoc" / "html" / "001-192223.html").read_bytes()
    start = body.index(b"<span class='sB8D990E2'>44</span>")
    tail = body[start:start + 2500].decode("utf-8").encode("utf-8").decode("cp1252", errors="replace")
    return body[:start] + tail.encode("utf-8")


def _folder(samples_dir: Path, tmp_path: Path, extra: dict[str, bytes] | None = None, metadata: bool = True) -> Path:
    folder = tmp_path / "hudoc"
    for relative in BODIES.values():
        (folder / Path(relative).parent).mkdir(parents=True, exist_ok=True)
        (folder / relative).symlink_to(samples_dir / "hudoc" / relative)
    if metadata:
        (folder / "metadata").mkdir()
        for path in (samples_dir / "hudoc" / "metadata").glob("*.json"):
            (folder / "metadata" / path.name).symlink_to(path)
    for relative, body in (extra or {}).items():
        (folder / Path(relative).parent).mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(body)
    return folder


def _known(db_path: Path, itemids) -> None:
    """Metadata rows for bodies the samples hold no metadata record for (Medžlis, Uysal) or test bodies."""
    con = connect(db_path)
    for itemid in itemids:
        con.execute("INSERT INTO curated.echr_judgments (itemid, docname, judgment_date, raw_sha256, doctype, updated_at) "
                    "SELECT $id, 'CASE OF X v. Y', DATE '2017-06-08', $sha, 'HEJUD', now() WHERE NOT EXISTS "
                    "(SELECT 1 FROM curated.echr_judgments WHERE itemid = $id)", {"id": itemid, "sha": "0" * 64})
    con.close()


def test_a_docx_without_a_body_is_a_document_error():
    with pytest.raises(DocumentError, match="no <w:body>"):
        parse_document("001-999999", _docx_without_body(), "0" * 64)


def test_a_docx_without_a_body_is_quarantined_and_every_other_body_lands(samples_dir, tmp_path, db_path):
    folder = _folder(samples_dir, tmp_path, {"docx/001-999999.docx": _docx_without_body()})
    _known(db_path, list(BODIES) + ["001-999999"])
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs") == [(PARAGRAPHS,)]
    [line] = report.failures
    assert line.startswith("hudoc 001-999999") and "no <w:body>" in line
    assert _table(db_path, "SELECT source_key FROM ops.quarantine") == [("001-999999",)]


def test_a_truncated_garbled_html_body_fails_naming_why(samples_dir):
    parsed = parse_document("001-192223", _truncated_garbled(samples_dir), "0" * 64)
    assert any(p.startswith("garbled text in paragraph 4") and "â€" in p for p in parsed.problems), parsed.problems
    assert not parsed.has_operative_part          # the stage fails a judgment body without one (below)
    assert parse_document("001-192223", (samples_dir / "hudoc" / "html" / "001-192223.html").read_bytes(),
                          "0" * 64).has_operative_part


@pytest.mark.parametrize("with_metadata", [True, False])
def test_a_truncated_garbled_body_does_not_land_and_the_run_says_so(samples_dir, tmp_path, db_path, with_metadata):
    folder = _folder(samples_dir, tmp_path, {"html/001-192224.html": _truncated_garbled(samples_dir)})
    if with_metadata:
        _known(db_path, list(BODIES) + ["001-192224"])
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs WHERE itemid = '001-192224'") == [(0,)]
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs") == [(PARAGRAPHS,)]
    [line] = report.failures
    assert line.startswith("hudoc 001-192224: ") and "garbled text" in line and "no operative part" in line


def test_bodies_without_a_metadata_row_land_and_are_counted(samples_dir, tmp_path, db_path):
    folder = _folder(samples_dir, tmp_path)
    # the samples hold no metadata record for Uysal (001-83979) or Medžlis (001-175180)
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert report.failures == []
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs") == [(PARAGRAPHS,)]
    assert report.counts["bodies_without_metadata"] == 2


def test_a_body_over_the_size_limit_is_quarantined_unread(samples_dir, tmp_path, db_path, monkeypatch):
    monkeypatch.setenv("CASEFORGE_MAX_MB_HUDOC_BODY", "0.15")       # Malyy's HTML is 164 KB, the DOCX smaller
    folder = _folder(samples_dir, tmp_path)
    _known(db_path, BODIES)
    report = ingest.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs") == [(150 + 45,)]
    [line] = report.failures
    assert line.startswith("hudoc 001-192223") and "over the hudoc body limit" in line
    assert _table(db_path, "SELECT count(*) FROM ops.raw_payloads WHERE key = 'html/001-192223'") == [(0,)]


def test_a_malformed_metadata_record_quarantines_only_itself(samples_dir):
    page = json.loads((samples_dir / "hudoc" / "metadata" /
                       "RECONSTRUCTED_query_results_page_from_echrod_columns.json").read_bytes())
    good = [meta.parse_record(r["columns"], "0" * 64)["itemid"] for r in page["results"]
            if meta.RecordFilter().keeps(r["columns"])]
    bad_values = [("kpdate", "2023-13-45T00:00:00"), ("importance", 1e400), ("appno", {"x": 1}), ("itemid", None)]
    for field, value in bad_values:
        broken = json.loads(json.dumps(page))
        broken["results"][0]["columns"].update({field: value, "doctype": "HEJUD", "languageisocode": "ENG"})
        rows, problems, _ = ingest.read_metadata(json.dumps(broken).encode(), meta.RecordFilter())
        assert [r["itemid"] for r in rows] == [i for i in good if i != page["results"][0]["columns"]["itemid"]]
        [problem] = problems
        assert problem.where.startswith("record 0") and problem.reason, (field, problem)


# ---- parser defects named in tests/samples/test_hudoc_golden.py ----

def _rows(samples_dir, relative, itemid):
    return parse_document(itemid, (samples_dir / "hudoc" / relative).read_bytes(), "0" * 64).rows


def _paragraph(rows, number):
    [row] = [r for r in rows if r["part"] == "judgment" and r["section"] != "OPERATIVE" and r["para_no"] == str(number)]
    return row


def test_docx_keeps_words_non_breaking_hyphens(samples_dir):
    rows = _rows(samples_dir, "docx/001-175180.docx", "001-175180")
    assert "ECHR 2001-VII" in _paragraph(rows, 49)["text"]
    assert "whistle-blowers" in _paragraph(rows, 62)["text"]
    assert "World Association of Non-Governmental Organisations (WANGO)" in _paragraph(rows, 46)["heading_path"]
    uysal = _rows(samples_dir, "docx/001-83979.docx", "001-83979")
    assert "ECHR 2006-..." in _paragraph(uysal, 30)["text"]


def test_metadata_null_marker_is_null(samples_dir):
    _, records = meta.records_from_payload(
        (samples_dir / "hudoc" / "metadata" / "RECONSTRUCTED_query_results_page_from_echrod_columns.json").read_bytes())
    [record] = [r for r in records if r["itemid"] == "001-202608"]
    assert record["application"] == "NULL"
    assert meta.parse_record(record, "0" * 64)["application"] is None


def test_a_lettered_heading_ending_with_an_initial_is_a_heading_not_text(samples_dir):
    rows = _rows(samples_dir, "html/001-192223.html", "001-192223")
    heading = "THE FACTS > I. THE CIRCUMSTANCES OF THE CASE > A. Background events related to the murder of Mr and Ms S."
    assert _paragraph(rows, 5)["text"] == ("The applicant, Mr Aleksey Alekseyevich Malyy, is a Ukrainian national who "
                                           "was born in 1972 and is currently serving a sentence of life imprisonment.")
    assert _paragraph(rows, 6)["heading_path"] == heading and _paragraph(rows, 7)["heading_path"] == heading
    assert _paragraph(rows, 5)["heading_path"] == "THE FACTS > I. THE CIRCUMSTANCES OF THE CASE"


QUOTED_ITEMS = ["“a) to know what he is accused of;", "b) to have a defence counsel",
                "c) to give explanations in his native language;", "e) to refuse to give evidence”"]


def test_quoted_list_items_belong_to_the_paragraph_that_quotes_them(samples_dir):
    body = (samples_dir / "hudoc" / "html" / "001-192223.html").read_bytes().decode("utf-8")
    anchor = body.index("</p>", body.index("<span class='sB8D990E2'>36</span>")) + len("</p>")   # after § 36
    items = "".join(f"<p class='s30EEC3F8'><span class='sB8D990E2'>{item}</span></p>" for item in QUOTED_ITEMS)
    lead = "<p class='s30EEC3F8'><span class='sB8D990E2'>Article 21 of the Code reads, as relevant:</span></p>"
    rows = parse_document("001-192223", (body[:anchor] + lead + items + body[anchor:]).encode("utf-8"), "0" * 64).rows
    text = _paragraph(rows, 36)["text"]
    assert text.endswith("\n".join(["Article 21 of the Code reads, as relevant:"] + QUOTED_ITEMS))
    assert [r for r in rows if r["para_no"] is None] == []
    assert _paragraph(rows, 37)["heading_path"].endswith(
        "> C. Alleged ill-treatment of the applicant and the investigation thereof")
