"""The `casefacts` release: the built claims per split, with its card, written by caseforge.release."""
from __future__ import annotations

from pathlib import Path

import duckdb

from caseforge.llm.cache import release_cost
from caseforge.release import NothingToRelease, Release, card_rows, release_rows, write_release
from caseforge.review.card import release_judge
from caseforge.tasks.casefacts.harness import harness_spec
from caseforge.tasks.casefacts.release_columns import COLUMNS
from caseforge.warehouse.statements import run_sql

DATASET = "casefacts"
INPUTS = ("curated.casefacts_claims",)

# The method this release follows (authors and title as the paper gives them; the text we hold names no year).
CITATION = """@misc{putta_casefacts,
  title  = {CaseFacts: A Benchmark for Legal Fact-Checking and Precedent Retrieval},
  author = {Putta, Akshith Reddy and Devasier, Jacob and Li, Chengkai},
  note   = {University of Texas at Arlington}
}"""


def split_use(splits: dict) -> str:
    """How to use the splits this release has (a small build may put every claim in one of them)."""
    if {"train", "test"} <= set(splits):
        return "Train on `train`, report on `test`."
    only = next(iter(splits))
    return (f"This release has only the `{only}` split ({len(splits[only])} claims): the build assigned no claim to "
            f"`{'test' if only == 'train' else 'train'}`, so it offers no held-out evaluation of its own.")


def llm_cost(con: duckdb.DuckDBPyConnection, stages: list[dict]) -> list[dict]:
    """What the answers behind the card's stages cost (ops.casefacts_build_steps names a step without the
    `casefacts.` its LLM calls are recorded under)."""
    return release_cost(con, [{**s, "stage": f"casefacts.{s['stage']}"} for s in stages])


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    claims, types = release_rows(con, "casefacts/export_claims.sql")
    if claims.empty:
        raise NothingToRelease("curated.casefacts_claims is empty: run `caseforge build casefacts` first")
    for column in ("evidence_case_names", "overruling_case_names", "source_payload_sha256"):
        claims[column] = claims[column].map(lambda v: [] if v is None else list(v))
    splits = {str(split): part.reset_index(drop=True) for split, part in claims.groupby("split")}
    windows = card_rows(con, "casefacts/release_windows.sql")
    window_lines = "\n".join(f"- {w['kind']}: [{w['low']}, {w['high']}] from {w['positives']} detected among "
                             f"{w['judged']} judged samples ({w['method']})" for w in windows)
    quality = card_rows(con, "ops/quality_for_release.sql", [["casefacts_claims"]])
    stages = card_rows(con, "casefacts/build_steps.sql")
    card = {
        "title": "CaseFacts (caseforge build)",
        "description": "Plain-language legal claims labelled SUPPORTED, REFUTED or OVERRULED against U.S. Supreme "
                       "Court cases (Oyez summaries). Overrulings are kept only when the overruling case was "
                       "decided after the overruled one and its disposition is a reversal.",
        "licence": "casefacts",
        "language": ["en"],
        "task_categories": ["text-classification"],
        "tags": ["legal", "fact-checking", "us-supreme-court", "caseforge"],
        "citation": CITATION,
        "intended_use": "Evaluating fact verification of everyday-language legal claims against U.S. Supreme Court "
                        "precedent: retrieve the evidence cases, then say whether the claim is supported, refuted, "
                        "or was good law once but has since been overruled. " + split_use(splits) + " `fresh` asks "
                        "the same question about cases decided after the cutoff.",
        "limitations": "Claims are written and checked by language models and are not reviewed by lawyers; the "
                       "models named below decide their quality (the small packaged models of a demo run make "
                       "claims unfit for publication). Evidence is Oyez's summaries, not the opinions. An overruling "
                       "is only as complete as the overrulings the pipeline found among the cases it read, and "
                       "non-commercial terms apply (CC BY-NC).",
        "build": "Claims are generated from the facts, question and conclusion of each case, kept only when a "
                 "model of another family finds them supported, checked for contradiction and redundancy within "
                 "and across cases (similarity windows calibrated on judged samples), negated and rewritten into "
                 "REFUTED claims, and labelled OVERRULED when a later case with a reversal disposition overrules "
                 "them. Each row names the step that wrote its text with that step's model and prompt hash.",
        "sources": ["oyez", "scotus_legacy", "casefacts"],
        "distributions": {f"label ({split})": {str(k): int(v) for k, v in part["label"].value_counts().items()}
                          for split, part in splits.items()},
        "quality": quality,
        "stages": stages,
        "llm_cost": llm_cost(con, stages),
        "notes": "Similarity windows calibrated from judged samples:\n\n" + (window_lines or "- none recorded"),
    }
    return write_release(folder, DATASET, splits, card,
                         source_payloads=run_sql(con, "casefacts/release_payloads.sql").df(),
                         columns=COLUMNS, types=types, date_column="source_date",
                         judge=release_judge(con, DATASET), harness=harness_spec(con, splits))

