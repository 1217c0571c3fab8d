"""Guide pages → numbered paragraphs: page headers removed, paragraphs joined across page breaks. Pure.

Paragraph numbers run through a whole guide, so a line opens a paragraph only when its number
continues the sequence; the lettered and numbered headings between paragraphs (which clash
with paragraph numbers: "1.  Protection of persons ..." after paragraph 16) become the heading path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from caseforge.tasks.guides.pages import GuidePage
from caseforge.tasks.hudoc.labels import ROMAN_RE, starts_with_quote

COLUMNS = ["guide_id", "para_no", "heading_path", "text", "guide_version_date", "pages", "ordinal", "raw_sha256"]

HEADER_RE = re.compile(
    r"European\s+Court\s+of\s+Human\s+Rights\s+(\d+)\s*/\s*(\d+)\s+Last\s+update\s*:\s*(\d{2})\.(\d{2})\.(\d{4})[ \t]*")
TITLE_LINE_RE = re.compile(r"^\s*Guide\s+on\s+[^\n]*\n")
PARA_RE = re.compile(r"^(\d{1,4})\.\s+(\S.*)$")
HEADING_RE = re.compile(r"^(?P<label>[IVXLC]{1,6}|[A-Z]|\d{1,2}|[a-z]|[ivx]{1,5})\.\s+(?P<rest>[A-Z“\"‘].*)$")
DOT_LEADERS = re.compile(r"\.{5,}\s*\d+\s*$")
END_MARKERS = re.compile(r"^\s*List of cited cases\s*$", re.I)
MAX_NUMBER_JUMP = 3
MAX_HEADING_CHARS = 160
# More text lines outside numbered paragraphs than inside them: the parser lost the numbering (a guide given from
# a later page, numbers the extraction broke) and what it kept is not the guide.
MAX_LOST_LINE_SHARE = 0.5


@dataclass
class GuideParse:
    rows: list[dict]
    version_date: date | None
    dropped_lines: int = 0
    problems: list[str] = field(default_factory=list)
    paragraph_lines: int = 0          # text lines that went into numbered paragraphs


def strip_header(text: str) -> tuple[str, date | None]:
    """The page text without its running title and 'European Court of Human Rights n/N Last update' line."""
    found = None
    match = HEADER_RE.search(text)
    if match:
        found = date(int(match[5]), int(match[4]), int(match[3]))
        text = text[:match.start()] + "\n" + text[match.end():]
    text = TITLE_LINE_RE.sub("", text, count=1)
    return text, found


def heading_level(label: str) -> int:
    if label.isdigit():
        return 3
    if ROMAN_RE.match(label) and (len(label) > 1 or label in "IVX"):
        return 1
    if re.fullmatch(r"[A-Z]", label):
        return 2
    if re.fullmatch(r"[ivx]+", label) and len(label) > 1:
        return 5
    return 4


def is_heading(line: str) -> tuple[int, str] | None:
    match = HEADING_RE.match(line)
    if not match or match["label"] == "v":
        return None
    rest = match["rest"].strip()
    if len(rest) > MAX_HEADING_CHARS or "§" in rest or " v. " in rest or rest.endswith((",", ";", ":", ")")):
        return None
    label = match["label"]
    level = heading_level(label)
    if label in "IVX" and len(label) == 1 and not rest[:1].isupper():
        level = 2
    return level, label + ". " + re.sub(r"\s+", " ", rest)


def continues(last: int, number: int) -> bool:
    """A paragraph number continues the sequence (the first must be 1; later ones may skip a few)."""
    if last == 0:
        return number == 1
    return last < number <= last + MAX_NUMBER_JUMP


def normalise_line(line: str) -> str:
    line = re.sub(r"[\ue000-\uf8ff]", "•", line)       # bullets drawn from a symbol font (private use area)
    return re.sub(r"[ \t\u00a0]+", " ", line).strip()


def parse_guide(guide_id: str, pages: list[GuidePage], raw_sha256: str) -> GuideParse:
    rows: list[dict] = []
    headings: dict[int, str] = {}
    current: dict | None = None
    last = 0
    dropped = 0
    contents = 0          # table-of-contents lines (dot leaders): dropped, but not text the parse lost
    kept = 0
    version: date | None = None
    ended = False

    def flush():
        nonlocal current
        if current is not None:
            current["text"] = re.sub(r"\s+", " ", " ".join(current.pop("lines"))).strip()
            current["ordinal"] = len(rows) + 1
            rows.append(current)
        current = None

    for page in pages:
        text, page_version = strip_header(page.text)
        version = version or page_version
        for raw_line in text.split("\n"):
            line = normalise_line(raw_line)
            if not line or ended:
                continue
            if END_MARKERS.match(line):
                flush()
                ended = True
                continue
            if DOT_LEADERS.search(line):
                dropped += 1
                contents += 1
                continue
            para = PARA_RE.match(line)
            if para and not starts_with_quote(para[2]) and continues(last, int(para[1])):
                flush()
                last = int(para[1])
                current = {"guide_id": guide_id, "para_no": str(last),
                           "heading_path": " > ".join(headings[k] for k in sorted(headings)) or None,
                           "lines": [para[2]], "pages": [page.number]}
                kept += 1
                continue
            heading = is_heading(line)
            if heading:
                flush()
                level, title = heading
                for deeper in [k for k in headings if k >= level]:
                    del headings[deeper]
                headings[level] = title
                continue
            if current is not None:
                current["lines"].append(line)
                kept += 1
                if page.number not in current["pages"]:
                    current["pages"].append(page.number)
            else:
                dropped += 1          # boxed article text, keyword lists, front matter
    flush()
    for row in rows:
        row["guide_version_date"] = version
        row["raw_sha256"] = raw_sha256
    problems = [] if rows else ["no numbered paragraph found"]
    lost = dropped - contents
    if rows and lost > MAX_LOST_LINE_SHARE * (lost + kept):
        problems.append(f"lost most of the guide: {lost} of {lost + kept} text lines fall outside numbered paragraphs "
                        f"(only {len(rows)} paragraph(s), numbered {rows[0]['para_no']} to {rows[-1]['para_no']}): "
                        "its paragraph numbering was lost (given from a later page, or numbers the extraction broke)")
    return GuideParse(rows, version, dropped, problems, kept)
