"""The `scotus` release: curated.scotus_cases with its card, written by caseforge.release."""
from __future__ import annotations

from pathlib import Path

import duckdb

from caseforge.release import NothingToRelease, Release, card_rows, release_rows, write_release
from caseforge.tasks.oyez.release_columns import COLUMNS
from caseforge.warehouse.statements import run_sql

DATASET = "scotus"
INPUTS = ("curated.scotus_cases",)

# The source this release follows: Oyez, whose case summaries and metadata the table carries.
CITATION = """@misc{oyez,
  title        = {Oyez},
  howpublished = {\\url{https://www.oyez.org}},
  note         = {U.S. Supreme Court case summaries and metadata; CC BY-NC 4.0}
}"""


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    cases, types = release_rows(con, "oyez/release_scotus_cases.sql")
    if cases.empty:
        raise NothingToRelease("curated.scotus_cases is empty: run `caseforge ingest oyez` first")
    payloads = run_sql(con, "oyez/release_payloads.sql").df()
    distributions: dict[str, dict[str, int]] = {}
    for name, value, n in run_sql(con, "oyez/release_distribution.sql").fetchall():
        distributions.setdefault(name, {})[value] = int(n)
    quality = card_rows(con, "ops/quality_for_release.sql", [["scotus_cases", "scotus_legacy"]])
    card = {
        "title": "scotus: U.S. Supreme Court case summaries (Oyez)",
        "description": "Case summaries from the Oyez API (facts, question, conclusion, votes, decision "
                       "dates), with the disposition carried by the Oyez-derived legacy table.",
        "licence": "oyez",
        "language": ["en"],
        "task_categories": ["text-classification", "summarization"],
        "tags": ["legal", "us-supreme-court", "oyez", "caseforge"],
        "citation": CITATION,
        "intended_use": "A case table for legal NLP: the evidence corpus of CaseFacts, retrieval over case "
                        "summaries, outcome and vote studies. `fresh` holds the cases decided after the cutoff.",
        "limitations": "The summaries are Oyez's, not the Court's opinions; a case Oyez has not summarised has "
                       "empty fields. Dispositions come from an Oyez-derived table that states no licence and "
                       "covers fewer cases. Non-commercial terms apply (CC BY-NC).",
        "build": "Parsed from Oyez case-detail answers (each archived with its sha256), gated by the "
                 "scotus_cases quality suite; no language model takes part, so rows carry no model or prompt "
                 "hash.",
        "sources": ["oyez", "scotus_legacy"],
        "distributions": distributions,
        "distribution_notes": {
            "decision_type": "Oyez's type of the case's main decision; `(empty)`: Oyez lists no decision for the "
                             "case.",
            "disposition": "What the Court did with the decision under review, as the Oyez-derived legacy table "
                           "records it (`reversed/remanded`: reversed and sent back, `vacated/remanded`: set aside "
                           "and sent back, `reversed in-part`: partly reversed). `none` is the legacy table's own "
                           "value for a case it gives no disposition; `(empty: not in the legacy table)`: the legacy "
                           "table does not list the case; `(empty in the legacy table)`: it lists the case with an "
                           "empty disposition.",
        },
        "quality": quality,
        "stages": [],
    }
    return write_release(folder, DATASET, {"scotus_cases": cases}, card, source_payloads=payloads,
                         columns=COLUMNS, types=types, date_column="decided_date")
