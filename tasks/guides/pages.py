"""Case-law guide pages from a PDF, an extracted text (pages split by form feeds) or the page CSV. Pure.

Every reader gives the same `GuidePage`s: the page's raw text and the HUDOC itemids its links
point to (itemid → the linked title where the source carries one).
"""
from __future__ import annotations

import csv
import io
import json
import re
import sys
from dataclasses import dataclass, field

ITEMID_IN_URL = re.compile(r"[?&#](?:i=|itemid[\"'=:%\d\w]*?)(\d{3}-\d+)")
ITEMID_ANYWHERE = re.compile(r"\b(\d{3}-\d{4,7})\b")


class GuideSourceError(ValueError):
    """A guide file that cannot be read (the reason is the message)."""


@dataclass
class GuidePage:
    number: int
    text: str
    links: dict[str, str | None] = field(default_factory=dict)


def pages_from_csv(body: bytes) -> list[GuidePage]:
    """The page CSV layout: page_number, citations (JSON itemid → linked case title), page_text."""
    csv.field_size_limit(sys.maxsize)
    try:
        reader = csv.DictReader(io.StringIO(body.decode("utf-8-sig")))
    except UnicodeDecodeError as exc:
        raise GuideSourceError(f"page CSV is not UTF-8: {exc}") from exc
    if not reader.fieldnames or not {"page_number", "page_text"} <= set(reader.fieldnames):
        raise GuideSourceError(f"page CSV needs page_number and page_text columns, has {reader.fieldnames}")
    pages = []
    line = 1
    try:
        for row in reader:
            line = reader.line_num
            try:
                links = json.loads(row.get("citations") or "{}")
                number = int(row["page_number"] or "")
            except (ValueError, TypeError, RecursionError) as exc:
                raise GuideSourceError(f"page CSV line {line}: {type(exc).__name__}: {exc}") from None
            if not isinstance(links, dict) or not all(isinstance(v, (str, type(None))) for v in links.values()):
                raise GuideSourceError(f"page CSV line {line}: citations must map itemids to linked titles")
            text = row.get("page_text")
            if row.get(None) is not None or not isinstance(text, (str, type(None))):
                raise GuideSourceError(f"page CSV line {line}: more fields than the header names")
            pages.append(GuidePage(number, text or "", {str(k): v for k, v in links.items()}))
    except csv.Error as exc:
        raise GuideSourceError(f"page CSV line {line + 1}: {exc}") from None
    return sorted(pages, key=lambda p: p.number)


def pages_from_text(body: bytes) -> list[GuidePage]:
    """Extracted text with pages separated by form feeds; itemids are taken from any URL left in the text."""
    text = body.decode("utf-8-sig", errors="replace")
    pages = []
    for number, page_text in enumerate(text.split("\f")):
        links = {m[1]: None for m in ITEMID_IN_URL.finditer(page_text)}
        pages.append(GuidePage(number, page_text, links))
    return pages


def _link_targets(page) -> list[tuple[str, list[float]]]:
    targets = []
    for annot in page.get("/Annots") or []:
        obj = annot.get_object()
        action = obj.get("/A") or {}
        uri = str(action.get("/URI") or "")
        match = ITEMID_IN_URL.search(uri) or ITEMID_ANYWHERE.search(uri)
        if obj.get("/Subtype") == "/Link" and match:
            targets.append((match[1], [float(v) for v in obj.get("/Rect", [0, 0, 0, 0])]))
    return targets


AVERAGE_CHAR_WIDTH_EM = 0.5     # pypdf reports a whole line's origin, so positions inside it are estimated


def _text_under(fragments: list[tuple[float, float, float, str]], rect: list[float]) -> str:
    """The text a link rectangle covers: lines at its height, cut at its left and right edges (estimated)."""
    x1, y1, x2, y2 = min(rect[0], rect[2]), min(rect[1], rect[3]), max(rect[0], rect[2]), max(rect[1], rect[3])
    pieces = []
    for x, y, size, text in fragments:
        for offset, line in enumerate(text.split("\n")):
            line_y = y - offset * size * 1.2
            if not (y1 - size * 0.3 <= line_y <= y2 + size * 0.3):
                continue
            width = size * AVERAGE_CHAR_WIDTH_EM
            first = max(0, int((x1 - x) / width))
            last = max(first, int(round((x2 - x) / width)))
            pieces.append(line[first:last])
    return " ".join(piece.strip() for piece in pieces if piece.strip())


def pages_from_pdf(body: bytes) -> list[GuidePage]:
    """PDF text per page, and the HUDOC link annotations with the text lying under each link.

    Whatever pypdf raises on a damaged file (it raises many kinds) is a GuideSourceError naming the page."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(body))
        count = len(reader.pages)
    except Exception as exc:  # noqa: BLE001 - PdfReadError, ValueError, KeyError, RecursionError...
        raise GuideSourceError(f"not a readable PDF: {type(exc).__name__}: {exc}") from None
    pages = []
    for number in range(count):
        try:
            pages.append(_pdf_page(reader, number))
        except Exception as exc:  # noqa: BLE001 - a damaged page: the guide cannot be read whole
            raise GuideSourceError(f"PDF page {number + 1} unreadable: {type(exc).__name__}: {exc}") from None
    return pages


def _pdf_page(reader, number: int) -> GuidePage:
    page = reader.pages[number]
    fragments: list[tuple[float, float, float, str]] = []

    def visit(text, cm, tm, font, size):
        if text and text.strip():
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            fragments.append((x, y, float(size or 10) * abs(tm[0] or 1), text))

    text = page.extract_text(visitor_text=visit) or ""
    links: dict[str, str | None] = {}
    for itemid, rect in _link_targets(page):
        under = _text_under(fragments, rect)
        previous = links.get(itemid)
        links[itemid] = (f"{previous} {under}".strip() if previous else under.strip()) or None
    return GuidePage(number, text, links)


def read_pages(body: bytes, name: str) -> list[GuidePage]:
    lowered = name.lower()
    if lowered.endswith(".pdf") or body[:5] == b"%PDF-":
        return pages_from_pdf(body)
    if lowered.endswith(".csv"):
        return pages_from_csv(body)
    return pages_from_text(body)
