"""Audit of a CaseFacts-format claims file (the released JSON/CSV rows) against the warehouse.

Checks: overrulings whose overruling case was decided before the case it overrules (by decision
date, never term), case names that match no known case, identifier leaks in claim text, and claim
length differences between labels.
"""
from __future__ import annotations

import csv
import json
import statistics
from datetime import date
from pathlib import Path

from scipy import stats

from caseforge.tasks.casefacts.leaks import find_leaks
from caseforge.tasks.casefacts.names import CaseDirectory, normalise_name, split_case_names


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


def read_known_dates(path: Path) -> dict[str, date]:
    """Decision dates by normalised name from known_overrulings.csv (both sides of each pair)."""
    dates: dict[str, date] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for side in ("overruled", "overruling"):
                name, when = row.get(f"{side}_name"), row.get(f"{side}_decided")
                if name and when:
                    dates[normalise_name(name)] = date.fromisoformat(when)
    return dates


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

    date_inverted, checked, unchecked = [], 0, []
    overruled_rows = 0
    for row in rows:
        cases = {name: lookup(name) for name in row["case_name"]}
        rulers = {name: lookup(name) for name in row["overruling_case"]}
        if not row["overruling_case"]:
            continue
        overruled_rows += 1
        ruler_keys = {normalise_name(n) for n in rulers}
        for old_name, old in cases.items():
            if normalise_name(old_name) in ruler_keys:
                continue          # the overruling case also listed as evidence
            for new_name, new in rulers.items():
                old_date = old.decided_date if old else None
                new_date = new.decided_date if new else None
                if old_date is None or new_date is None:
                    unchecked.append({"claim": row["claim"], "case_name": old_name, "overruling_case": new_name,
                                      "missing": [n for n, d in ((old_name, old_date), (new_name, new_date))
                                                  if d is None]})
                    continue
                checked += 1
                if new_date <= old_date:
                    date_inverted.append({"claim": row["claim"], "case_name": old_name, "overruling_case": new_name,
                                          "case_decided": old_date.isoformat(),
                                          "overruling_decided": new_date.isoformat()})
    leaked = []
    for row in rows:
        leaks = find_leaks(row["claim"], row["case_name"] + row["overruling_case"], parties)
        if leaks:
            leaked.append({"claim": row["claim"], "label": row["label"], "leaks": leaks})
    labels: dict[str, int] = {}
    for row in rows:
        labels[row["label"]] = labels.get(row["label"], 0) + 1
    pairs_total = checked + len(unchecked)
    return {
        "summary": {
            "claims": len(rows),
            "labels": labels,
            "date_sources": date_sources,
            "overruled_claims_with_overruling_case": overruled_rows,
            "overruling_pairs": pairs_total,
            "overruling_pairs_checked": checked,
            "overruling_pairs_unchecked_missing_date": len(unchecked),
            "date_inverted": len(date_inverted),
            "unmatched_case_names": len(unmatched),
            "claims_with_leaked_identifiers": len(leaked),
        },
        "date_inverted": date_inverted,
        "unchecked_overruling_pairs": unchecked,
        "unmatched_case_names": [{"case_name": n, "claims": c} for n, c in sorted(unmatched.items())],
        "leaked_identifiers": leaked,
        "length_by_label": _length_by_label(rows),
    }
