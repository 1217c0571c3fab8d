"""The attributed-QA systems: closed book, retrieve-then-generate (vanilla, LLatrieval-style) and
post-hoc attribution (vanilla, RARR-style). Each stage is one LLM job over all items (cached, resumable)."""
from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.reply_bounds import text
from caseforge.tasks.aquaechr.eval.citations import Sentence, format_citations, parse_answer, split_sentences
from caseforge.tasks.aquaechr.eval.items import EvalItem, PassageStore

# the LLM steps of the systems and the NLI judge, with their roles (caseforge.llm.config)
LLM_STEPS = {"aquaechr-eval-*": "system", "aquaechr-eval-nli": "nli"}
SYSTEMS = ("closed-book", "rtg-vanilla", "rtg-llatrieval", "posthoc-vanilla", "posthoc-rarr")
CITING_SYSTEMS = SYSTEMS[1:]
ANSWER_PARAMS = SamplingParams(temperature=0.0, max_tokens=700)
CHECK_PARAMS = SamplingParams(temperature=0.0, max_tokens=300)
REVISE_PARAMS = SamplingParams(temperature=0.0, max_tokens=1300)
MAX_STATEMENTS = 6      # statements of an answer the RARR reviser may revise


class AnswerOutput(BaseModel):
    answer: text(650)


class SufficiencyOutput(BaseModel):
    sufficient: bool
    keep: list[int] = Field(max_length=8)
    missing: text(100)


class StatementCheck(BaseModel):
    number: int
    agrees: bool
    revised: text(150)


class RevisionOutput(BaseModel):
    statements: list[StatementCheck] = Field(max_length=MAX_STATEMENTS)


@dataclass
class SystemOutput:
    item_id: str
    answer: str | None
    shown: list[str] = field(default_factory=list)      # passage ids shown / cited as Doc 1..n
    sentences: list[Sentence] = field(default_factory=list)
    status: str = "ok"
    reason: str | None = None
    trace: dict = field(default_factory=dict)            # what the system did besides answering


@dataclass
class SystemContext:
    con: object
    backend: object
    passages: PassageStore
    retriever: object | None
    k: int = 5
    max_rounds: int = 2
    evidence_per_sentence: int = 2
    notes: list[str] = field(default_factory=list)      # recorded, non-fatal problems (e.g. a failed check)


def shown_docs(passages: PassageStore, shown: list[str]) -> list[dict]:
    """The passages `shown` as the prompts number them: Doc 1..n."""
    return [{"number": n, "text": passages.passages[pid].shown()} for n, pid in enumerate(shown, start=1)]


def closed_book_request(item_id: str, question: str):
    return request_from_template(item_id, "aquaechr/eval/closed_book.j2", ANSWER_PARAMS, question=question)


def answer_request(item_id: str, question: str, docs: list[dict]):
    """The request of a retrieve-then-generate answer from the numbered passages `docs`."""
    return request_from_template(item_id, "aquaechr/eval/rtg_answer.j2", ANSWER_PARAMS, question=question, docs=docs)


def closed_book_answers(ctx: SystemContext, items: list[EvalItem]) -> dict[str, AnswerOutput | str]:
    """item_id → parsed answer, or the failure reason."""
    requests = [closed_book_request(i.item_id, i.question) for i in items]
    result = run_job(ctx.con, "aquaechr-eval-closed-book", ctx.backend, requests, AnswerOutput)
    return {i.item_id: result.outputs.get(i.item_id) or f"closed-book answer failed: "
            f"{result.failures[i.item_id].reason}" for i in items}


def _search(ctx: SystemContext, queries: list[str], k: int) -> list[list[str]]:
    return [[pid for pid, _ in hits] for hits in ctx.retriever.search(queries, k)]


def _generate(ctx: SystemContext, items: list[EvalItem], shown: dict[str, list[str]], step: str) -> list[SystemOutput]:
    requests = [answer_request(i.item_id, i.question, shown_docs(ctx.passages, shown[i.item_id])) for i in items]
    result = run_job(ctx.con, step, ctx.backend, requests, AnswerOutput)
    outputs = []
    for item in items:
        ids = shown[item.item_id]
        if item.item_id in result.outputs:
            answer = result.outputs[item.item_id].answer
            outputs.append(SystemOutput(item.item_id, answer, ids, parse_answer(answer, ids)))
        else:
            outputs.append(SystemOutput(item.item_id, None, ids, status="failed",
                                        reason=f"answer failed: {result.failures[item.item_id].reason}"))
    return outputs


def rtg_vanilla(ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    retrieved = _search(ctx, [i.question for i in items], ctx.k)
    return _generate(ctx, items, {i.item_id: r for i, r in zip(items, retrieved)}, "aquaechr-eval-rtg-answer")


def rtg_llatrieval(ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    """Retrieve; let the model judge sufficiency, keep useful passages and name what is missing; search for
    the missing information; repeat at most `max_rounds` times; then answer from the final set."""
    shown = {i.item_id: ids for i, ids in zip(items, _search(ctx, [i.question for i in items], ctx.k))}
    rounds = {i.item_id: [] for i in items}
    open_items = list(items)
    for round_no in range(1, ctx.max_rounds + 1):
        if not open_items:
            break
        requests = [request_from_template(i.item_id, "aquaechr/eval/llatrieval_check.j2", CHECK_PARAMS, question=i.question,
                                          docs=shown_docs(ctx.passages, shown[i.item_id])) for i in open_items]
        result = run_job(ctx.con, f"aquaechr-eval-llatrieval-check-{round_no}", ctx.backend, requests, SufficiencyOutput)
        searching, progressed = [], []
        for item in open_items:
            check = result.outputs.get(item.item_id)
            if check is None:
                reason = result.failures[item.item_id].reason
                ctx.notes.append(f"{item.item_id}: sufficiency check round {round_no} failed ({reason}); answered "
                                 f"from the passages found so far")
                rounds[item.item_id].append({"round": round_no, "failed": reason})
                continue
            rounds[item.item_id].append(check.model_dump())
            if not check.sufficient and check.missing.strip():
                searching.append((item, check))
        for (item, check), found in zip(searching, _search(ctx, [c.missing for _, c in searching], ctx.k)):
            current = shown[item.item_id]
            kept = [current[n - 1] for n in check.keep if 1 <= n <= len(current)]
            kept = list(dict.fromkeys(kept)) or current[: max(1, ctx.k // 2)]
            updated = (kept + [pid for pid in found if pid not in kept])[: ctx.k]
            if updated == current:          # the search brought nothing new: asking again would repeat itself
                rounds[item.item_id][-1]["no_new_passages"] = True
            else:
                shown[item.item_id] = updated
                progressed.append(item)
        open_items = progressed
    outputs = _generate(ctx, items, shown, "aquaechr-eval-llatrieval-answer")
    for output in outputs:
        output.trace["checks"] = rounds[output.item_id]
    return outputs


def _cited_text(texts: list[str], citations: list[list[int]]) -> str:
    """One sentence a line, its markers after it (a line keeps sentence boundaries the split found)."""
    return "\n".join(f"{t} {format_citations(c)}".strip() for t, c in zip(texts, citations))


def _closed_book_sentences(ctx, items) -> tuple[dict[str, list[str]], list[SystemOutput]]:
    answers = closed_book_answers(ctx, items)
    sentences, failed = {}, []
    for item in items:
        answer = answers[item.item_id]
        if isinstance(answer, str):
            failed.append(SystemOutput(item.item_id, None, status="failed", reason=answer))
        else:
            sentences[item.item_id] = split_sentences(answer.answer)
    return sentences, failed


def _number(shown: list[str], pid: str) -> int:
    if pid not in shown:
        shown.append(pid)
    return shown.index(pid) + 1


def posthoc_vanilla(ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    """Closed-book answer; each sentence then cites the single passage that best matches it."""
    sentences, outputs = _closed_book_sentences(ctx, items)
    flat = [(item_id, s) for item_id, ss in sentences.items() for s in ss]
    best = _search(ctx, [s for _, s in flat], 1) if flat else []
    cites: dict[str, list[list[str]]] = {item_id: [] for item_id in sentences}
    for (item_id, _), hits in zip(flat, best):
        cites[item_id].append(hits[:1])
    for item_id, texts in sentences.items():
        shown: list[str] = []
        numbers = [[_number(shown, pid) for pid in pids] for pids in cites[item_id]]
        answer = _cited_text(texts, numbers)
        outputs.append(SystemOutput(item_id, answer, shown, parse_answer(answer, shown)))
    return outputs


def posthoc_rarr(ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    """Closed-book answer; research evidence per sentence; the model checks each sentence against its
    evidence and revises the ones the evidence contradicts; each sentence cites its evidence."""
    sentences, outputs = _closed_book_sentences(ctx, items)
    by_id = {i.item_id: i for i in items}
    flat = [(item_id, s) for item_id, ss in sentences.items() for s in ss]
    found = _search(ctx, [s for _, s in flat], ctx.evidence_per_sentence) if flat else []
    evidence: dict[str, list[list[str]]] = {item_id: [] for item_id in sentences}
    for (item_id, _), hits in zip(flat, found):
        evidence[item_id].append(hits)
    requests = []
    for item_id, texts in sentences.items():
        statements = [{"number": n, "text": t, "docs": [ctx.passages.passages[p].shown() for p in evidence[item_id][n - 1]]}
                      for n, t in enumerate(texts, start=1)]
        requests.append(request_from_template(item_id, "aquaechr/eval/rarr_revise.j2", REVISE_PARAMS,
                                              question=by_id[item_id].question, statements=statements))
    result = run_job(ctx.con, "aquaechr-eval-rarr-revise", ctx.backend, requests, RevisionOutput)
    for item_id, texts in sentences.items():
        revised, edits = list(texts), 0
        check = result.outputs.get(item_id)
        if check is None:
            ctx.notes.append(f"{item_id}: revision failed ({result.failures[item_id].reason}); draft kept")
        else:
            for statement in check.statements:
                if 1 <= statement.number <= len(texts) and not statement.agrees and statement.revised.strip():
                    if statement.revised.strip() != texts[statement.number - 1]:
                        revised[statement.number - 1] = statement.revised.strip()
                        edits += 1
        shown: list[str] = []
        numbers = [[_number(shown, pid) for pid in pids] for pids in evidence[item_id]]
        answer = _cited_text(revised, numbers)
        outputs.append(SystemOutput(item_id, answer, shown, parse_answer(answer, shown),
                                    trace={"edited_sentences": edits, "revision_failed": check is None}))
    return outputs


def closed_book(ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    answers = closed_book_answers(ctx, items)
    outputs = []
    for item in items:
        answer = answers[item.item_id]
        if isinstance(answer, str):
            outputs.append(SystemOutput(item.item_id, None, status="failed", reason=answer))
        else:
            outputs.append(SystemOutput(item.item_id, answer.answer, [], parse_answer(answer.answer, [])))
    return outputs


RUNNERS = {"closed-book": closed_book, "rtg-vanilla": rtg_vanilla, "rtg-llatrieval": rtg_llatrieval,
           "posthoc-vanilla": posthoc_vanilla, "posthoc-rarr": posthoc_rarr}


def run_system(system: str, ctx: SystemContext, items: list[EvalItem]) -> list[SystemOutput]:
    if system not in RUNNERS:
        raise ValueError(f"unknown system {system!r} (choose from {', '.join(SYSTEMS)})")
    if system in CITING_SYSTEMS and ctx.retriever is None:
        raise ValueError(f"{system} needs a retriever")
    order = {i.item_id: n for n, i in enumerate(items)}
    return sorted(RUNNERS[system](ctx, items), key=lambda o: order[o.item_id])
