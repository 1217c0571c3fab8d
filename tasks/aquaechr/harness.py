"""The AQuAECHR release's harness tasks: the answer closed book, and the answer from retrieved passages with their
citations, prompted and scored as `caseforge eval aquaechr --system closed-book` / `rtg-vanilla` do
(caseforge.release.harness writes them into the release)."""
from __future__ import annotations

from caseforge.llm.parsing import schema_for
from caseforge.release.harness import HarnessSpec, mark
from caseforge.tasks.aquaechr.eval.items import build_passages, db_paragraphs, load_db_items
from caseforge.tasks.aquaechr.eval.pipeline import passage_retriever
from caseforge.tasks.aquaechr.eval.systems import (ANSWER_PARAMS, AnswerOutput, answer_request, closed_book_request,
                                                   shown_docs)

K = 5                       # passages shown, as caseforge eval's default --k
SPLIT = "aquaechr_qa"
NOTES = f"""Scored as `caseforge eval aquaechr` scores its two systems that need no model beyond the one evaluated:
`system=rtg-vanilla` (the default) shows the {K} passages BM25 retrieved for the question from the judgment
paragraphs of the warehouse the release was built from (retrieved when the release was written) and asks for an
answer that cites them as [Doc n]; `system=closed-book` asks without passages. The reply is {{"answer": ...}} (a reply
that is not that JSON fails the item, left out of the means and counted in `n_failed`). Metrics: `rouge_l` (ROUGE-L
F1 over rouge-score's English tokens, citation marks removed) and, with passages, `citation_f1`,
`citation_precision` and `citation_recall`: the cited paragraphs against the gold ones, exact ids. The NLI and
BERTScore metrics need models: use `caseforge eval`. caseforge's content gate (degenerate answers fail) is not
applied here."""
OPTIONS = {"system": "rtg-vanilla (default) or closed-book", "after": "YYYY-MM-DD: only pairs whose guide version is "
           "dated after that day", "structured": "inspect: send the reply's JSON schema (default false)"}


def harness_spec(con) -> HarnessSpec:
    """The samples of the pairs caseforge eval scores (kept pairs with a pinpoint citation), in both variants."""
    items, _problems = load_db_items(con)
    passages = build_passages(items, db_paragraphs(con))
    rows = []
    for item in items:
        request = closed_book_request(item.item_id, mark("question"))
        rows.append({"variant": "closed-book", "split": SPLIT, "id": item.item_id, "messages": request.messages,
                     "extra": {"gold": item.gold}})
    if passages.passages:
        retriever = passage_retriever(passages)
        for item, hits in zip(items, retriever.search([i.question for i in items], K)):
            shown = [pid for pid, _ in hits]
            request = answer_request(item.item_id, mark("question"), shown_docs(passages, shown))
            rows.append({"variant": "rtg-vanilla", "split": SPLIT, "id": item.item_id, "messages": request.messages,
                         "extra": {"gold": item.gold, "shown": shown}})
    answer = {"max_tokens": ANSWER_PARAMS.max_tokens, "schema": schema_for(AnswerOutput)}
    variants = {"closed-book": answer, **({"rtg-vanilla": answer} if passages.passages else {})}
    return HarnessSpec(rows, variants, "qa_id", "answer", SPLIT, NOTES, OPTIONS)
