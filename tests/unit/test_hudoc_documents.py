"""Live judgment bodies against a scripted HUDOC server: HTML first, the DOCX route when the HTML is empty."""
from __future__ import annotations

import io

import httpx
from docx import Document

from caseforge.archive import RawArchive
from caseforge.fetch import Fetcher
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.hudoc import ingest
from caseforge.warehouse.connection import connect

HTML = ("<style>.b { font-size:12pt } .h { page-break-after:avoid }</style><div>"
        "<p class='h'><span class='b'>PROCEDURE</span></p>"
        "<p><span class='b'>1</span><span class='b'>.&#xa0;&#xa0;The case originated in an application.</span></p>"
        "<p class='h'><span class='b'>THE LAW</span></p>"
        "<p><span class='b'>2.&#xa0;&#xa0;The Court finds a violation.</span></p>"
        "<p class='h'><span class='b'>FOR THESE REASONS, THE COURT, UNANIMOUSLY,</span></p>"
        "<p><span class='b'>1.&#xa0;&#xa0;Holds that there has been a violation.</span></p></div>")


def _docx() -> bytes:
    document = Document()
    for text in ["PROCEDURE", "1.\u00a0\u00a0Text of the first paragraph.", "THE LAW",
                 "2.\u00a0\u00a0Text of the second paragraph.", "3.\u00a0\u00a0Text of the third paragraph.",
                 "FOR THESE REASONS, THE COURT, UNANIMOUSLY,", "1.\u00a0\u00a0Holds that there has been a violation."]:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _connect(path, *itemids):
    """The warehouse, knowing the judgments whose bodies are fetched (the live path fetches only those)."""
    con = connect(path)
    for itemid in itemids:
        con.execute("INSERT INTO curated.echr_judgments (itemid, doctype, judgment_date, raw_sha256, updated_at) "
                    "VALUES (?, 'HEJUD', DATE '2020-01-01', ?, now())", [itemid, "0" * 64])
    return con


def _fetcher(con, handler):
    return Fetcher(load_settings(), RawArchive(con), transport=httpx.MockTransport(handler), sleep=lambda s: None)


def test_html_body_becomes_paragraphs(tmp_path):
    con = _connect(tmp_path / "w.duckdb", "001-1")
    with _fetcher(con, lambda request: httpx.Response(200, text=HTML)) as fetcher:
        rows = ingest.fetch_body(fetcher, con, 1, "001-1", StageReport("t"))
    assert [(r["para_no"], r["section"], r["text"]) for r in rows] == [
        ("1", "PROCEDURE", "The case originated in an application."),
        ("2", "THE LAW", "The Court finds a violation."),
        ("1", "OPERATIVE", "Holds that there has been a violation.")]


def test_empty_html_falls_back_to_the_docx_route(tmp_path):
    con = _connect(tmp_path / "w.duckdb", "001-2")
    seen = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path.endswith("/html/body"):
            return httpx.Response(200, content=b"  ")           # the empty 200 HUDOC sometimes sends
        return httpx.Response(200, content=_docx())

    report = StageReport("t")
    with _fetcher(con, server) as fetcher:
        ingest.live_documents_batch(fetcher, con, 1, ["001-2"], report)
    assert seen[-1] == "/app/conversion/docx/" and report.counts["docx_fetched"] == 1
    stored = con.execute("SELECT para_no, source_format FROM curated.echr_paragraphs ORDER BY ordinal").fetchall()
    assert stored == [("1", "docx"), ("2", "docx"), ("3", "docx"), ("1", "docx")]


def test_no_usable_body_is_quarantined_and_the_batch_goes_on(tmp_path):
    con = _connect(tmp_path / "w.duckdb", "001-3", "001-4")

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.params["id"] == "001-3":
            return httpx.Response(404)
        return httpx.Response(200, text=HTML)

    report = StageReport("t")
    with _fetcher(con, server) as fetcher:
        ingest.live_documents_batch(fetcher, con, 1, ["001-3", "001-4"], report)
    assert con.execute("SELECT DISTINCT itemid FROM curated.echr_paragraphs").fetchall() == [("001-4",)]
    key, reason = con.execute("SELECT source_key, reason FROM ops.quarantine").fetchone()
    assert key == "001-3" and "html: HTTP 404" in reason and "docx: HTTP 404" in reason
    assert not report.ok


def test_order_check_finds_numbers_that_do_not_increase():
    from caseforge.tasks.hudoc.paragraphs import order_problems

    rows = [{"para_no": n, "part": p, "section": s} for n, p, s in [
        ("1", "judgment", "THE LAW"), ("2", "judgment", "THE LAW"), ("1", "judgment", "OPERATIVE"),
        ("1", "opinion:1", None), ("2", "judgment", "THE LAW")]]
    assert order_problems(rows) == ["judgment: paragraph 2 follows 2"]


def test_a_document_failing_the_order_check_is_quarantined_with_the_reason(tmp_path, monkeypatch):
    from caseforge.tasks.hudoc.paragraphs import ParsedJudgment

    con = _connect(tmp_path / "w.duckdb", "001-5")
    monkeypatch.setattr(ingest, "parse_document", lambda itemid, body, sha, source_format=None: ParsedJudgment(
        [{"para_no": "1"}], ["judgment: paragraph 2 follows 2"]))
    report = StageReport("t")
    with _fetcher(con, lambda request: httpx.Response(200, text=HTML)) as fetcher:
        ingest.live_documents_batch(fetcher, con, 1, ["001-5"], report)
    assert con.execute("SELECT count(*) FROM curated.echr_paragraphs").fetchone() == (0,)
    assert con.execute("SELECT source_key, stage, reason FROM ops.quarantine").fetchone() == (
        "001-5", "parse", "paragraph numbering: judgment: paragraph 2 follows 2")
    assert report.counts["documents_quarantined"] == 1


def test_a_printed_number_may_skip_a_missing_paragraph_but_never_go_back(tmp_path):
    con = _connect(tmp_path / "w.duckdb", "001-6")
    skipped = HTML.replace("2.&#xa0;&#xa0;The Court finds a violation.",
                           "4.&#xa0;&#xa0;The Court finds a violation.</span></p><p><span class='b'>"
                           "3.&#xa0;&#xa0;Not a paragraph: the number goes back.")
    with _fetcher(con, lambda request: httpx.Response(200, text=skipped)) as fetcher:
        rows = ingest.fetch_body(fetcher, con, 1, "001-6", StageReport("t"))
    body = [r for r in rows if r["section"] != "OPERATIVE"]
    assert [r["para_no"] for r in body] == ["1", "4"]
    assert body[1]["text"].endswith("\n3. Not a paragraph: the number goes back.")


def test_a_live_body_is_size_checked_and_parsed_once(tmp_path, monkeypatch):
    """fetch_body decides on a route by parsing its body: the rows it lands are that parse's, not a second one."""
    parsed, checked = [], []
    parse_document, size_problem = ingest.parse_document, ingest.size_problem
    monkeypatch.setattr(ingest, "parse_document", lambda *a, **k: parsed.append(a[0]) or parse_document(*a, **k))
    monkeypatch.setattr(ingest, "size_problem", lambda *a, **k: checked.append(a[1]) or size_problem(*a, **k))
    con = _connect(tmp_path / "w.duckdb", "001-7")
    with _fetcher(con, lambda request: httpx.Response(200, text=HTML)) as fetcher:
        rows = ingest.fetch_body(fetcher, con, 1, "001-7", StageReport("t"))
    assert len(rows) == 3 and parsed == ["001-7"] and checked == ["body"]
