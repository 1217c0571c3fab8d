"""The `casegen` release: the drafting items (one gold section to write per item, its inputs and reference)
with a card, written by caseforge.release."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from caseforge.release import NothingToRelease, Release, write_release
from caseforge.warehouse import run_sql

DATASET = "casegen"
INPUTS = ("curated.casegen_items",)


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    items = run_sql(con, "casegen/release_items.sql").df()
    if items.empty:
        raise NothingToRelease("curated.casegen_items is empty: run `caseforge build casegen` first")
    items["inputs"] = items["inputs"].map(json.loads)
    skips = {f"{task}: {reason}": int(n) for task, reason, n in con.execute(
        "SELECT task, reason, count(*) FROM curated.casegen_item_skips GROUP BY ALL").fetchall()}
    card = {
        "title": "CaseGen drafting items (caseforge build)",
        "description": "Chinese judgment drafting tasks: for each task (defense, facts, reasoning, judgment) "
                       "the gold input sections of one judgment and the section to draft as its reference. "
                       "Items come from curated.cn_judgments (or a CaseGen-format file, named in `source`).",
        "sources": ["cn", "casegen"],
        "distributions": {
            "task": {str(k): int(v) for k, v in items["task"].value_counts().items()},
            "source": {str(k): int(v) for k, v in items["source"].value_counts().items()},
            "task not built (reason)": skips,
        },
    }
    payloads = run_sql(con, "casegen/release_payloads.sql").df()
    return write_release(folder, DATASET, {"casegen_items": items}, card,
                         source_payloads=payloads if not payloads.empty else None)
