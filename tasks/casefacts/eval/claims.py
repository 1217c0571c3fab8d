"""CaseFacts claims in the released format: a JSON list of {claim, case_name: [..], overruling_case, label}.

`overruling_case` may hold several names joined by ";" (82 rows of the released train split do);
each is a case of its own. Which names are gold evidence is a rule with a name (see GOLD_RULES)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.names import split_case_names

LABELS = ("SUPPORTED", "REFUTED", "OVERRULED")

# Which of a claim's names are its gold evidence, and what becomes of names the corpus lacks by default.
# paper: the authors' retrieval training/evaluation code (idirlab/supreme-court-dataset,
#        experiments/train_retriever.py) takes the claim's case_name list only and keeps the names found in
#        the corpus; a claim with none left is not evaluated. Numbers comparable with the paper's table.
# caseforge: the claim's cases plus, for an overruled claim, every overruling case (the newer case joins
#        the evidence, as the paper's pipeline says); by default a claim with a gold case outside the corpus
#        is skipped (--missing-gold decides).
GOLD_RULES = {"paper": "drop", "caseforge": "skip"}
DEFAULT_GOLD_RULE = "paper"


@dataclass
class Claim:
    item_id: str
    claim: str
    case_names: list[str]
    overruling_cases: list[str]
    label: str                                  # upper case, one of LABELS

    def evidence_names(self, gold_rule: str = DEFAULT_GOLD_RULE) -> list[str]:
        """The names that are gold evidence under `gold_rule` (see GOLD_RULES)."""
        if gold_rule not in GOLD_RULES:
            raise ValueError(f"unknown gold rule {gold_rule!r} (choose from {', '.join(GOLD_RULES)})")
        names = list(dict.fromkeys(self.case_names))
        if gold_rule == "caseforge":
            names += [n for n in self.overruling_cases if n not in names]
        return names


@dataclass
class GoldEvidence:
    cases: list[frozenset[str]] = field(default_factory=list)   # one id set per resolvable gold case
    missing: list[str] = field(default_factory=list)             # gold names not matched or without text
    fuzzy: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)             # names left out of the gold (policy `drop`)


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
    return claims_from_rows(rows)


def claims_from_rows(rows: list) -> tuple[list[Claim], list[tuple[str, str]]]:
    """load_claims on the rows of a claims file already read (item ids by position: claim-00000, ...)."""
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
        try:
            overruling = split_case_names(row.get("overruling_case"))
        except ValueError as exc:
            problems.append((item_id, f"overruling_case is not a name, a list or names joined by ';': {exc}"))
            continue
        claims.append(Claim(item_id, text.strip(), [n.strip() for n in names], overruling, label.strip().upper()))
    return claims, problems


def resolve_gold(claim: Claim, names: CaseNameIndex, corpus_ids: set[str],
                 gold_rule: str = DEFAULT_GOLD_RULE) -> GoldEvidence:
    gold = GoldEvidence()
    for name in claim.evidence_names(gold_rule):
        match = names.resolve(name)
        ids = frozenset(match.case_ids & corpus_ids)
        if not ids:
            gold.missing.append(name)
            continue
        gold.cases.append(ids)
        if match.how == "fuzzy":
            gold.fuzzy.append(name)
    return gold
