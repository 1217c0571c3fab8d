"""CaseFacts systems with an LLM: closed-book, retrieve-then-verify, and CASE.

Predicted evidence: the cases the model cites, matched to ids by name (closed-book and
retrieve-verify); for retrieve-verify a reply citing no known case falls back to the retrieval
ranking. For CASE, the evidence of the hypothesis the jury chose, best first.
"""
from __future__ import annotations

from typing import Literal

from caseforge.tasks.case import method as case
from caseforge.tasks.case.answers import parse_verdict, stated_verdict
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.retrieval import PreparedClaim, gold_record, score_claim, skipped_item
from pydantic import BaseModel, Field, field_validator

from caseforge.evalstore import ItemResult
from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.config import Backends
from caseforge.llm.fit import fits, largest_fitting
from caseforge.llm.reply_bounds import text

MAX_CITED_CASES = 3
VERDICT_PARAMS = SamplingParams(temperature=0.0, max_tokens=400)
CASE_TEXT_CHARS = 700
VERDICT_HYPOTHESES = [
    case.Hypothesis("A", "SUPPORTED: Supreme Court precedent supports the statement."),
    case.Hypothesis("B", "REFUTED: Supreme Court precedent contradicts the statement."),
    case.Hypothesis("C", "OVERRULED: precedent once supported the statement but a later decision overruled it."),
]
VERDICT_OF = {"A": "SUPPORTED", "B": "REFUTED", "C": "OVERRULED"}


# the LLM steps of the evaluation's systems and their roles (caseforge.llm.config)
LLM_STEPS = {"casefacts-closed-book": "system", "casefacts-retrieve-verify": "system", "casefacts-case-*": "system"}


class VerdictWithCases(BaseModel):
    verdict: Literal["SUPPORTED", "REFUTED", "OVERRULED"]
    cases: list[text(110)] = Field(max_length=MAX_CITED_CASES)

    _verdict = field_validator("verdict", mode="before")(stated_verdict)


def _cited_ids(names: CaseNameIndex, cited: list[str], allowed: set[str]) -> list[str]:
    ids: list[str] = []
    for name in cited:
        for case_id in sorted(names.resolve(name).case_ids & allowed):
            if case_id not in ids:
                ids.append(case_id)
    return ids


def _scored(p: PreparedClaim, predicted_ids: list[str], verdict: str | None, extra: dict) -> ItemResult:
    extra = dict(extra)
    reason = extra.pop("reason", None)
    scores = score_claim(p, predicted_ids, verdict, with_verdict=True)
    item = ItemResult(p.claim.item_id, p.claim.label, gold_record(p),
                      {"verdict": verdict, "cases": predicted_ids, **extra}, scores)
    if verdict is None:
        item.status, item.reason = "failed", reason or "no verdict stated"
    return item


def run_llm_system(session, system: str, prepared: list[PreparedClaim], corpus, names: CaseNameIndex, retriever_for,
                   backends: Backends, retriever: str, k: int, max_rounds: int, seed: int) -> list[ItemResult]:
    backend = backends.for_step(f"casefacts-{system}", "system")
    active = [p for p in prepared if p.skip_reason is None]
    corpus_ids = set(corpus.ids)
    if system == "case":
        results = _case(session, backend, active, retriever_for(retriever), k, max_rounds, seed)
    else:
        # closed book: the case list may be narrowed to fit the context window, by BM25 rank of the claim
        results = _verify(session, backend, system, active, corpus, names, corpus_ids,
                          retriever_for(retriever if system == "retrieve-verify" else "bm25"), k)
    return [skipped_item(p) if p.skip_reason else results[p.claim.item_id] for p in prepared]


def _verify(session, backend, system, active, corpus, names, corpus_ids, retriever, k) -> dict[str, ItemResult]:
    name_of = case_names_of(corpus, names)
    text_of = dict(zip(corpus.ids, corpus.texts))
    retrieved: dict[str, list[str]] = {}
    if system == "retrieve-verify":
        for p, hits in zip(active, retriever.search([p.claim.claim for p in active], k)):
            retrieved[p.claim.item_id] = [doc_id for doc_id, _ in hits]
    all_names = sorted(set(name_of.values()))
    requests, shown = [], {}
    for p in active:
        if system == "closed-book":
            request, shown[p.claim.item_id] = _closed_book_request(p, all_names, name_of, retriever, backend)
            requests.append(request)
            if shown[p.claim.item_id] < len(all_names):
                session.report.add("closed_book_case_list_narrowed")
        else:
            cases = [{"name": name_of[d], "text": " ".join(text_of[d].split())[:CASE_TEXT_CHARS]}
                     for d in retrieved[p.claim.item_id]]
            requests.append(request_from_template(p.claim.item_id, "casefacts/eval/retrieve_verify.j2",
                                                  params=VERDICT_PARAMS, claim=p.claim.claim, cases=cases))
    result = run_job(session.con, f"casefacts-{system}", backend, requests, VerdictWithCases)
    session.report.add("llm_failed", len(result.failures))
    items = {}
    for p in active:
        out = result.outputs.get(p.claim.item_id)
        if out is None:
            items[p.claim.item_id] = _scored(p, [], None, {"reason": f"LLM output invalid: {result.failures[p.claim.item_id].reason}"})
            continue
        verdict = parse_verdict(f'{{"verdict": "{out.verdict.strip()}"}}') or parse_verdict(out.verdict)
        allowed = set(retrieved.get(p.claim.item_id, [])) if system == "retrieve-verify" else corpus_ids
        cited = _cited_ids(names, out.cases, allowed)
        fallback = system == "retrieve-verify" and not cited
        predicted = retrieved[p.claim.item_id] if fallback else cited
        extra = {"cited": out.cases, "fallback_to_ranking": fallback, "reason": f"verdict {out.verdict!r} is not a label"}
        if system == "closed-book":
            extra["case_names_shown"] = shown[p.claim.item_id]
        items[p.claim.item_id] = _scored(p, predicted, verdict, extra)
    return items


def case_names_of(corpus, names: CaseNameIndex) -> dict[str, str]:
    """case id → the name a model is shown for it (its id when the names lack it), for every case of the corpus; the
    closed-book prompt lists every distinct one, sorted (the release's harness tasks too)."""
    return {case_id: names.names_of.get(case_id, case_id) for case_id in corpus.ids}


def closed_book_request(key: str, claim: str, case_names: list[str]):
    return request_from_template(key, "casefacts/eval/closed_book.j2", params=VERDICT_PARAMS, claim=claim,
                                 case_names=case_names)


def _closed_book_request(p: PreparedClaim, all_names: list[str], name_of: dict, ranker, backend) -> tuple:
    """The closed-book request with every valid case name, or — when that does not fit the model's context
    window — with as many as fit, chosen by the BM25 rank of the claim against the cases' texts and shown in
    alphabetical order (the order gives no rank away). Returns (request, names shown)."""
    def make(names: list[str]):
        return closed_book_request(p.claim.item_id, p.claim.claim, names)

    full = make(all_names)
    if fits(backend, full):
        return full, len(all_names)
    ranked = list(dict.fromkeys(name_of[doc_id] for doc_id, _ in ranker.search([p.claim.claim], len(name_of))[0]))
    request, n = largest_fitting(backend, lambda n: make(sorted(ranked[:n])), len(ranked))
    return request, n


def _case(session, backend, active, retriever, k, max_rounds, seed) -> dict[str, ItemResult]:
    problems = [case.Problem(p.claim.item_id, p.claim.claim, VERDICT_HYPOTHESES) for p in active]
    evidence = case.run_advocates(session.con, backend, problems, retriever, k, max_rounds, session.report,
                                  step_prefix="casefacts-case")
    verdicts = case.run_jury(session.con, backend, problems, evidence, seed, session.report,
                             step_prefix="casefacts-case")
    items = {}
    for p in active:
        verdict, votes = verdicts[p.claim.item_id]
        label = VERDICT_OF.get(verdict.choice) if verdict.choice else None
        predicted = [s.doc_id for s in evidence[(p.claim.item_id, verdict.choice)]] if verdict.choice else []
        items[p.claim.item_id] = _scored(p, predicted, label, {
            "confidence": verdict.confidence, "tie_break": verdict.tie_break,
            "votes": [{"persona": v.persona, "choice": v.choice, "confidence": v.confidence} for v in votes],
            "reason": case.no_verdict_reason(votes)})
    return items
