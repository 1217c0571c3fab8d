"""CaseFacts evaluation of retrieval-only systems (and the shared scoring of every system)."""
from __future__ import annotations

from dataclasses import dataclass

from caseforge.retrieval import Retriever
from caseforge.tasks.casefacts.eval.claims import (DEFAULT_GOLD_RULE, GOLD_RULES, Claim, GoldEvidence,
                                                   resolve_gold)
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.metrics import aggregate, claim_scores, normalise_label, verdict_f1
from caseforge.evalstore import ItemResult

MISSING_GOLD_POLICIES = ("skip", "miss", "drop")
RETRIEVAL_SYSTEMS = ("bm25", "qlm", "dense", "hybrid")
RETRIEVAL_KS = (1, 5, 10)


@dataclass
class PreparedClaim:
    claim: Claim
    gold: GoldEvidence
    skip_reason: str | None


def missing_gold_policy(gold_rule: str, missing_gold: str | None) -> str:
    """The policy for gold names outside the corpus: the one asked for, else the gold rule's own."""
    if gold_rule not in GOLD_RULES:
        raise ValueError(f"unknown gold rule {gold_rule!r} (choose from {', '.join(GOLD_RULES)})")
    policy = missing_gold or GOLD_RULES[gold_rule]
    if policy not in MISSING_GOLD_POLICIES:
        raise ValueError(f"missing_gold must be one of {MISSING_GOLD_POLICIES}")
    return policy


def describe_gold_rule(gold_rule: str, missing_gold: str | None) -> str:
    """One line saying which gold rule and missing-name policy a run used (printed with its numbers)."""
    policy = missing_gold_policy(gold_rule, missing_gold)
    names = ("the claim's case_name only" if gold_rule == "paper"
             else "the claim's case_name plus every overruling_case")
    what = {"drop": "names missing from the corpus are dropped; a claim with none left is not scored",
            "skip": "a claim with any gold name missing from the corpus is not scored",
            "miss": "gold names missing from the corpus count as not found"}[policy]
    default = "" if missing_gold in (None, GOLD_RULES[gold_rule]) else f" (--missing-gold {policy})"
    return f"{gold_rule}: {names}; {what}{default}"


def prepare(claims: list[Claim], names: CaseNameIndex, corpus_ids: set[str], missing_gold: str | None = None,
            gold_rule: str = DEFAULT_GOLD_RULE) -> list[PreparedClaim]:
    """Resolve each claim's gold cases under `gold_rule` (claims.GOLD_RULES). Names outside the corpus,
    by policy (default: the rule's own): `skip` leaves out a claim with any of them (recorded with the
    names); `miss` scores every claim, absent cases counting as not found (a claim with none in the corpus
    scores 0); `drop` removes them from the gold and leaves out only a claim with none left."""
    policy = missing_gold_policy(gold_rule, missing_gold)
    prepared = []
    for claim in claims:
        gold = resolve_gold(claim, names, corpus_ids, gold_rule)
        reason = None
        if policy == "drop":
            gold.dropped, gold.missing = gold.missing, []
            if not gold.cases:
                reason = "no gold case in corpus: " + "; ".join(gold.dropped)
        elif gold.missing and policy == "skip":
            reason = "gold case not in corpus: " + "; ".join(gold.missing)
        prepared.append(PreparedClaim(claim, gold, reason))
    return prepared


def gold_record(p: PreparedClaim) -> dict:
    return {"label": p.claim.label, "cases": [sorted(ids) for ids in p.gold.cases],
            "missing": p.gold.missing, "dropped": p.gold.dropped, "fuzzy": p.gold.fuzzy}


def score_claim(p: PreparedClaim, predicted_ids: list[str], predicted_label: str | None = None,
                with_verdict: bool = False) -> dict[str, float]:
    # under `miss`, a gold case absent from the corpus still counts in the denominator
    gold = list(p.gold.cases) + [frozenset({f"missing:{name}"}) for name in p.gold.missing]
    return claim_scores(gold, predicted_ids, RETRIEVAL_KS, p.claim.label if with_verdict else None,
                        (predicted_label or "NONE") if with_verdict else None)


def skipped_item(p: PreparedClaim) -> ItemResult:
    return ItemResult(p.claim.item_id, p.claim.label, gold_record(p), {}, {}, "skipped", p.skip_reason)


def evaluate_retrieval(prepared: list[PreparedClaim], retriever: Retriever, k: int) -> list[ItemResult]:
    active = [p for p in prepared if p.skip_reason is None]
    hits = retriever.search([p.claim.claim for p in active], k=max(k, max(RETRIEVAL_KS)))
    by_id = {p.claim.item_id: ranked for p, ranked in zip(active, hits)}
    items = []
    for p in prepared:
        if p.skip_reason:
            items.append(skipped_item(p))
            continue
        ranked = [doc_id for doc_id, _ in by_id[p.claim.item_id]]
        predicted = ranked[:k]
        scores = {f"recall@{r}": score_claim(p, ranked)[f"recall@{r}"] for r in RETRIEVAL_KS}
        evidence = score_claim(p, predicted)
        scores["evidence_score"] = evidence["evidence_score"]
        scores["evidence_score_f1"] = evidence["evidence_score_f1"]
        items.append(ItemResult(p.claim.item_id, p.claim.label, gold_record(p),
                                {"cases": predicted, "scores": [round(s, 6) for _, s in by_id[p.claim.item_id][:k]]},
                                scores))
    return items


def summarise(items: list[ItemResult]) -> dict[str, float]:
    # failed items that were scored (e.g. no verdict stated) count as wrong; unscored ones are counted apart
    metrics = aggregate([(i.label, i.scores) for i in items if i.status != "skipped" and i.scores])
    verdicts = [(normalise_label(i.label), normalise_label(i.predicted.get("verdict")))
                for i in items if "verdict_accuracy" in i.scores]
    if verdicts:
        metrics.update(verdict_f1(verdicts))
    metrics["n_skipped_gold_missing"] = sum(1 for i in items if i.status == "skipped")
    metrics["n_failed"] = sum(1 for i in items if i.status == "failed")
    metrics["n_gold_fuzzy_matched"] = sum(1 for i in items if i.gold.get("fuzzy"))
    return metrics
