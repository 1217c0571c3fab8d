"""The `aquaechr` release: the kept question–answer pairs with a card (counts and the distributions the
paper reports), written by caseforge.release."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import duckdb
import pandas as pd

from caseforge.llm.cache import release_cost
from caseforge.release import NothingToRelease, Release, card_rows, release_rows, write_release
from caseforge.review.card import release_judge
from caseforge.tasks.aquaechr.harness import harness_spec
from caseforge.tasks.aquaechr.release_columns import COLUMNS, TYPES
from caseforge.warehouse.statements import run_sql

DATASET = "aquaechr"
INPUTS = ("curated.aquaechr_qa",)
_TOKEN = re.compile(r"\w+|[^\w\s]")

# The method this release follows (authors and title as the paper gives them; the text we hold names no year).
CITATION = """@misc{weidinger_aquaechr,
  title  = {AQuAECHR: Attributed Question Answering for European Court of Human Rights},
  author = {Weidinger, Korbinian Q. and Santosh, T. Y. S. S. and Ichim, Oana and Grabmair, Matthias},
  note   = {Technical University of Munich; Graduate Institute of International and Development Studies, Geneva}
}"""


# what each removal reason (the part before ':' or ' (' of curated.aquaechr_qa.removal_reason) means
REMOVAL_REASONS = {
    "low_quality": "the judge scored comprehensiveness, conciseness or fluency at or below the threshold",
    "not_judged": "the judge gave no scores",
    "empty_answer": "no answer sentence was extracted",
    "llm_failed": "the model's call for the question or the answer failed",
    "judge_failed": "the judge's call failed",
    "invalid_ids": "the model chose paragraphs or sentences that the window does not have",
    "non_english_citation": "the answer cites a judgment that is not in English",
    "whole_case_citation": "the answer cites a whole case without a pinpoint paragraph",
    "unresolved_citation": "a cited case could not be resolved to a HUDOC judgment",
    "no_resolved_pinpoint": "no citation resolves to a judgment paragraph",
    "names_case_or_country": "the question names a case or a country",
    "duplicate_question_of": "the question repeats an earlier kept question (cosine similarity at or above the "
                             "dedupe threshold)",
}


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
    pairs, types = release_rows(con, "aquaechr/release_pairs.sql")
    if pairs.empty:
        removals = run_sql(con, "aquaechr/removal_reasons.sql").fetchall()
        if not removals:
            raise NothingToRelease("curated.aquaechr_qa has no pairs: run `caseforge build aquaechr` first")
        removed = ", ".join(f"{reason} {n}" for reason, n in removals)
        hint = "; the judge removed them as low quality (docs/releases.md: a judge model that can score them)" \
            if any(reason == "low_quality" for reason, _ in removals) else ""
        raise NothingToRelease(f"curated.aquaechr_qa keeps none of its {sum(n for _, n in removals)} pairs "
                               f"(removed: {removed}){hint}")
    pairs["citations"] = pairs["citations"].map(json.loads)
    pairs["source_payload_sha256"] = pairs["source_payload_sha256"].map(lambda v: [] if v is None else list(v))
    per_guide = run_sql(con, "aquaechr/counts_by_guide_strategy.sql").fetchall()
    removals = {reason: int(n) for reason, n in run_sql(con, "aquaechr/removal_reasons.sql").fetchall()}
    stats = distributions_of(pairs)
    stages = card_rows(con, "aquaechr/build_steps.sql")
    card = {
        "title": "AQuAECHR (caseforge build)",
        "description": "Question–answer pairs from the ECHR case-law guides. Answers are guide sentences copied "
                       "verbatim; each sentence carries its guide citations resolved to HUDOC judgments and "
                       "pinpoint paragraphs.",
        "licence": "aquaechr",
        "language": ["en"],
        "task_categories": ["question-answering"],
        "tags": ["legal", "attributed-qa", "echr", "caseforge"],
        "citation": CITATION,
        "intended_use": "Evaluating attributed question answering on European Court of Human Rights case law: "
                        "answer the question and cite the judgments (and paragraphs) that support each sentence. "
                        "`fresh` holds the pairs built from guide versions dated after the cutoff.",
        "limitations": "Questions are written by a language model and filtered by a language-model judge, not "
                       "by lawyers. Answers are guide sentences, so they carry the guide's wording and its "
                       "choice of cases; a citation whose judgment the warehouse lacks has no passage text. The "
                       "ECHR's reuse terms (non-commercial, source named) apply beside the licence above.",
        "build": "Windows of guide paragraphs are turned into questions by six strategies (one paragraph, several, "
                 "chosen sentences, and three search-based ones that extract answer sentences from related "
                 "passages). A judge of another model family scores comprehensiveness, conciseness and fluency; "
                 "pairs below the threshold and near duplicates are removed (reasons counted below). Each row "
                 "names the question model and judge with their prompt hashes.",
        "sources": ["echr_guides", "hudoc", "aquaechr"],
        "stages": stages,
        "llm_cost": release_cost(con, stages),
        "quality": card_rows(con, "ops/quality_for_release.sql", [["aquaechr_qa", "guide_paragraphs",
                                                                   "guide_citations"]]),
        "distributions": {
            "strategy (kept pairs)": {str(k): int(v) for k, v in pairs["strategy"].value_counts().items()},
            "guide (kept pairs)": {str(k): int(v) for k, v in pairs["guide_id"].value_counts().items()},
            "removal reason": removals,
        },
        "distribution_notes": {
            "strategy (kept pairs)": "The question strategies: i one guide paragraph, ii several paragraphs, iii "
                                     "chosen sentences, iv-a search for related paragraphs, iv-b and iv-c the same "
                                     "with expert reasoning paths.",
            "removal reason": "; ".join(f"`{reason}`: {REMOVAL_REASONS.get(reason, 'no description recorded')}"
                                        for reason in sorted(removals)) + ".",
        },
        "notes": "\n".join([f"- {name} (tokens = words and punctuation marks): {summary(values)}"
                            for name, values in stats.items()] +
                           ["", "Kept and removed pairs per guide and strategy:", ""] +
                           [f"- {g} / {s}: kept {k}, removed {r}" for g, s, k, r in per_guide]),
    }
    payloads = run_sql(con, "aquaechr/release_payloads.sql").df()
    return write_release(folder, DATASET, {"aquaechr_qa": pairs}, card,
                         source_payloads=payloads if not payloads.empty else None,
                         columns=COLUMNS, types={**types, **TYPES}, date_column="source_date",
                         judge=release_judge(con, DATASET), harness=harness_spec(con))

