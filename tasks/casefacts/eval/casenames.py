"""Match Supreme Court case names written by people or models to case ids.

Names are normalised (literal "\\u00e9"-style escapes decoded, as the builder's normaliser does;
accents, case, punctuation, "v."/"vs."/"versus", "et al.", "&", trailing "(1)"-style counters,
"Inc."/"Co." endings) and looked up exactly; a name with no exact match is
matched fuzzily (difflib ratio ≥ threshold) against the normalised names. One name may map to
several ids (the same caption decided twice); all of them count as that case.
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

DEFAULT_FUZZY_THRESHOLD = 0.9

_LITERAL_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_COUNTER = re.compile(r"\(\s*\d+\s*\)\s*$")
_ET_AL = re.compile(r"\bet\.?\s+al\.?", re.IGNORECASE)
_VERSUS = re.compile(r"\b(?:vs?|versus)\b\.?", re.IGNORECASE)
_NON_WORD = re.compile(r"[^a-z0-9 ]+")
_SPACES = re.compile(r"\s+")
_US = re.compile(r"\bU\.\s*S\.(?:\s*A\.)?")
_CORPORATE = re.compile(r"\b(?:inc|co|corp|company|corporation|ltd|llc)\b")
_ABBREVIATIONS = {"ins": "insurance", "assn": "association", "dept": "department", "natl": "national",
                  "intl": "international", "bd": "board", "educ": "education", "govt": "government",
                  "commn": "commission", "univ": "university", "mfg": "manufacturing", "r": "railroad",
                  "ry": "railway", "us": "united states", "sec": "securities and exchange commission"}


def normalise_case_name(name: str) -> str:
    text = _LITERAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name or "")
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.replace("’", "'").replace("&", " and ")
    text = _COUNTER.sub("", text.strip())
    text = _ET_AL.sub(" ", text)
    text = _US.sub(" United States ", text)
    text = _VERSUS.sub(" v ", text.lower())
    text = text.replace("'", "")
    text = _NON_WORD.sub(" ", text)
    text = _CORPORATE.sub(" ", text)
    words = [_ABBREVIATIONS.get(word, word) for word in text.split()]
    return " ".join(words)


def _sides(key: str) -> tuple[str, str]:
    first, _, second = key.partition(" v ")
    return first, second


@dataclass(frozen=True)
class NameMatch:
    name: str
    case_ids: frozenset[str]
    how: str               # exact | fuzzy | none
    similarity: float


class CaseNameIndex:
    def __init__(self, names: list[tuple[str, str]], threshold: float = DEFAULT_FUZZY_THRESHOLD):
        self.threshold = threshold
        self.by_name: dict[str, set[str]] = {}
        self.names_of: dict[str, str] = {}
        for case_id, name in names:
            key = normalise_case_name(name)
            if key:
                self.by_name.setdefault(key, set()).add(str(case_id))
                self.names_of.setdefault(str(case_id), name)
        self._keys = list(self.by_name)
        self._memo: dict[str, NameMatch] = {}

    def resolve(self, name: str) -> NameMatch:
        if name in self._memo:
            return self._memo[name]
        key = normalise_case_name(name)
        if key in self.by_name:
            match = NameMatch(name, frozenset(self.by_name[key]), "exact", 1.0)
        else:
            match = self._fuzzy(name, key)
        self._memo[name] = match
        return match

    def _fuzzy(self, name: str, key: str) -> NameMatch:
        """Both parties must each be similar: "Borden v. United States" is not "Gordon v. United States"."""
        best_key, best = None, 0.0
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(key)
        first, second = _sides(key)
        for candidate in self._keys:
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() < self.threshold or matcher.quick_ratio() < self.threshold:
                continue
            ratio = matcher.ratio()
            if ratio <= best or ratio < self.threshold:
                continue
            c_first, c_second = _sides(candidate)
            if min(difflib.SequenceMatcher(None, first, c_first).ratio(),
                   difflib.SequenceMatcher(None, second, c_second).ratio()) < self.threshold:
                continue
            best_key, best = candidate, ratio
        if best_key is None or best < self.threshold:
            return NameMatch(name, frozenset(), "none", best)
        return NameMatch(name, frozenset(self.by_name[best_key]), "fuzzy", best)
