"""Guide readers (extracted text, PDF with link annotations) and the citation resolver."""
from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.annotations import Link
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from caseforge.tasks.guides.pages import pages_from_pdf, pages_from_text, read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from caseforge.tasks.guides.resolve import NO_MATCH, Resolver, load_french_map

HEADER = "Guide on Article 2 of the Convention – Right to life\nEuropean Court of Human Rights 7/57 Last update: 31.08.2023 "


def test_text_pages_drop_headers_and_join_a_paragraph_across_the_break():
    text = (HEADER + "I. General considerations\nArticle 2 of the Convention\n“1. Everyone’s right ...”\n"
            "1. The Court has held that the State must act (Opuz v. Turkey, 2009, § 129)\n"
            "and must do so quickly.\n2. The obligation\f" + HEADER.replace("7/57", "8/57") +
            "is one of means (ibid., § 130).\nA. Scope\n3. It applies to all activities.\n")
    parsed = parse_guide("g", pages_from_text(text.encode()), "0" * 64)
    assert [(r["para_no"], r["pages"], r["heading_path"]) for r in parsed.rows] == [
        ("1", [0], "I. General considerations"), ("2", [0, 1], "I. General considerations"),
        ("3", [1], "I. General considerations > A. Scope")]
    assert parsed.rows[1]["text"] == "The obligation is one of means (ibid., § 130)."
    assert parsed.version_date.isoformat() == "2023-08-31"
    assert parsed.dropped_lines == 2                       # the boxed Article title and text


def _pdf_with_link() -> bytes:
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 10 Tf 50 740 Td (European Court of Human Rights 6/57 Last update: 31.08.2023) Tj "
                     b"0 -20 Td (1. The Court held so \\() Tj (McCann and Others v. the United Kingdom) Tj "
                     b"(, 1995, \\247 146\\).) Tj ET")
    page[NameObject("/Contents")] = writer._add_object(content)
    writer.add_annotation(page_number=0, annotation=Link(
        rect=(160, 715, 355, 730), url="https://hudoc.echr.coe.int/eng?i=001-57943"))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_pages_carry_text_and_hudoc_link_targets():
    pages = pages_from_pdf(_pdf_with_link())
    assert len(pages) == 1 and "001-57943" in pages[0].links
    # pypdf gives a line's origin only: the text under the link is cut at estimated character positions
    assert pages[0].links["001-57943"] == "McCann and Others v. the United Kingdom"
    parsed = parse_guide("g", read_pages(_pdf_with_link(), "guide.pdf"), "0" * 64)
    assert parsed.rows[0]["text"].startswith("The Court held so (McCann and Others v. the United Kingdom, 1995, § 146")
    citation = {"case_name": "McCann and Others v. the United Kingdom", "applicant": "McCann and Others",
                "respondent": "the United Kingdom", "year": 1995, "no_number": None}
    assert Resolver().resolve(citation, pages[0].links)["itemid"] == "001-57943"


def test_french_map_refuses_execution_documents_and_nan():
    body = ("fre_id,eng_id,fre_docname,eng_docname\n"
            "001-103591,001-103722,AFFAIRE SOARE ET AUTRES c. ROUMANIE,CASE OF SOARE AND OTHERS v. ROMANIA\n"
            "001-114078,001-179334,AFFAIRE YOTOVA c. BULGARIE,CASE OF ANGELOVA AND ILIEV AGAINST BULGARIA AND 7 OTHER CASES\n"
            "001-94259,NaN,MOLIE c. ROUMANIE,NaN\n").encode()
    mapping, refused = load_french_map(body)
    assert mapping == {"001-103591": ("001-103722", "CASE OF SOARE AND OTHERS v. ROMANIA")}
    assert len(refused) == 2


def _citation(applicant, respondent, year, number=None):
    return {"case_name": f"{applicant} v. {respondent}", "applicant": applicant, "respondent": respondent,
            "year": year, "no_number": number}


def test_resolver_prefers_links_then_name_and_year_and_says_why_when_it_cannot():
    mapping = {"001-103591": ("001-103722", "CASE OF SOARE AND OTHERS v. ROMANIA")}
    resolver = Resolver(mapping)
    resolver.add_judgment("001-192223", "CASE OF MALYY v. UKRAINE", 2019)
    links = {"001-103591": "AFFAIRE SOARE ET AUTRES c. ROUMANIE", "001-61": "CASE OF STEPHENS v. MALTA (No. 1)",
             "001-62": "CASE OF STEPHENS v. MALTA (No. 2)", "001-70": "AFFAIRE MOLIE c. ROUMANIE"}
    assert resolver.resolve(_citation("Soare and Others", "Romania", 2011), links) == {
        "itemid": "001-103722", "resolution_method": "link_fr_to_en",
        "linked_title": "CASE OF SOARE AND OTHERS v. ROMANIA", "unresolved_reason": None}
    assert resolver.resolve(_citation("Stephens", "Malta", 2009, "2"), links)["itemid"] == "001-62"
    assert resolver.resolve(_citation("Molie", "Romania", 2009), links)["resolution_method"] == "link_fr"
    assert resolver.resolve(_citation("Malyy", "Ukraine", 2019), links)["resolution_method"] == "name_year"
    missing = resolver.resolve(_citation("Malyy", "Ukraine", 2018), links)
    assert missing["itemid"] is None and missing["unresolved_reason"] == NO_MATCH


def test_live_guides_are_fetched_by_id_and_a_failed_one_is_quarantined(tmp_path):
    import httpx

    from caseforge.archive import RawArchive
    from caseforge.settings import load_settings
    from caseforge.fetch import Fetcher
    from caseforge.stage_report import StageReport
    from caseforge.tasks.guides import ingest
    from caseforge.warehouse.connection import connect

    con = connect(tmp_path / "w.duckdb")
    pdf = _pdf_with_link()

    def ks_server(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/guide_art_2_eng"):
            return httpx.Response(200, content=pdf, headers={"Content-Type": "application/pdf"})
        return httpx.Response(404)

    report = StageReport("t")
    fetcher = Fetcher(load_settings(), RawArchive(con), transport=httpx.MockTransport(ks_server), sleep=lambda s: None)
    with fetcher:
        sources = ingest.fetch_sources(fetcher, con, 1, ["guide_art_2_eng", "guide_art_99_eng"], report)
    assert [s.guide_id for s in sources] == ["guide_art_2_eng"]
    paragraphs, citations = ingest.parse_source(con, 1, sources[0], ingest.make_resolver(con), report)
    assert [(c["case_name"], c["pinpoints"], c["itemid"], c["resolution_method"]) for c in citations] == [
        ("McCann and Others v. the United Kingdom", [146], "001-57943", "link")]
    ingest.load_guide(con, 1, paragraphs, citations, report)
    assert con.execute("SELECT guide_id, para_no, guide_version_date FROM curated.guide_paragraphs").fetchall() == [
        ("guide_art_2_eng", "1", __import__("datetime").date(2023, 8, 31))]
    assert con.execute("SELECT source_key, stage FROM ops.quarantine").fetchall() == [("guide_art_99_eng", "fetch")]


def test_a_guide_parsed_again_into_the_same_rows_is_left_as_it_is_and_one_parsed_otherwise_is_replaced(tmp_path):
    """The guides' parser version includes the resolver's inputs, so a night after new judgments parses every
    guide again: its paragraphs, the same rows, must not look changed to the builders that read them."""
    from caseforge.stage_report import StageReport
    from caseforge.tasks.guides import ingest
    from caseforge.warehouse.connection import connect

    con = connect(tmp_path / "w.duckdb")
    text = (HEADER + "I. General considerations\n1. The Court has held that the State must act (Opuz v. Turkey, "
            "2009, § 129).\n2. The obligation is one of means and applies to every public authority.\n")
    rows = parse_guide("guide_art_2_eng", pages_from_text(text.encode()), "a" * 64).rows
    columns = "para_no, text, updated_at"

    ingest.load_guide(con, 1, rows, [], StageReport("first"))
    first = con.execute(f"SELECT {columns} FROM curated.guide_paragraphs ORDER BY ordinal").fetchall()
    ingest.load_guide(con, 2, [dict(row) for row in rows], [], StageReport("same rows again"))
    assert con.execute(f"SELECT {columns} FROM curated.guide_paragraphs ORDER BY ordinal").fetchall() == first

    otherwise = [dict(row, text=row["text"] + " (as the next parser reads it)") for row in rows[:1]]
    ingest.load_guide(con, 3, otherwise, [], StageReport("a parser that makes other rows"))
    [(para_no, replaced_text, updated_at)] = con.execute(
        f"SELECT {columns} FROM curated.guide_paragraphs").fetchall()
    assert (para_no, replaced_text) == ("1", otherwise[0]["text"]) and updated_at > first[0][2]
