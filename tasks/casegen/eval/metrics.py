"""Reference-overlap metrics for Chinese text: ROUGE-L, BLEU, BERTScore, and agreement with people.

Chinese has no spaces, so every metric tokenises first: by characters (each CJK character is a token,
a run of ASCII letters/digits is one token: caseforge.scoring_rules.char_tokens) or by jieba words. Text
is NFKC-normalised (full-width digits and letters become ASCII) and whitespace and punctuation are dropped
before counting.

`rouge_l_compat` reproduces what the original CaseGen code computed: rouge_score's default tokenizer
keeps only ASCII letters and digits, so Chinese prose scores about 0 and numbers alone decide the
score. It exists only to compare with published numbers and is labelled as such wherever it appears.
"""
from __future__ import annotations

import logging
import math
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from caseforge.scoring_rules import char_tokens, dropped, lcs_length

COMPAT_LABEL = ("rougeL_compat_ascii_only (the original code's tokenizer: Chinese characters are dropped, "
                "only ASCII letters and numbers are compared)")


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "")


@lru_cache(maxsize=1)
def _jieba():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def word_tokens(text: str) -> list[str]:
    """jieba's default (precise) segmentation, without whitespace and punctuation tokens."""
    return [t.lower() for t in _jieba().lcut(normalise(text)) if t.strip() and not dropped(t)]


TOKENIZERS = {"char": char_tokens, "word": word_tokens}


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float


def _prf(overlap: int, candidate_len: int, reference_len: int) -> PRF:
    if overlap == 0 or candidate_len == 0 or reference_len == 0:
        return PRF(0.0, 0.0, 0.0)
    p, r = overlap / candidate_len, overlap / reference_len
    return PRF(p, r, 2 * p * r / (p + r))


def rouge_l(reference: str, candidate: str, level: str = "char") -> PRF:
    """ROUGE-L (LCS-based, F1 with beta = 1) on Chinese tokens; level is 'char' or 'word'."""
    tokenize = TOKENIZERS[level]
    ref, cand = tokenize(reference), tokenize(candidate)
    return _prf(lcs_length(ref, cand), len(cand), len(ref))


@lru_cache(maxsize=1)
def _compat_scorer():
    from rouge_score import rouge_scorer

    logging.getLogger("absl").setLevel(logging.WARNING)
    return rouge_scorer.RougeScorer(["rougeL"])


def rouge_l_compat(reference: str, candidate: str) -> PRF:
    """What the original code got: rouge_score.RougeScorer(['rougeL']) with its default tokenizer."""
    score = _compat_scorer().score(reference, candidate)["rougeL"]
    return PRF(score.precision, score.recall, score.fmeasure)


def bleu(reference: str, candidate: str, max_n: int = 4, level: str = "word") -> dict[str, float]:
    """Sentence BLEU-1..max_n (cumulative, uniform weights) on jieba words, NLTK's smoothing method 1."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    ref, cand = TOKENIZERS[level](reference), TOKENIZERS[level](candidate)
    scores = {}
    for n in range(1, max_n + 1):
        if not ref or not cand:
            scores[f"bleu{n}"] = 0.0
            continue
        weights = tuple([1.0 / n] * n)
        scores[f"bleu{n}"] = float(sentence_bleu([ref], cand, weights=weights,
                                                 smoothing_function=SmoothingFunction().method1))
    return scores


# ---------------------------------------------------------------- BERTScore


class BertScoreUnavailable(RuntimeError):
    pass


class BertScorer:
    """BERTScore by greedy cosine matching of contextual token embeddings from a LOCAL model folder.

    Nothing is downloaded: a missing folder is a clear error. Inputs longer than the model's window
    are cut to it (the cut is counted in `truncated`). No IDF weighting and no baseline rescaling.
    """

    def __init__(self, model_path: str | Path, layer: int | None = None, device: str = "cpu"):
        path = Path(model_path)
        if not path.is_dir():
            raise BertScoreUnavailable(f"BERTScore model folder not found: {path} (models are never downloaded)")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True).to(device).eval()
        self.layer = layer
        self.device = device
        self.max_length = min(512, int(getattr(self.tokenizer, "model_max_length", 512) or 512))
        self.truncated = 0
        self.name = path.name

    def _embed(self, text: str):
        torch = self._torch
        encoded = self.tokenizer(normalise(text), return_tensors="pt", truncation=True, max_length=self.max_length)
        if len(self.tokenizer(normalise(text))["input_ids"]) > self.max_length:
            self.truncated += 1
        encoded = {k: v.to(self.device) for k, v in encoded.items()}
        with torch.no_grad():
            out = self.model(**encoded, output_hidden_states=self.layer is not None)
        hidden = out.hidden_states[self.layer] if self.layer is not None else out.last_hidden_state
        vectors = hidden[0, 1:-1]          # drop [CLS] and [SEP]
        return torch.nn.functional.normalize(vectors, dim=-1)

    def score(self, reference: str, candidate: str) -> PRF:
        ref, cand = self._embed(reference), self._embed(candidate)
        if ref.shape[0] == 0 or cand.shape[0] == 0:
            return PRF(0.0, 0.0, 0.0)
        similarity = cand @ ref.T
        p = float(similarity.max(dim=1).values.mean())
        r = float(similarity.max(dim=0).values.mean())
        f = 0.0 if p + r <= 0 else 2 * p * r / (p + r)
        return PRF(p, r, f)


# ---------------------------------------------------------------- agreement with human scores


def agreement(machine: list[float], human: list[float]) -> dict[str, float]:
    """Kendall tau, Pearson r and Spearman rho between paired score lists (NaN when undefined)."""
    from scipy import stats

    if len(machine) != len(human):
        raise ValueError("agreement needs paired scores of equal length")
    if len(machine) < 2 or len(set(machine)) < 2 or len(set(human)) < 2:
        return {"kendall": math.nan, "pearson": math.nan, "spearman": math.nan, "n": len(machine)}
    return {
        "kendall": float(stats.kendalltau(machine, human).statistic),
        "pearson": float(stats.pearsonr(machine, human).statistic),
        "spearman": float(stats.spearmanr(machine, human).statistic),
        "n": len(machine),
    }


def agreement_by_task(pairs: dict[str, tuple[list[float], list[float]]]) -> dict[str, dict[str, float]]:
    """Per task, plus 'average' = the mean of each coefficient over tasks where it is defined."""
    result = {task: agreement(m, h) for task, (m, h) in sorted(pairs.items())}
    average = {}
    for key in ("kendall", "pearson", "spearman"):
        values = [v[key] for v in result.values() if not math.isnan(v[key])]
        average[key] = sum(values) / len(values) if values else math.nan
    average["n"] = sum(v["n"] for v in result.values())
    result["average"] = average
    return result
