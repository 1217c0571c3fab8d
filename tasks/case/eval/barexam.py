"""Bar Exam QA: CASE and its baselines (LLM-only, BM25/QLM/dense RAG at k, gold-passage oracle).

The oracle gets the question's gold passage under the same wording as the RAG passages ("passages
that may help"): the prompt never says the passage is the right one.
"""
from __future__ import annotations

from typing import Literal

from caseforge.tasks.case import method as case
from caseforge.tasks.case.answers import parse_answer, stated_letter
from pydantic import BaseModel, field_validator

from caseforge.evalstore import ItemResult
from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.reply_bounds import text
from caseforge.retrieval import Retriever
from caseforge.stage_report import StageReport

BASELINES = {"llm-only": None, "bm25-rag": "bm25", "qlm-rag": "qlm", "dense-rag": "dense", "oracle": None}
SYSTEMS = (*BASELINES, "case")
# the LLM steps of the systems and their roles (caseforge.llm.config)
LLM_STEPS = {"barexam-*": "system"}
ANSWER_PARAMS = SamplingParams(temperature=0.0, max_tokens=400)
LABELS = ("A", "B", "C", "D")


class MCAnswer(BaseModel):
    reasoning: text(300)
    answer: Literal["A", "B", "C", "D"]

    _answer = field_validator("answer", mode="before")(stated_letter)


def problems_from_rows(rows: list[tuple]) -> tuple[list[case.Problem], dict[str, str | None]]:
    """(question_id, prompt, question, a, b, c, d, answer, gold_passage_id) rows → problems, gold passage ids."""
    problems, gold_passages = [], {}
    for qid, prompt, question, a, b, c, d, answer, gold_pid in rows:
        text = "\n".join(part for part in (prompt, question) if part)
        options = [case.Hypothesis(label, option) for label, option in zip(LABELS, (a, b, c, d)) if option]
        problems.append(case.Problem(qid, text, options, answer))
        gold_passages[qid] = gold_pid
    return problems, gold_passages


ANSWERS_SUITE = "case_answers"          # expectations/case_answers.json: the reasoning of a baseline's answer
FAILED_SCORES = {"accuracy": 0.0}       # a failed item is a wrong answer in every accuracy (the paper's convention)


def _item(problem: case.Problem, predicted: str | None, extra: dict, reason: str | None = None) -> ItemResult:
    if predicted is None:
        return ItemResult(problem.item_id, problem.gold, {"answer": problem.gold}, {"answer": None, **extra},
                          dict(FAILED_SCORES), "failed", reason or "no answer stated")
    return ItemResult(problem.item_id, problem.gold, {"answer": problem.gold}, {"answer": predicted, **extra},
                      {"accuracy": float(predicted == problem.gold)})


def run_baseline(con, backend, problems: list[case.Problem], system: str, k: int, report: StageReport,
                 retriever: Retriever | None = None, passage_text: dict[str, str] | None = None,
                 gold_passages: dict[str, str | None] | None = None) -> list[ItemResult]:
    passages: dict[str, list[tuple[str, str]]] = {p.item_id: [] for p in problems}
    if system in ("bm25-rag", "qlm-rag", "dense-rag"):
        texts = dict(zip(retriever.corpus.ids, retriever.corpus.texts))
        hits = retriever.search([p.text for p in problems], k)
        for problem, ranked in zip(problems, hits):
            passages[problem.item_id] = [(doc_id, texts[doc_id]) for doc_id, _ in ranked]
    elif system == "oracle":
        for problem in problems:
            gold_id = (gold_passages or {}).get(problem.item_id)
            if gold_id and gold_id in (passage_text or {}):
                passages[problem.item_id] = [(gold_id, passage_text[gold_id])]
            else:
                report.add("oracle_without_gold_passage")
    requests = [request_from_template(
        problem.item_id, "case/answer_mc.j2", params=ANSWER_PARAMS, problem=problem.text,
        options=[(h.label, h.text) for h in problem.hypotheses],
        passages=[text for _, text in passages[problem.item_id]]) for problem in problems]
    result = run_job(con, f"barexam-{system}", backend, requests, MCAnswer)
    items = []
    for problem in problems:
        out = result.outputs.get(problem.item_id)
        extra = {"passages": [doc_id for doc_id, _ in passages[problem.item_id]]}
        if out is None:
            items.append(_item(problem, None, extra, f"LLM output invalid: {result.failures[problem.item_id].reason}"))
            continue
        answer = parse_answer(out.answer)
        labels = [h.label for h in problem.hypotheses]
        items.append(_item(problem, answer if answer in labels else None, {**extra, "reasoning": out.reasoning},
                           f"answer {out.answer!r} states no option"))
    return items


def run_case(con, backend, problems: list[case.Problem], retriever: Retriever, k: int, max_rounds: int, seed: int,
             report: StageReport) -> list[ItemResult]:
    evidence = case.run_advocates(con, backend, problems, retriever, k, max_rounds, report, step_prefix="barexam-case")
    verdicts = case.run_jury(con, backend, problems, evidence, seed, report, step_prefix="barexam-case")
    items = []
    for problem in problems:
        verdict, votes = verdicts[problem.item_id]
        extra = {"confidence": verdict.confidence, "tie_break": verdict.tie_break,
                 "votes": [{"persona": v.persona, "choice": v.choice, "confidence": v.confidence} for v in votes],
                 "evidence": {h.label: [s.doc_id for s in evidence[(problem.item_id, h.label)]]
                              for h in problem.hypotheses}}
        item = _item(problem, verdict.choice, extra, case.no_verdict_reason(votes))
        if item.status == "ok":
            item.scores[f"accuracy_{verdict.confidence}"] = item.scores["accuracy"]
        items.append(item)
    return items


def summarise(items: list[ItemResult]) -> dict[str, float]:
    scored = [i for i in items]
    metrics: dict[str, float] = {"n": len(scored), "n_failed": sum(1 for i in items if i.status == "failed")}
    metrics["accuracy"] = sum(i.scores.get("accuracy", 0.0) for i in scored) / len(scored) if scored else 0.0
    for confidence in ("unanimous", "split"):
        group = [i for i in items if f"accuracy_{confidence}" in i.scores]
        if group:
            metrics[f"n_{confidence}"] = len(group)
            metrics[f"accuracy_{confidence}"] = sum(i.scores[f"accuracy_{confidence}"] for i in group) / len(group)
    return metrics
