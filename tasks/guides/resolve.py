"""Citation → HUDOC itemid: first the links on the citing paragraph's pages, then name + year. Pure.

Linked titles are HUDOC docnames ('CASE OF McCANN AND OTHERS v. THE UNITED KINGDOM', or French
'AFFAIRE SOARE ET AUTRES c. ROUMANIE'); French itemids are swapped for the English judgment
through the French → English table where it knows them.
"""
from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field

NUMBER_RE = re.compile(r"\(\s*N(?:O|°|º)\.?\s*(\d+)\s*\)", re.I)
PREFIX_RE = re.compile(r"^\s*(?:CASE\s+OF|AFFAIRE)\s+", re.I)
VERSUS_RE = re.compile(r"\s+(?:v|c)\.\s+", re.I)
FRENCH_WORDS = [(r"\bET AUTRES\b", "AND OTHERS"), (r"\bET\b", "AND")]

NO_NAME = "no case name (ibid. or pinpoint without an earlier case)"
NO_MATCH = "no linked title on its page matches, and no judgment in the warehouse has that name and year"
AMBIGUOUS = "several linked titles match equally"


def compact(text: str | None) -> str:
    """Upper-case letters and digits only, accents and spaces gone ('Tomaši ć' == 'TOMASIC')."""
    if not text:
        return ""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    plain = plain.replace("ı", "i").replace("ł", "l").replace("ø", "o").replace("đ", "d").replace("Đ", "D")
    return re.sub(r"[^A-Z0-9]", "", plain.upper())


@dataclass(frozen=True)
class Title:
    itemid: str
    applicant: str        # compact
    respondent: str       # compact ('' when unknown)
    number: str | None
    french: bool
    text: str


def parse_title(itemid: str, title: str | None) -> Title | None:
    if not title:
        return None
    number_match = NUMBER_RE.search(title)
    number = number_match[1] if number_match else None
    body = NUMBER_RE.sub(" ", PREFIX_RE.sub("", title))
    french = bool(re.search(r"\s+c\.\s+", body)) or title.upper().startswith("AFFAIRE")
    parts = VERSUS_RE.split(body, maxsplit=1)
    applicant = parts[0].upper()
    if french:
        for pattern, english in FRENCH_WORDS:
            applicant = re.sub(pattern, english, applicant)
    respondent = "" if french or len(parts) < 2 else re.sub(r"\(.*?\)", " ", parts[1])
    return Title(itemid, compact(applicant), compact(respondent), number, french, title)


ITEMID_RE = re.compile(r"^\d{3}-\d+$")


def load_french_map(body: bytes) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """fre_id → (eng_id, eng_docname) from the French → English citation table, and the rows refused.

    A row is kept only when both ids are itemids and the English side is a judgment: the table also
    maps judgments to execution documents ('X AGAINST Y AND 7 OTHER CASES') and to 'NaN'."""
    mapping, refused = {}, []
    for row in csv.DictReader(io.StringIO(body.decode("utf-8-sig"))):
        fre_id, eng_id = (row.get("fre_id") or "").strip(), (row.get("eng_id") or "").strip()
        french = parse_title(fre_id, row.get("fre_docname"))
        english = parse_title(eng_id, row.get("eng_docname"))
        if not (ITEMID_RE.match(fre_id) and ITEMID_RE.match(eng_id)) or not french or not english:
            refused.append(f"{fre_id} -> {eng_id}: not two itemids with names")
        elif " AGAINST " in (row.get("eng_docname") or "").upper():
            refused.append(f"{fre_id} -> {eng_id}: {row.get('eng_docname')!r} is not {row.get('fre_docname')!r}")
        else:
            mapping[fre_id] = (eng_id, row["eng_docname"])
    return mapping, refused


@dataclass
class Resolver:
    french_map: dict[str, tuple[str, str]] = field(default_factory=dict)
    judgments: dict[tuple[str, str, int], list[str]] = field(default_factory=dict)   # (app, resp, year) → itemids

    def add_judgment(self, itemid: str, docname: str | None, year: int | None) -> None:
        title = parse_title(itemid, docname)
        if title and year and not title.french:
            self.judgments.setdefault((title.applicant, title.respondent, year), []).append(itemid)

    def titles(self, links: dict[str, str | None]) -> list[Title]:
        out = []
        for itemid, title in links.items():
            if itemid in self.french_map:
                english_id, english_name = self.french_map[itemid]
                parsed = parse_title(english_id, english_name or title)
            else:
                parsed = parse_title(itemid, title)
            if parsed:
                out.append(parsed)
        return out

    @staticmethod
    def _score(citation: dict, title: Title) -> int:
        applicant, respondent = compact(citation["applicant"]), compact(citation["respondent"])
        if not applicant:
            return 0
        if title.applicant == applicant:
            score = 4
        elif len(applicant) >= 6 and (title.applicant.startswith(applicant) or applicant.startswith(title.applicant)
                                      or title.applicant.endswith(applicant)):
            score = 2
        else:
            return 0
        if title.respondent:
            if title.respondent == respondent:
                score += 2
            elif len(title.respondent) >= 4 and respondent.startswith(title.respondent):
                score += 1          # a link whose text stops inside the respondent's name (PDF anchors)
            else:
                return 0
        if citation.get("no_number") and title.number:
            score += 1 if citation["no_number"] == title.number else -3
        elif title.number and title.number != "1" and not citation.get("no_number"):
            score -= 1
        return score

    def resolve(self, citation: dict, links: dict[str, str | None]) -> dict:
        """itemid, resolution_method, linked_title, unresolved_reason for one citation row."""
        if not citation.get("case_name"):
            return {"itemid": None, "resolution_method": None, "linked_title": None, "unresolved_reason": NO_NAME}
        scored = sorted(((self._score(citation, t), t) for t in self.titles(links)), key=lambda st: -st[0])
        scored = [(s, t) for s, t in scored if s > 0]
        if scored:
            best_score, best = scored[0]
            rivals = {t.itemid for s, t in scored if s == best_score}
            if len(rivals) == 1:
                original = next((i for i, e in self.french_map.items() if e[0] == best.itemid and i in links), None)
                method = "link_fr_to_en" if original else ("link_fr" if best.french else "link")
                return {"itemid": best.itemid, "resolution_method": method, "linked_title": best.text,
                        "unresolved_reason": None}
            ambiguous = AMBIGUOUS + f" ({', '.join(sorted(rivals))})"
        else:
            ambiguous = None
        key = (compact(citation["applicant"]), compact(citation["respondent"]), citation.get("year"))
        matches = self.judgments.get(key, [])
        if len(matches) == 1:
            return {"itemid": matches[0], "resolution_method": "name_year", "linked_title": None,
                    "unresolved_reason": None}
        reason = ambiguous or (NO_MATCH if not matches else f"several judgments match name and year ({len(matches)})")
        return {"itemid": None, "resolution_method": None, "linked_title": None, "unresolved_reason": reason}
