"""Identifier leaks in claim text: party names, dates, 'the court found' phrasing, glued words, escapes."""
from __future__ import annotations

import re

_YEAR = re.compile(r"\b(?:1[6-9]\d\d|20\d\d)\b")
_MONTH_DATE = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\s+\d{1,2}(?:,\s*\d{4})?\b")
_COURT_PHRASING = re.compile(
    r"\b(?:the\s+(?:supreme\s+)?court\s+(?:found|held|ruled|concluded|decided|determined|reasoned)"
    r"|this\s+case\b|the\s+(?:petitioner|respondent|appellant|appellee)s?\b)",
    re.IGNORECASE)
_CASE_CITATION = re.compile(r"\b[A-Z][\w.'&-]*(?:\s+[A-Z][\w.'&-]*)*\s+v\.\s+[A-Z]")
_GLUED = re.compile(r"\b[a-z]{2,}(?:[A-Z][a-z]+)")
_LITERAL_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")

# Party words that name nobody in particular: they appear in general legal principles too.
GENERIC_PARTY_WORDS = {
    "united", "states", "state", "america", "city", "county", "town", "village", "commonwealth",
    "people", "board", "education", "department", "commission", "commissioner", "secretary", "director",
    "company", "corporation", "incorporated", "inc", "co", "corp", "association", "union", "district",
    "school", "national", "federal", "american", "international", "bank", "insurance", "internal",
    "revenue", "service", "labor", "relations", "court", "general", "attorney", "warden", "officer",
    "police", "public", "authority", "administration", "agency", "bureau", "council", "university",
    "college", "hospital", "church", "life", "health", "county", "local", "workers", "employees",
    "trust", "estate", "industries", "railroad", "railway", "electric", "power", "light", "communications",
    "florida", "texas", "california", "new", "york", "ohio", "virginia", "carolina", "north", "south",
    "west", "east", "michigan", "illinois", "georgia", "alabama", "arizona", "arkansas", "colorado",
    "connecticut", "delaware", "hawaii", "idaho", "indiana", "iowa", "kansas", "kentucky", "louisiana",
    "maine", "maryland", "massachusetts", "minnesota", "mississippi", "missouri", "montana", "nebraska",
    "nevada", "hampshire", "jersey", "mexico", "dakota", "oklahoma", "oregon", "pennsylvania", "rhode",
    "island", "tennessee", "utah", "vermont", "washington", "wisconsin", "wyoming", "alaska", "the", "of",
    "and", "for", "et", "al", "ex", "rel", "parte", "in", "re", "doe", "roe", "others", "does", "v",
    "securities", "exchange", "environmental", "protection", "federal", "trade", "communications",
    "immigration", "naturalization", "energy", "regulatory", "election", "elections", "human", "rights",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def party_tokens(case_name: str, extra_parties: tuple[str | None, ...] = ()) -> set[str]:
    """Distinctive capitalised words of the parties (surnames, company names), generic words removed."""
    words = set()
    for text in (case_name, *extra_parties):
        for word in _WORD.findall(text or ""):
            lowered = word.lower().strip("'")
            if len(lowered) >= 4 and word[0].isupper() and lowered not in GENERIC_PARTY_WORDS:
                words.add(word.strip("'"))
    return words


def find_leaks(claim: str, case_names: list[str], parties: dict[str, tuple] | None = None) -> list[str]:
    """One short description per leak found in the claim (empty when clean)."""
    found: list[str] = []
    for pattern, kind in ((_YEAR, "year"), (_MONTH_DATE, "date")):
        found += [f"{kind}: {m.group(0)}" for m in pattern.finditer(claim)]
    found += [f"court phrasing: {m.group(0)}" for m in _COURT_PHRASING.finditer(claim)]
    found += [f"case citation: {m.group(0)}" for m in _CASE_CITATION.finditer(claim)]
    found += [f"glued words: {m.group(0)}" for m in _GLUED.finditer(claim)]
    found += [f"literal escape: {m.group(0)}" for m in _LITERAL_ESCAPE.finditer(claim)]
    claim_words = set(_WORD.findall(claim))
    for name in case_names:
        extra = (parties or {}).get(name, ())
        for token in sorted(party_tokens(name, extra) & claim_words):
            found.append(f"party name: {token} ({name})")
    return found
