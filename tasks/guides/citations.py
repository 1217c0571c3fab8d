"""Case citations in guide paragraphs: '(McCann and Others v. the United Kingdom, 1995, § 146)'. Pure.

A citation is anchored on ' v. ' between an applicant and a respondent State followed by a year;
'Article 6 § 1' or 'Rule 77 §§ 2 and 3' therefore never match. 'ibid.' and a bare '(§ 62)' repeat
the case cited just before them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

VERSUS_RE = re.compile(r"(?<=\s)v\.\s+")
SECTION_SIGN = r"(?:§\s*§|§§|§)"
TAG_RE = r"(?:\[\s*GC\s*\]|\([^()]{1,60}\))"
FORWARD_RE = re.compile(
    r"(?P<resp>(?:the\s+)?[^\W\d_][^,;()\[\]§]*?)\s*"
    r"(?P<tags>(?:" + TAG_RE + r"\s*,?\s*)*?)"
    r",\s*(?P<year>\d{3,4})(?!\d)"
    r"(?P<pins>\s*,?\s*" + SECTION_SIGN + r"\s*\d[\d\s,\-–‑]*(?:\s*and\s*\d[\d\s\-–‑]*)*)?"
)
PIN_TOKEN_RE = re.compile(r"(\d+)(?:\s*[-–‑]\s*(\d+))?")
BARE_PIN_RE = re.compile(r"\(\s*(" + SECTION_SIGN + r"\s*\d[\d\s,\-–‑and]*)\)")
IBID_RE = re.compile(r"\bibid\.?(?P<pins>\s*,?\s*" + SECTION_SIGN + r"\s*\d[\d\s,\-–‑]*(?:\s*and\s*\d[\d\s\-–‑]*)*)?",
                     re.I)
CONNECTORS = {"and", "of", "de", "da", "di", "do", "dos", "das", "del", "della", "van", "von", "der", "den", "la",
              "le", "du", "des", "y", "e", "on", "behalf", "for", "al", "el", "ve", "und", "ar"}
LEADING_WORDS = {"In", "See", "Also", "Cf.", "Compare", "Contrast", "Unlike", "As", "Following", "Like", "By",
                 "And", "But", "Both", "Thus", "Moreover", "However", "Similarly", "Likewise", "While"}
INITIALS_RE = re.compile(r"^(?:[A-Z][a-z]?\.)+(?:[A-Z][a-z]?)?$|^Mc\.?$")
SIGNALS = [
    ("see, mutatis mutandis", "see, mutatis mutandis"), ("mutatis mutandis", "mutatis mutandis"),
    ("see, by contrast", "by contrast"), ("by contrast", "by contrast"), ("a contrario", "a contrario"),
    ("see also", "see also"), ("see, among other authorities", "see"), ("see, for example", "see"),
    ("see, in particular", "see"), ("compare", "compare"), ("contrast", "by contrast"), ("cf.", "cf."), ("see", "see"),
]
SIGNAL_WINDOW = 45
MAX_RANGE = 400

COLUMNS = ["guide_id", "para_no", "ordinal", "case_name", "applicant", "respondent", "year", "grand_chamber",
           "is_decision", "no_number", "pinpoints", "whole_case", "signal", "is_ibid", "repeats_previous",
           "raw_citation"]


@dataclass
class Citation:
    case_name: str
    applicant: str
    respondent: str
    year: int | None
    grand_chamber: bool
    is_decision: bool
    no_number: str | None
    pinpoints: list[int]
    signal: str | None
    raw: str
    start: int
    is_ibid: bool = False
    repeats_previous: bool = False
    problem: str | None = None          # why this citation cannot be trusted as read (a year the extraction cut)

    @property
    def whole_case(self) -> bool:
        return not self.pinpoints


def expand_pinpoints(text: str) -> list[int]:
    """'§§ 55- 61' → 55..61; '§ § 138 -139'; '§§ 56 and 57'; '§§ 123-28' (abbreviated end) → 123..128."""
    text = re.sub(SECTION_SIGN, " ", text)
    numbers: list[int] = []
    for match in PIN_TOKEN_RE.finditer(text):
        low = int(match[1])
        if match[2] is None:
            numbers.append(low)
            continue
        high_text = match[2]
        high = int(high_text)
        if high < low and len(high_text) < len(match[1]):
            high = int(match[1][: len(match[1]) - len(high_text)] + high_text)
        if low <= high <= low + MAX_RANGE:
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend([low, high])
    return list(dict.fromkeys(numbers))


# Respondent States as the guides write them; a respondent the PDF extraction split ('L atvia', 'Switzerl and')
# is rejoined when its letters spell one of these.
RESPONDENT_STATES = (
    "Albania", "Andorra", "Armenia", "Austria", "Azerbaijan", "Belgium", "Bosnia and Herzegovina", "Bulgaria",
    "Croatia", "Cyprus", "the Czech Republic", "Czechoslovakia", "Denmark", "Estonia", "Finland", "France",
    "Georgia", "Germany", "the Federal Republic of Germany", "Greece", "Hungary", "Iceland", "Ireland", "Italy",
    "Latvia", "Liechtenstein", "Lithuania", "Luxembourg", "Malta", "the Republic of Moldova", "Moldova", "Monaco",
    "Montenegro", "the Netherlands", "North Macedonia", "the former Yugoslav Republic of Macedonia", "Norway",
    "Poland", "Portugal", "Romania", "Russia", "San Marino", "Serbia", "Serbia and Montenegro",
    "the Slovak Republic", "Slovakia", "Slovenia", "Spain", "Sweden", "Switzerland", "Turkey", "Türkiye", "Ukraine",
    "the United Kingdom",
)
_STATE_BY_LETTERS = {re.sub(r"[^a-z]", "", state.casefold()): state for state in RESPONDENT_STATES}
FIRST_YEAR, LAST_YEAR = 1950, 2100       # the Convention was signed in 1950


def _respondent(text: str) -> str:
    """The respondent as read, or the State its letters spell when the extraction split it."""
    return _STATE_BY_LETTERS.get(re.sub(r"[^a-z]", "", text.casefold()), text)


def _year(text: str) -> tuple[int | None, str | None]:
    """(year, problem): a four-digit year of the Court's time, or None and why the printed one is not."""
    if len(text) != 4:
        return None, f"year {text!r} is not a four-digit year (cut by the PDF extraction?)"
    year = int(text)
    if not FIRST_YEAR <= year <= LAST_YEAR:
        return None, f"year {text!r} is not a year of the Convention's case-law ({FIRST_YEAR}-{LAST_YEAR})"
    return year, None


COMMON_SHORT_WORDS = {"in", "at", "to", "by", "as", "is", "an", "a", "or", "per", "its", "his", "her", "see", "cf",
                      "was", "not", "but", "who", "had", "has", "if", "so", "no"}


def _word_fragment(word: str, tokens: list, token) -> bool:
    index = tokens.index(token)
    before = tokens[index - 1][0] if index else ""
    return (len(word) <= 3 and word.isalpha() and word.islower() and word not in COMMON_SHORT_WORDS
            and before[:1].isupper() and before[-1:].isalpha())


def _join_fragments(name: str) -> str:
    words = name.split()
    out: list[str] = []
    for word in words:
        if out and len(word) <= 3 and word.isalpha() and word.islower() and word not in CONNECTORS \
                and word not in COMMON_SHORT_WORDS and out[-1][:1].isupper():
            out[-1] += word
        else:
            out.append(word)
    return " ".join(out)


def _applicant(text: str, end: int) -> tuple[str, int] | None:
    """The applicant's name just before ' v. ' (ending at `end`) and where it starts."""
    tokens = list(re.finditer(r"\S+", text[:end]))
    start = None
    for token in reversed(tokens):
        word = token[0]
        if word.startswith(("(", "[")):
            inner = word.lstrip("([")
            if inner and (inner[0].isupper()):
                start = token.start() + (len(word) - len(inner))
            break
        if word.endswith((",", ";", ")", ":")) or word in {"-", "–"}:
            break
        if word.endswith(".") and not INITIALS_RE.match(word):
            break
        if word[0].isupper() or word in CONNECTORS or (word[0] in "-‑" and word[1:2].isupper()):
            start = token.start()
            continue
        if _word_fragment(word, tokens, token):
            continue          # 'Tomaši ć', 'Ribche va': a word split by PDF extraction
        break
    if start is None:
        return None
    words = text[start:end].split()
    while words and (words[0] in CONNECTORS or words[0] in LEADING_WORDS):
        start = text.index(words[1], start + len(words[0])) if len(words) > 1 else end
        words = words[1:]
    if not words:
        return None
    return _join_fragments(" ".join(words)), start


def _signal(text: str, start: int, boundary: int) -> str | None:
    window = text[max(boundary, start - SIGNAL_WINDOW):start].lower()
    window = re.sub(r"\s+", " ", window).strip(" ,;(")
    for phrase, name in SIGNALS:
        if re.search(r"(?:^|[\s,(;])" + re.escape(phrase) + r"[\s,]*$", window):
            return name
    return None


def _tags(tags: str) -> tuple[bool, bool, str | None]:
    flat = re.sub(r"\s+", "", tags.lower())
    number = re.search(r"\(no\.?(\d+)\)", flat)
    return "[gc]" in flat, "(dec.)" in flat or "(dec)" in flat, number[1] if number else None


def _clean(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip(" ,")


def extract_citations(text: str) -> list[Citation]:
    """Citations in order of appearance, ibid./bare pinpoints resolved to the case before them."""
    found: list[Citation] = []
    last_end = 0
    for versus in VERSUS_RE.finditer(text):
        forward = FORWARD_RE.match(text, versus.end())
        if not forward:
            continue
        applicant = _applicant(text, versus.start())
        if not applicant:
            continue
        name, start = applicant
        respondent = _respondent(_clean(forward["resp"]))
        grand_chamber, decision, number = _tags(forward["tags"] or "")
        pins = expand_pinpoints(forward["pins"]) if forward["pins"] else []
        case_name = f"{_clean(name)} v. {respondent}" + (f" (no. {number})" if number else "")
        boundary = max(text.rfind(";", 0, start), text.rfind("(", 0, start), last_end)
        year, problem = _year(forward["year"])
        found.append(Citation(case_name, _clean(name), respondent, year, grand_chamber, decision,
                              number, pins, _signal(text, start, boundary), _clean(text[start:forward.end()]), start,
                              problem=problem))
        last_end = forward.end()
    repeats = [(m.start(), m, True) for m in IBID_RE.finditer(text)]
    repeats += [(m.start(), m, False) for m in BARE_PIN_RE.finditer(text)]
    for position, match, ibid in sorted(repeats, key=lambda r: r[0]):
        before = [c for c in found if c.start < position and not c.is_ibid and not c.repeats_previous]
        pins = expand_pinpoints(match["pins"] if ibid else match[1]) if (not ibid or match["pins"]) else []
        if before:
            base = before[-1]
            found.append(Citation(base.case_name, base.applicant, base.respondent, base.year, base.grand_chamber,
                                  base.is_decision, base.no_number, pins, None, _clean(match[0]), position,
                                  is_ibid=ibid, repeats_previous=not ibid, problem=base.problem))
        else:
            found.append(Citation("", "", "", None, False, False, None, pins, None, _clean(match[0]), position,
                                  is_ibid=ibid, repeats_previous=not ibid))
    return sorted(found, key=lambda c: c.start)


def citation_rows(guide_id: str, paragraphs: list[dict], previous_case: Citation | None = None) -> list[dict]:
    """Rows of curated.guide_citations for a guide's paragraphs (ibid. at a paragraph start looks back)."""
    rows = []
    for paragraph in paragraphs:
        citations = extract_citations(paragraph["text"])
        for ordinal, citation in enumerate(citations, start=1):
            if (citation.is_ibid or citation.repeats_previous) and not citation.case_name and previous_case:
                citation = Citation(previous_case.case_name, previous_case.applicant, previous_case.respondent,
                                    previous_case.year, previous_case.grand_chamber, previous_case.is_decision,
                                    previous_case.no_number, citation.pinpoints, None, citation.raw, citation.start,
                                    citation.is_ibid, citation.repeats_previous, previous_case.problem)
            if citation.case_name and not (citation.is_ibid or citation.repeats_previous):
                previous_case = citation
            rows.append({
                "guide_id": guide_id, "para_no": paragraph["para_no"], "ordinal": ordinal,
                "case_name": citation.case_name or None, "applicant": citation.applicant or None,
                "respondent": citation.respondent or None, "year": citation.year,
                "grand_chamber": citation.grand_chamber, "is_decision": citation.is_decision,
                "no_number": citation.no_number, "pinpoints": citation.pinpoints, "whole_case": citation.whole_case,
                "signal": citation.signal, "is_ibid": citation.is_ibid, "repeats_previous": citation.repeats_previous,
                "raw_citation": citation.raw,
            })
            if citation.problem:
                rows[-1]["problem"] = citation.problem      # the stage counts and logs it (not a column)
    return rows
