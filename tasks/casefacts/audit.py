"""Audit of a CaseFacts-format claims file (the released JSON/CSV rows) against the warehouse.

Checks: overrulings whose overruling case was decided before the case it overrules, case names that
match no known case, identifier leaks in claim text, and claim length differences between labels.

Dates come from every source the audit is given: the API table's decision day, the known-overrulings
file's decision days, and the Oyez term of the API and legacy tables. Each date says its precision: two
days compare as days; otherwise the terms compare, and a pair that may fall in the same term is
"cannot tell", never "inverted". Every claim naming an overruling case gets a status and a reason.
"""
from __future__ import annotations

import csv
import json
import re
import statistics
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from scipy import stats

from caseforge.tasks.casefacts.leaks import find_leaks
from caseforge.tasks.casefacts.names import CaseDirectory, KnownCase, normalise_name, split_case_names


def read_claims_file(path: Path) -> list[dict]:
    """Rows with claim, case_name (list), overruling_case (list), label; JSON list, JSONL or CSV."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"claims file not found: {path}")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        raw = list(csv.DictReader(text.splitlines()))
    elif path.suffix.lower() == ".jsonl":
        raw = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        raw = json.loads(text)
        if isinstance(raw, dict):
            raw = raw.get("data") or raw.get("rows") or list(raw.values())
    rows = []
    for i, row in enumerate(raw):
        if "claim" not in row or "label" not in row:
            raise ValueError(f"{path}: row {i} lacks 'claim' or 'label' (keys: {sorted(row)})")
        label = row.get("class") if str(row["label"]).isdigit() and row.get("class") else row["label"]
        rows.append({
            "row": i,
            "claim": str(row["claim"]),
            "case_name": split_case_names(row.get("case_name")),
            "overruling_case": split_case_names(row.get("overruling_case")),
            "label": str(label).strip().capitalize(),
        })
    return rows


def read_known_dates(path: Path) -> dict[str, tuple[date | None, str | None]]:
    """(decision date, term) by normalised name from a known-overrulings CSV (both sides of each pair)."""
    dates: dict[str, tuple[date | None, str | None]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for side in ("overruled", "overruling"):
                name, when, term = row.get(f"{side}_name"), row.get(f"{side}_decided"), row.get(f"{side}_term")
                if name and (when or term):
                    dates[normalise_name(name)] = (date.fromisoformat(when) if when else None, term or None)
    return dates


# -- when was a case decided, and how precisely ------------------------------------------------------------
_TERM = re.compile(r"^\s*(\d{4})\s*(?:-\s*(\d{4}))?\s*$")


@dataclass(frozen=True)
class WhenDecided:
    """A decision day when a source gives one, else the Oyez term(s) it fell in (first, last)."""
    day: date | None
    terms: tuple[int, int] | None
    source: str

    @property
    def precision(self) -> str:
        return "day" if self.day else "term"

    def value(self) -> str:
        if self.day:
            return self.day.isoformat()
        first, last = self.terms
        return f"OT {first}" if first == last else f"OT {first}-{last}"

    def record(self) -> dict:
        return {"value": self.value(), "precision": self.precision, "source": self.source}


def parse_term(term: str | None) -> tuple[int, int] | None:
    """"1971" → (1971, 1971); "1789-1850" (Oyez groups the oldest terms) → (1789, 1850); else None."""
    match = _TERM.match(term or "")
    if not match:
        return None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) else first
    return (first, last) if first <= last else None


def terms_of_day(day: date) -> tuple[int, int]:
    """The October Term(s) a decision day can belong to: October T runs from October T into the summer
    of T+1 (before 1917 terms opened in other months, so both candidate years stay open then)."""
    if day.year < 1917 or day.month in (8, 9):
        return (day.year - 1, day.year)
    return (day.year, day.year) if day.month >= 10 else (day.year - 1, day.year - 1)


def when_decided(case: KnownCase) -> WhenDecided | None:
    terms = parse_term(case.term)
    if case.decided_date is not None:
        return WhenDecided(case.decided_date, terms or terms_of_day(case.decided_date), case.decided_from)
    if terms:
        return WhenDecided(None, terms, f"{case.source} term")
    return None


def compare(old: WhenDecided, new: WhenDecided) -> tuple[str, str]:
    """(verdict, precision) for "new overrules old": inverted | in_order | cannot_tell, at day or term
    precision. Two days compare as days (the same day: cannot tell); otherwise terms compare, and a pair
    that may share a term is "cannot tell", never "inverted"."""
    if old.day and new.day:
        if new.day < old.day:
            return "inverted", "day"
        return ("in_order" if new.day > old.day else "cannot_tell"), "day"
    if new.terms[1] < old.terms[0]:
        return "inverted", "term"
    if new.terms[0] > old.terms[1]:
        return "in_order", "term"
    return "cannot_tell", "term"


def _combined(verdicts: list[tuple[str, str]]) -> tuple[str, str]:
    """A name that may mean several cases: a verdict only when every reading agrees."""
    kinds = {v for v, _ in verdicts}
    precision = "day" if all(p == "day" for _, p in verdicts) else "term"
    return (kinds.pop() if len(kinds) == 1 else "cannot_tell"), precision


UNCHECKED_REASONS = {"unmatched": "name matches no case", "undated": "no date or term",
                     "self": "overruling case is the claim's own case"}


def check_pair(old_name: str, new_name: str, directory: CaseDirectory) -> dict:
    """One (overruled, overruling) pair: its verdict, precision, dates and their sources, or why unchecked."""
    pair = {"case_name": old_name, "overruling_case": new_name}
    if normalise_name(old_name) == normalise_name(new_name):
        return {**pair, "verdict": "unchecked", "why": "self", "missing": [],
                "reason": "the overruling case is the claim's own case"}
    sides, problems = [], []
    for name in (old_name, new_name):
        cases = directory.lookup_all(name)
        dated = [w for w in (when_decided(c) for c in cases) if w is not None]
        if not cases:
            problems.append(("unmatched", name, f"'{name}' matches no case in the warehouse"))
        elif not dated:
            problems.append(("undated", name, f"'{name}' has no decision date or term in any source"))
        sides.append(dated)
    if problems:
        return {**pair, "verdict": "unchecked", "why": problems[0][0], "missing": [n for _, n, _ in problems],
                "reason": "; ".join(text for _, _, text in problems)}
    verdict, precision = _combined([compare(o, n) for o in sides[0] for n in sides[1]])
    old, new = sides[0][0], sides[1][0]
    result = {**pair, "verdict": verdict, "precision": precision, "case_date": old.record(),
              "overruling_date": new.record(), "ambiguous": len(sides[0]) > 1 or len(sides[1]) > 1}
    if result["ambiguous"]:       # a caption decided more than once: every reading, and the verdict only if all agree
        result["case_dates"] = [w.record() for w in sides[0]]
        result["overruling_dates"] = [w.record() for w in sides[1]]
    return result


def _claim_status(pairs: list[dict]) -> tuple[str, str]:
    verdicts = [p["verdict"] for p in pairs]
    if "inverted" in verdicts:
        return "inverted", "; ".join(f"'{p['overruling_case']}' ({p['overruling_date']['value']}) was decided before "
                                     f"'{p['case_name']}' ({p['case_date']['value']})"
                                     for p in pairs if p["verdict"] == "inverted")
    unchecked = [p for p in pairs if p["verdict"] == "unchecked"]
    if unchecked:
        return "unchecked", "; ".join(dict.fromkeys(p["reason"] for p in unchecked))
    if "cannot_tell" in verdicts:
        return "cannot_tell", "; ".join(
            (f"'{p['case_name']}' or '{p['overruling_case']}' names several cases whose order differs"
             if p["ambiguous"] else f"'{p['overruling_case']}' and '{p['case_name']}' may share a {p['precision']}")
            for p in pairs if p["verdict"] == "cannot_tell")
    return "in_order", "every overruling case was decided after the case it overrules"


def check_overrulings(rows: list[dict], directory: CaseDirectory) -> list[dict]:
    """Per claim naming an overruling case: every (case, overruling case) pair checked, and the claim's status
    (inverted | in_order | cannot_tell | unchecked) with the reason."""
    per_claim = []
    for row in rows:
        if not row["overruling_case"]:
            continue
        pairs = [check_pair(old, new, directory) for old in row["case_name"] for new in row["overruling_case"]]
        # the overruling case may also be listed among the claim's cases: that pair says nothing
        pairs = [p for p in pairs if p.get("why") != "self"] or pairs
        status, reason = _claim_status(pairs)
        per_claim.append({"row": row["row"], "claim": row["claim"], "label": row["label"],
                          "case_name": row["case_name"], "overruling_case": row["overruling_case"],
                          "status": status, "reason": reason, "pairs": pairs})
    return per_claim


def _length_by_label(rows: list[dict]) -> dict:
    by_label: dict[str, list[int]] = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(len(row["claim"]))
    summary = {label: {"n": len(v), "mean_chars": round(statistics.fmean(v), 1),
                       "median_chars": statistics.median(v)} for label, v in sorted(by_label.items())}
    result: dict = {"per_label": summary}
    groups = [v for v in by_label.values() if len(v) > 1]
    if len(groups) >= 2:
        h, p = stats.kruskal(*groups)
        result["kruskal_wallis"] = {"H": round(float(h), 3), "p_value": float(p)}
    if "Supported" in by_label and "Refuted" in by_label:
        u, p = stats.mannwhitneyu(by_label["Supported"], by_label["Refuted"])
        ks, ks_p = stats.ks_2samp(by_label["Supported"], by_label["Refuted"])
        result["supported_vs_refuted"] = {"mann_whitney_U": float(u), "p_value": float(p),
                                          "ks_statistic": round(float(ks), 4), "ks_p_value": float(ks_p)}
    return result


def audit_claims(rows: list[dict], directory: CaseDirectory, date_sources: list[str]) -> dict:
    unmatched: dict[str, int] = {}
    parties: dict[str, tuple] = {}

    def lookup(name: str):
        case = directory.lookup(name)
        if case is None:
            unmatched[name] = unmatched.get(name, 0) + 1
        else:
            parties[name] = (case.first_party, case.second_party)
        return case

    for row in rows:
        for name in row["case_name"] + row["overruling_case"]:
            lookup(name)
    per_claim = check_overrulings(rows, directory)
    pairs = [p for claim in per_claim for p in claim["pairs"]]
    date_inverted = [{"claim": claim["claim"], "case_name": p["case_name"], "overruling_case": p["overruling_case"],
                      "case_decided": p["case_date"]["value"], "overruling_decided": p["overruling_date"]["value"],
                      "precision": p["precision"], "case_date_source": p["case_date"]["source"],
                      "overruling_date_source": p["overruling_date"]["source"]}
                     for claim in per_claim for p in claim["pairs"] if p["verdict"] == "inverted"]
    unchecked = [{"claim": claim["claim"], "case_name": p["case_name"], "overruling_case": p["overruling_case"],
                  "reason": p["reason"], "missing": p["missing"]}
                 for claim in per_claim for p in claim["pairs"] if p["verdict"] == "unchecked"]
    statuses = [claim["status"] for claim in per_claim]
    reasons: dict[str, int] = {}
    for claim in per_claim:
        if claim["status"] == "unchecked":
            for why in dict.fromkeys(p["why"] for p in claim["pairs"] if p["verdict"] == "unchecked"):
                reasons[UNCHECKED_REASONS[why]] = reasons.get(UNCHECKED_REASONS[why], 0) + 1
    leaked = []
    for row in rows:
        leaks = find_leaks(row["claim"], row["case_name"] + row["overruling_case"], parties)
        if leaks:
            leaked.append({"claim": row["claim"], "label": row["label"], "leaks": leaks})
    labels: dict[str, int] = {}
    for row in rows:
        labels[row["label"]] = labels.get(row["label"], 0) + 1
    checked = [p for p in pairs if p["verdict"] != "unchecked"]
    return {
        "summary": {
            "claims": len(rows),
            "labels": labels,
            "date_sources": date_sources,
            "overruled_claims_with_overruling_case": len(per_claim),
            "claims_overruled_checked": sum(s != "unchecked" for s in statuses),
            "claims_overruled_inverted": statuses.count("inverted"),
            "claims_overruled_in_order": statuses.count("in_order"),
            "claims_overruled_cannot_tell": statuses.count("cannot_tell"),
            "claims_overruled_unchecked": statuses.count("unchecked"),
            "unchecked_reasons": dict(sorted(reasons.items())),
            "overruling_pairs": len(pairs),
            "overruling_pairs_checked": len(checked),
            "overruling_pairs_checked_by_day": sum(p["precision"] == "day" for p in checked),
            "overruling_pairs_checked_by_term": sum(p["precision"] == "term" for p in checked),
            "overruling_pairs_cannot_tell": sum(p["verdict"] == "cannot_tell" for p in pairs),
            "overruling_pairs_unchecked": len(unchecked),
            "date_inverted": len(date_inverted),
            "unmatched_case_names": len(unmatched),
            "claims_with_leaked_identifiers": len(leaked),
        },
        "date_inverted": date_inverted,
        "unchecked_overruling_pairs": unchecked,
        "per_claim": per_claim,
        "unmatched_case_names": [{"case_name": n, "claims": c} for n, c in sorted(unmatched.items())],
        "leaked_identifiers": leaked,
        "length_by_label": _length_by_label(rows),
    }
