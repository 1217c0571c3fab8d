"""Score system outputs against the gold items: per-item metric values and per-sentence attribution."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from caseforge.tasks.aquaechr.eval.citations import cited_passages, invalid_citations
from caseforge.tasks.aquaechr.eval.items import EvalItem
from caseforge.tasks.aquaechr.eval.citations import split_sentences
from caseforge.tasks.aquaechr.eval.metrics import (bertscore_f1, case_blocks, citation_faithfulness, citation_prf, claim_recall,
                                            evidence_nli, greedy_match_f1, rouge_l)
from caseforge.tasks.aquaechr.eval.nli import NLIJudge
from caseforge.tasks.aquaechr.eval.systems import SystemOutput
from caseforge.tasks.aquaechr.eval.citations import strip_citations


@dataclass
class ScoredItem:
    item: EvalItem
    output: SystemOutput
    scores: dict = field(default_factory=dict)
    attribution: list[bool | None] = field(default_factory=list)   # per sentence; None = uncited or unjudged

    def sentences_json(self) -> list[dict]:
        return [{"text": s.text, "citations": [{"doc": c.doc, "passage_id": c.passage_id} for c in s.citations],
                 "entailed_by_citations": verdict}
                for s, verdict in zip(self.output.sentences, self.attribution)]


def planned_pairs(item: EvalItem, output: SystemOutput, passage_text: dict[str, str], cites: bool) -> list:
    """The (premise, hypothesis) pairs scoring this output will ask about, so one batched judge call can
    answer them all up front (the memoising judge then answers the metrics from memory)."""
    if output.status != "ok" or output.answer is None:
        return []
    premise = strip_citations(output.answer)
    pairs = [(premise, claim) for claim in split_sentences(item.answer)] if premise.strip() else []
    if cites:
        pairs += [("\n".join(passage_text[p] for p in s.valid_passages), s.text)
                  for s in output.sentences if s.valid_passages]
        predicted = list(case_blocks(cited_passages(output.sentences), passage_text).values())
        gold = case_blocks([p for p in item.gold if p in passage_text], passage_text).values()
        pairs += [(pred, block) for block in gold if block not in predicted for pred in predicted]
    return pairs


def score_item(item: EvalItem, output: SystemOutput, passage_text: dict[str, str], nli: NLIJudge,
               embed: Callable[[str], np.ndarray] | None, cites: bool) -> ScoredItem:
    scored = ScoredItem(item, output, attribution=[None] * len(output.sentences))
    if output.status != "ok" or output.answer is None:
        return scored
    s = scored.scores
    s["rouge_l"] = rouge_l(output.answer, item.answer)
    if embed is not None:
        p, r, f = greedy_match_f1(embed(strip_citations(output.answer)), embed(item.answer))
        s.update(bertscore_precision=p, bertscore_recall=r, bertscore_f1=f)
    claims = claim_recall(output.answer, item.answer, nli)
    s["claim_recall"] = claims.value
    failed = claims.failed
    predicted = cited_passages(output.sentences)
    s["citations_per_query"] = float(len(predicted))
    s["invalid_citations"] = len(invalid_citations(output.sentences))
    if cites:
        faithful = citation_faithfulness(output.sentences, passage_text, nli)
        s["citation_faithfulness"] = faithful.value
        failed += faithful.failed
        cited = [i for i, sentence in enumerate(output.sentences) if sentence.valid_passages]
        pairs = [("\n".join(passage_text[p] for p in output.sentences[i].valid_passages), output.sentences[i].text)
                 for i in cited]
        for i, verdict in zip(cited, nli.entails(pairs) if pairs else []):   # memoised: no second judgment
            scored.attribution[i] = verdict
        precision, recall, f1 = citation_prf(set(predicted), set(item.gold))
        s.update(citation_precision=precision, citation_recall=recall, citation_f1=f1)
        gold_with_text = [pid for pid in item.gold if pid in passage_text]
        evidence = evidence_nli(predicted, gold_with_text, passage_text, nli)
        s["evidence_nli"] = evidence.value
        s["gold_without_text"] = len(item.gold) - len(gold_with_text)
        failed += evidence.failed
    s["nli_failed"] = failed
    return scored


__all__ = ["ScoredItem", "score_item", "bertscore_f1"]
