"""CASE: conflict-aware multi-agent answering.

1. Hypotheses: the options of a multiple-choice question, or the three CaseFacts verdicts.
2. Advocates: one per hypothesis. Each starts from the problem + its hypothesis as a query, then for
   up to `max_rounds` rounds the LLM proposes new queries given what was found; every ranking is
   fused (reciprocal rank fusion) and the advocate keeps its k best snippets.
3. Jury: 3 of 5 personas, sampled with random.Random(f"{seed}|{item_id}") so a run is repeatable;
   each juror reasons and votes. Majority wins. Tie rule: most votes; then the highest summed
   confidence of the tied options' voters; then the option listed first (lowest letter).
   Confidence: "unanimous" when every juror voted validly for the winner, else "split".
"""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from caseforge.tasks.case.answers import parse_answer, stated_letter
from pydantic import BaseModel, Field, field_validator

from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.fit import largest_fitting
from caseforge.llm.reply_bounds import text
from caseforge.retrieval import Retriever
from caseforge.retrieval.hybrid import reciprocal_rank_fusion
from caseforge.stage_report import StageReport

PERSONAS = {
    "strict_textualist": "you hold to the plain words of statutes, rules and constitutional text, and distrust "
                         "arguments from purpose or consequences.",
    "legal_realist": "you ask how courts actually decide and what outcome the rules produce in practice.",
    "precedent_loyalist": "you follow settled case law and the doctrine built on it, and weigh how binding "
                          "each authority is.",
    "equity_advocate": "you look for the fair result and the interests of the weaker party, within what the "
                       "law allows.",
    "devils_advocate": "you test the most popular option hardest and vote for it only if it survives your "
                       "strongest objection.",
}
JURY_SIZE = 3
DEFAULT_MAX_ROUNDS = 2
QUERIES_PER_ROUND = 2
SNIPPET_CHARS = 500
JUROR_SUITE = "case_juror_votes"      # expectations/case_juror_votes.json: what a juror's reasoning must be
REASONING_REJECTED = "reasoning rejected by the content gate"
SearchQuery = text(80, min_chars=3)     # a few key legal terms
QUERY_PARAMS = SamplingParams(temperature=0.0, max_tokens=200)
JUROR_PARAMS = SamplingParams(temperature=0.0, max_tokens=400)


@dataclass
class Hypothesis:
    label: str          # option letter: A, B, C, D
    text: str


@dataclass
class Problem:
    item_id: str
    text: str
    hypotheses: list[Hypothesis]
    gold: str | None = None


@dataclass
class Snippet:
    doc_id: str
    text: str
    score: float

    def as_prompt(self, chars: int | None = None) -> dict:
        """The snippet as a prompt shows it, cut to `chars` characters when given."""
        if chars is None or len(self.text) <= chars:
            return {"doc_id": self.doc_id, "text": self.text}
        return {"doc_id": self.doc_id, "text": self.text[:chars].rstrip() + "…"}


@dataclass
class Vote:
    persona: str
    choice: str | None
    confidence: float
    reason: str | None = None
    answered: bool = True        # False: the juror's call failed, so there is no vote to blame


@dataclass
class JuryVerdict:
    choice: str | None
    confidence: str                      # unanimous | split | none
    counts: dict[str, int] = field(default_factory=dict)
    tie_break: str | None = None         # None | confidence | option_order


# Every field is required and every label an enum: constrained decoding can then only produce an answer
# this code can use (an empty object or a copied placeholder no longer passes as one).
class QueryProposal(BaseModel):
    queries: list[SearchQuery] = Field(max_length=QUERIES_PER_ROUND)
    done: bool


class JurorVote(BaseModel):
    reasoning: text(300)
    answer: Literal["A", "B", "C", "D"]
    confidence: float = Field(ge=0.0, le=1.0)

    _answer = field_validator("answer", mode="before")(stated_letter)


def sample_jury(seed: int, item_id: str, size: int = JURY_SIZE) -> list[str]:
    return random.Random(f"{seed}|{item_id}").sample(sorted(PERSONAS), size)


def no_verdict_reason(votes: list[Vote]) -> str:
    """Why a jury gave no verdict: its jurors never answered (the calls failed), or none named an option."""
    unanswered = [v for v in votes if not v.answered]
    if votes and len(unanswered) == len(votes):
        return f"no juror answered: all {len(votes)} juror calls failed ({unanswered[0].reason})"
    rejected = [v for v in votes if v.answered and (v.reason or "").startswith(REASONING_REJECTED)]
    notes = ([f"{len(unanswered)} of {len(votes)} juror calls failed"] if unanswered else []) + \
        ([f"{len(rejected)} of {len(votes)} votes' {REASONING_REJECTED}"] if rejected else [])
    return "no juror stated a valid option" + (f" ({'; '.join(notes)})" if notes else "")


def tally(votes: list[Vote], labels: list[str]) -> JuryVerdict:
    valid = [v for v in votes if v.choice in labels]
    if not valid:
        return JuryVerdict(None, "none")
    counts = Counter(v.choice for v in valid)
    top = max(counts.values())
    leaders = [label for label in labels if counts[label] == top]
    tie_break = None
    if len(leaders) > 1:
        summed = {label: sum(v.confidence for v in valid if v.choice == label) for label in leaders}
        best = max(summed.values())
        by_confidence = [label for label in leaders if math.isclose(summed[label], best)]
        tie_break = "confidence" if len(by_confidence) == 1 else "option_order"
        leaders = by_confidence
    confidence = "unanimous" if top == len(votes) else "split"
    return JuryVerdict(leaders[0], confidence, dict(counts), tie_break)


def _snippet(retriever: Retriever, text_by_id: dict[str, str], doc_id: str, score: float) -> Snippet:
    text = " ".join(text_by_id[doc_id].split())
    return Snippet(doc_id, text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else ""), score)


def run_advocates(con, backend, problems: list[Problem], retriever: Retriever, k: int, max_rounds: int,
                  report: StageReport, step_prefix: str = "case") -> dict[tuple[str, str], list[Snippet]]:
    """The k best snippets per (item, hypothesis) after a bounded loop of LLM query rewrites."""
    text_by_id = dict(zip(retriever.corpus.ids, retriever.corpus.texts))
    keys = [(p.item_id, h.label) for p in problems for h in p.hypotheses]
    hypothesis = {(p.item_id, h.label): (p, h) for p in problems for h in p.hypotheses}
    tried = {key: [f"{hypothesis[key][0].text} {hypothesis[key][1].text}"] for key in keys}
    rankings = {key: hits for key, hits in zip(keys, retriever.search([tried[key][0] for key in keys], k))}
    rankings = {key: [hits] for key, hits in rankings.items()}
    active = list(keys)

    def best(key) -> list[Snippet]:
        fused = reciprocal_rank_fusion(rankings[key])[:k]
        return [_snippet(retriever, text_by_id, doc_id, score) for doc_id, score in fused]

    for round_no in range(1, max_rounds + 1):
        if not active:
            break
        requests = []
        for key in active:
            problem, hyp = hypothesis[key]
            requests.append(request_from_template(
                f"{key[0]}|{key[1]}", "case/advocate_queries.j2", params=QUERY_PARAMS, problem=problem.text,
                label=hyp.label, hypothesis=hyp.text, snippets=[s.as_prompt() for s in best(key)],
                round=round_no, max_rounds=max_rounds, n_queries=QUERIES_PER_ROUND, tried=tried[key]))
        result = run_job(con, f"{step_prefix}-advocate-round{round_no}", backend, requests, QueryProposal)
        report.add("advocate_query_failed", len(result.failures))
        new_queries: list[tuple[tuple[str, str], str]] = []
        still_active = []
        for key in active:
            proposal = result.outputs.get(f"{key[0]}|{key[1]}")
            if proposal is None:
                continue  # failure recorded in ops.llm_calls; this advocate keeps what it found
            fresh = [q.strip() for q in proposal.queries[:QUERIES_PER_ROUND] if q.strip() and q.strip() not in tried[key]]
            tried[key].extend(fresh)
            new_queries.extend((key, q) for q in fresh)
            if fresh and not proposal.done:
                still_active.append(key)
        if new_queries:
            for (key, _query), hits in zip(new_queries, retriever.search([q for _, q in new_queries], k)):
                rankings[key].append(hits)
        report.add("advocate_queries", len(new_queries))
        active = still_active
    return {key: best(key) for key in keys}


def gate_juror_reasoning(con, run_id: int | None, outputs: dict[str, JurorVote]) -> dict[str, str]:
    """The jurors (request keys) whose reasoning breaks a content rule (expectations/case_juror_votes.json: too few
    words, a phrase or character repeated, the prompt written back), with the rules; the rows are quarantined."""
    if not outputs:
        return {}
    import pandas as pd

    from caseforge import gate

    keys = sorted(outputs)
    frame = pd.DataFrame({"key": keys, "reasoning": [outputs[k].reasoning for k in keys]})
    return gate.rejected_rows(con, run_id, JUROR_SUITE, frame, "key")


def run_jury(con, backend, problems: list[Problem], evidence: dict[tuple[str, str], list[Snippet]], seed: int,
             report: StageReport, step_prefix: str = "case") -> dict[str, tuple[JuryVerdict, list[Vote]]]:
    requests, jury = [], {}
    for problem in problems:
        jury[problem.item_id] = sample_jury(seed, problem.item_id)
        for persona in jury[problem.item_id]:
            def make(chars: int, problem=problem, persona=persona):
                hypotheses = [{"label": h.label, "text": h.text,
                               "snippets": [s.as_prompt(chars) for s in evidence[(problem.item_id, h.label)]]}
                              for h in problem.hypotheses]
                return request_from_template(f"{problem.item_id}|{persona}", "case/juror.j2", params=JUROR_PARAMS,
                                             problem=problem.text, persona_description=PERSONAS[persona],
                                             hypotheses=hypotheses)

            # the evidence is cut (never dropped) until the prompt fits the model's context window
            request, chars = largest_fitting(backend, make, SNIPPET_CHARS)
            if chars < SNIPPET_CHARS:
                report.add("juror_evidence_cut_to_fit")
            requests.append(request)
    result = run_job(con, f"{step_prefix}-juror", backend, requests, JurorVote)
    report.add("juror_failed", len(result.failures))
    rejected = gate_juror_reasoning(con, report.run_id, result.outputs)
    report.add("juror_reasoning_rejected", len(rejected))
    verdicts = {}
    for problem in problems:
        labels = [h.label for h in problem.hypotheses]
        votes = []
        for persona in jury[problem.item_id]:
            key = f"{problem.item_id}|{persona}"
            out = result.outputs.get(key)
            if out is None:
                votes.append(Vote(persona, None, 0.0, result.failures[key].reason, answered=False))
                continue
            if key in rejected:                  # a vote is only as good as the reasoning behind it: not counted
                votes.append(Vote(persona, None, 0.0, f"{REASONING_REJECTED}: {rejected[key]}"))
                continue
            choice = parse_answer(out.answer)
            confidence = min(1.0, max(0.0, out.confidence)) if math.isfinite(out.confidence) else 0.0
            votes.append(Vote(persona, choice if choice in labels else None, confidence,
                              None if choice in labels else f"vote {out.answer!r} names no option"))
        verdicts[problem.item_id] = (tally(votes, labels), votes)
    return verdicts
