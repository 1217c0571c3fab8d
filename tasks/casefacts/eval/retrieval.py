"""CaseFacts evaluation of retrieval-only systems (and the shared scoring of every system)."""
from __future__ import annotations

from dataclasses import dataclass

from caseforge.retrieval import Retriever
from caseforge.tasks.casefacts.eval.claims import Claim, GoldEvidence, resolve_gold
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.metrics import aggregate, claim_scores
from caseforge.evalstore import ItemResult

MISSING_GOLD_POLICIES = ("skip", "miss")
RETRIEVAL_SYSTEMS = ("bm25", "qlm", "dense", "hybrid")
RETRIEVAL_KS = (1, 5, 10)


@dataclass
class PreparedClaim:
    claim: Claim
    gold: GoldEvidence
    skip_reason: str | None


def prepare(claims: list[Claim], names: CaseNameIndex, corpus_ids: set[str], missing_gold: str = "skip") -> list[PreparedClaim]:
    """Resolve each claim's gold cases. Policy `skip`: a claim with any gold case outside the corpus is
    skipped (recorded with the names); `miss`: it is scored, the absent cases counting as not found."""
    if missing_gold not in MISSING_GOLD_POLICIES:
        raise ValueError(f"missing_gold must be one of {MISSING_GOLD_POLICIES}")
    prepared = []
    for claim in claims:
        gold = resolve_gold(claim, names, corpus_ids)
        reason = None
        if gold.missing and (missing_gold == "skip" or not gold.cases):
            reason = "gold case not in corpus: " + "; ".join(gold.missing)
        prepared.append(PreparedClaim(claim, gold, reason))
    return prepared


def gold_record(p: PreparedClaim) -> dict:
    return {"label": p.claim.label, "cases": [sorted(ids) for ids in p.gold.cases],
            "missing": p.gold.missing, "fuzzy": p.gold.fuzzy}


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
    metrics["n_skipped_gold_missing"] = sum(1 for i in items if i.status == "skipped")
    metrics["n_failed"] = sum(1 for i in items if i.status == "failed")
    metrics["n_gold_fuzzy_matched"] = sum(1 for i in items if i.gold.get("fuzzy"))
    return metrics
