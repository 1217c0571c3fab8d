"""Case-name normalisation and lookup against the warehouse's case directory."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date

_LITERAL_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_VERSUS = re.compile(r"\b(?:vs?\.?|versus)\s", re.IGNORECASE)
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_NON_WORD = re.compile(r"[^a-z0-9 ]+")
_ABBREVIATIONS = {
    "co": "company", "corp": "corporation", "inc": "incorporated", "ins": "insurance",
    "assn": "association", "assoc": "association", "dept": "department", "comm": "commission",
    "natl": "national", "us": "united states", "u s": "united states", "bd": "board", "ed": "education",
}


def normalise_name(name: str, drop_parenthetical: bool = False) -> str:
    """A comparison key: decoded escapes, no accents, 'v' for versus, no punctuation, expanded abbreviations."""
    text = _LITERAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name or "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    if drop_parenthetical:
        text = _PARENTHETICAL.sub("", text)
    text = text.replace("&", " and ")
    text = _VERSUS.sub(" v ", text + " ").lower()
    text = text.replace("u.s.", "us").replace("'", "")
    words = _NON_WORD.sub(" ", text).split()
    words = [_ABBREVIATIONS.get(w, w) for w in words]
    return " ".join(words)


def split_case_names(value) -> list[str]:
    """A released cell as a list of names: a list, a JSON list string, or names joined by ';'."""
    if value is None:
        return []
    if isinstance(value, float) and value != value:
        return []
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        text = str(value).strip()
        if not text:
            return []
        if text.startswith("["):
            import json
            items = json.loads(text)
        else:
            items = text.split(";")
    return [str(item).strip() for item in items if item and str(item).strip()]


@dataclass(frozen=True)
class KnownCase:
    case_id: int | None
    name: str
    decided_date: date | None
    disposition: str | None
    source: str                 # scotus_cases | scotus_legacy | known_overrulings.csv
    first_party: str | None = None
    second_party: str | None = None
    term: str | None = None     # the Oyez term: "1971", or a range of terms for old cases ("1789-1850")
    date_source: str | None = None   # where decided_date comes from (default: the API table)

    @property
    def decided_from(self) -> str | None:
        if self.decided_date is None:
            return None
        return self.date_source or "scotus_cases decided_date"


class CaseDirectory:
    """Looks a case name up: exact normalised key first, then without a trailing '(1)'-style tag if unique."""

    def __init__(self, cases: list[KnownCase]):
        self._exact: dict[str, list[KnownCase]] = {}
        self._loose: dict[str, list[KnownCase]] = {}
        for case in cases:
            self._exact.setdefault(normalise_name(case.name), []).append(case)
            self._loose.setdefault(normalise_name(case.name, drop_parenthetical=True), []).append(case)

    def lookup(self, name: str) -> KnownCase | None:
        found = self.lookup_all(name)
        return found[0] if found else None

    def lookup_all(self, name: str) -> list[KnownCase]:
        """Every distinct case the name may mean (one per case id), best dated first; [] when none."""
        found = self._exact.get(normalise_name(name)) or []
        if not found:
            loose = self._loose.get(normalise_name(name, drop_parenthetical=True)) or []
            if len({c.case_id for c in loose}) == 1:
                found = loose
        # Prefer an entry that carries a decision date (the API table) over a dateless legacy row.
        ranked = sorted(found, key=lambda c: (c.decided_date is None, c.term is None, c.source != "scotus_cases"))
        distinct: dict = {}
        for case in ranked:
            distinct.setdefault(case.case_id if case.case_id is not None else ("name", case.name), case)
        return list(distinct.values())

    def add_dates(self, extra: dict, source: str) -> int:
        """Fill missing decision dates (and terms) from another source, by normalised name; returns how many
        cases gained a date. `extra` maps a name key to a date or to (date, term)."""
        filled = 0
        extra = {key: value if isinstance(value, tuple) else (value, None) for key, value in extra.items()}
        for key, cases in self._exact.items():
            if key not in extra:
                continue
            when, term = extra[key]
            for i, case in enumerate(cases):
                if (case.decided_date is None and when is not None) or (case.term is None and term):
                    dated = case.decided_date is None and when is not None
                    cases[i] = KnownCase(case.case_id, case.name, case.decided_date or when, case.disposition,
                                         case.source, case.first_party, case.second_party, case.term or term,
                                         source if dated else case.date_source)
                    filled += int(dated)
        for key, (when, term) in extra.items():
            if key not in self._exact:
                self._exact[key] = [KnownCase(None, key, when, None, source, term=term,
                                              date_source=source if when else None)]
                filled += int(when is not None)
        self._loose = {}
        for cases in self._exact.values():
            for case in cases:
                self._loose.setdefault(normalise_name(case.name, drop_parenthetical=True), []).append(case)
        return filled


def load_directory(con) -> CaseDirectory:
    from caseforge.warehouse.statements import sql_text
    rows = con.execute(sql_text("casefacts/case_directory.sql")).fetchall()
    return CaseDirectory([
        KnownCase(case_id=r[0], name=r[1], decided_date=r[3], disposition=r[4], source=r[7],
                  first_party=r[5], second_party=r[6], term=r[2])
        for r in rows
    ])
