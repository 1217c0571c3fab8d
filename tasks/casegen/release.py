"""The `casegen` release: the drafting items (one gold section to write per item, its inputs and reference)
with a card, written by caseforge.release."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from caseforge.release import NothingToRelease, Release, card_rows, release_rows, write_release
from caseforge.review.card import release_judge
from caseforge.tasks.casegen.harness import harness_spec
from caseforge.tasks.casegen.release_columns import COLUMNS, TYPES
from caseforge.warehouse.statements import run_sql

DATASET = "casegen"
INPUTS = ("curated.casegen_items",)

# The method this release follows. The paper's text we hold has lost its author list: its first author, and the
# year of its arXiv preprint, are given here, the rest as "others".
CITATION = """@misc{li_casegen_2025,
  title  = {CaseGen: A Benchmark for Multi-Stage Legal Case Documents Generation},
  author = {Li, Haitao and others},
  year   = {2025}
}"""


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    items, types = release_rows(con, "casegen/release_items.sql")
    if items.empty:
        raise NothingToRelease("curated.casegen_items is empty: run `caseforge build casegen` first")
    items["inputs"] = items["inputs"].map(json.loads)
    skips = {f"{task}: {reason}": int(n) for task, reason, n in run_sql(con, "casegen/release_skips.sql").fetchall()}
    card = {
        "title": "CaseGen drafting items (caseforge build)",
        "description": "Chinese judgment drafting tasks: for each task (defense, facts, reasoning, judgment) "
                       "the gold input sections of one judgment and the section to draft as its reference. "
                       "Items come from curated.cn_judgments (or a CaseGen-format file, named in `source`).",
        "licence": "casegen",
        "language": ["zh"],
        "task_categories": ["text-generation"],
        "tags": ["legal", "document-drafting", "chinese-law", "caseforge"],
        "citation": CITATION,
        "intended_use": "Evaluating the drafting of sections of Chinese court judgments (defense, facts, reasoning, "
                        "judgment) from the other gold sections, with a judge model and reference metrics. `fresh` "
                        "holds the items from judgments dated after the cutoff.",
        "limitations": "Items are cut from the sections the parser found; a judgment whose sections were "
                       "mis-split gives a wrong task. The references are the courts' own text, not expert "
                       "annotations as in the original benchmark. Non-commercial terms apply (CC BY-NC-SA).",
        "build": "No language model takes part in building the items: each is cut from the gold sections of a "
                 "judgment in curated.cn_judgments (or read from a CaseGen-format file), so rows carry no model "
                 "or prompt hash; they carry the judgment's date and the sha256 of the payload it was parsed from.",
        "sources": ["cn", "casegen"],
        "quality": card_rows(con, "ops/quality_for_release.sql", [["cn_judgments", "casegen_items"]]),
        "distributions": {
            "task": {str(k): int(v) for k, v in items["task"].value_counts().items()},
            "source": {str(k): int(v) for k, v in items["source"].value_counts().items()},
            "task not built (reason)": skips,
        },
    }
    payloads = run_sql(con, "casegen/release_payloads.sql").df()
    return write_release(folder, DATASET, {"casegen_items": items}, card,
                         source_payloads=payloads if not payloads.empty else None,
                         columns=COLUMNS, types={**types, **TYPES}, date_column="judgment_date",
                         judge=release_judge(con, DATASET), harness=harness_spec(con))

