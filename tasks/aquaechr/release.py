"""The `aquaechr` release: the kept question–answer pairs with a card (counts and the distributions the
paper reports), written by caseforge.release."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import duckdb
import pandas as pd

from caseforge.release import NothingToRelease, Release, write_release
from caseforge.warehouse import run_sql

DATASET = "aquaechr"
INPUTS = ("curated.aquaechr_qa",)
_TOKEN = re.compile(r"\w+|[^\w\s]")


def token_count(text: str) -> int:
    """Word and punctuation tokens (a tokenizer-free approximation of model tokens)."""
    return len(_TOKEN.findall(text or ""))


def summary(values: list[int]) -> str:
    if not values:
        return "n=0"
    return (f"n={len(values)} mean={statistics.mean(values):.1f} median={statistics.median(values):g} "
            f"min={min(values)} max={max(values)}")


def distributions_of(pairs: pd.DataFrame) -> dict[str, list[int]]:
    return {
        "tokens per question": [token_count(q) for q in pairs["question"]],
        "tokens per answer": [token_count(a) for a in pairs["answer"]],
        "sentences per answer": [int(n or 0) for n in pairs["n_answer_sentences"]],
        "cited paragraphs per answer": [int(n or 0) for n in pairs["n_cited_paragraphs"]],
    }


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    pairs = run_sql(con, "aquaechr/release_pairs.sql").df()
    if pairs.empty:
        raise NothingToRelease("curated.aquaechr_qa has no kept pairs: run `caseforge build aquaechr` first")
    pairs["citations"] = pairs["citations"].map(json.loads)
    per_guide = run_sql(con, "aquaechr/counts_by_guide_strategy.sql").fetchall()
    removals = {reason: int(n) for reason, n in run_sql(con, "aquaechr/removal_reasons.sql").fetchall()}
    stats = distributions_of(pairs)
    card = {
        "title": "AQuAECHR (caseforge build)",
        "description": "Question–answer pairs from the ECHR case-law guides. Answers are guide sentences copied "
                       "verbatim; each sentence carries its guide citations resolved to HUDOC judgments and "
                       "pinpoint paragraphs.",
        "sources": ["echr_guides", "hudoc", "aquaechr"],
        "distributions": {
            "strategy (kept pairs)": {str(k): int(v) for k, v in pairs["strategy"].value_counts().items()},
            "guide (kept pairs)": {str(k): int(v) for k, v in pairs["guide_id"].value_counts().items()},
            "removal reason": removals,
        },
        "notes": "\n".join([f"- {name} (tokens = words and punctuation marks): {summary(values)}"
                            for name, values in stats.items()] +
                           ["", "Kept and removed pairs per guide and strategy:", ""] +
                           [f"- {g} / {s}: kept {k}, removed {r}" for g, s, k, r in per_guide]),
    }
    return write_release(folder, DATASET, {"aquaechr_qa": pairs}, card)
