"""CaseFacts claims in the released format: a JSON list of {claim, case_name: [..], overruling_case, label}."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex

LABELS = ("SUPPORTED", "REFUTED", "OVERRULED")


@dataclass
class Claim:
    item_id: str
    claim: str
    case_names: list[str]
    overruling_case: str | None
    label: str                                  # upper case, one of LABELS

    @property
    def evidence_names(self) -> list[str]:
        """Gold evidence: the claim's cases plus, for an overruled claim, the overruling case."""
        names = list(self.case_names)
        if self.overruling_case and self.overruling_case not in names:
            names.append(self.overruling_case)
        return names


@dataclass
class GoldEvidence:
    cases: list[frozenset[str]] = field(default_factory=list)   # one id set per resolvable gold case
    missing: list[str] = field(default_factory=list)             # names not matched or without text
    fuzzy: list[str] = field(default_factory=list)


def file_sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_claims(path: Path) -> tuple[list[Claim], list[tuple[str, str]]]:
    """Claims and (item_id, reason) for rows that are not valid claims (kept out, never silently)."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list of claims")
    claims, problems = [], []
    for i, row in enumerate(rows):
        item_id = f"claim-{i:05d}"
        if not isinstance(row, dict):
            problems.append((item_id, "row is not an object"))
            continue
        text, names, label = row.get("claim"), row.get("case_name"), row.get("label")
        if isinstance(names, str):
            names = [names]
        reason = None
        if not isinstance(text, str) or not text.strip():
            reason = "empty or missing claim"
        elif not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
            reason = "case_name must be a non-empty list of names"
        elif not isinstance(label, str) or label.strip().upper() not in LABELS:
            reason = f"label {label!r} is not one of {', '.join(LABELS)}"
        if reason:
            problems.append((item_id, reason))
            continue
        overruling = row.get("overruling_case")
        claims.append(Claim(item_id, text.strip(), [n.strip() for n in names],
                            overruling.strip() if isinstance(overruling, str) and overruling.strip() else None,
                            label.strip().upper()))
    return claims, problems


def resolve_gold(claim: Claim, names: CaseNameIndex, corpus_ids: set[str]) -> GoldEvidence:
    gold = GoldEvidence()
    for name in claim.evidence_names:
        match = names.resolve(name)
        ids = frozenset(match.case_ids & corpus_ids)
        if not ids:
            gold.missing.append(name)
            continue
        gold.cases.append(ids)
        if match.how == "fuzzy":
            gold.fuzzy.append(name)
    return gold
