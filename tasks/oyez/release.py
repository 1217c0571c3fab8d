"""The `scotus` release: curated.scotus_cases with its card, written by caseforge.release."""
from __future__ import annotations

from pathlib import Path

import duckdb

from caseforge.release import NothingToRelease, Release, write_release
from caseforge.warehouse import run_sql

DATASET = "scotus"
INPUTS = ("curated.scotus_cases",)


def write(con: duckdb.DuckDBPyConnection, folder: str | Path) -> Release:
    cases = run_sql(con, "oyez/release_scotus_cases.sql").df()
    if cases.empty:
        raise NothingToRelease("curated.scotus_cases is empty: run `caseforge ingest oyez` first")
    payloads = run_sql(con, "oyez/release_payloads.sql").df()
    distributions: dict[str, dict[str, int]] = {}
    for name, value, n in run_sql(con, "oyez/release_distribution.sql").fetchall():
        distributions.setdefault(name, {})[value] = int(n)
    quality_cursor = run_sql(con, "ops/quality_for_release.sql", [["scotus_cases", "scotus_legacy"]])
    columns = [d[0] for d in quality_cursor.description]
    quality = [dict(zip(columns, row)) for row in quality_cursor.fetchall()]
    card = {
        "title": "scotus: U.S. Supreme Court case summaries (Oyez)",
        "description": "Case summaries from the Oyez API (facts, question, conclusion, votes, decision "
                       "dates), with the disposition carried by the Oyez-derived legacy table.",
        "sources": ["oyez", "scotus_legacy"],
        "distributions": distributions,
        "quality": quality,
        "stages": [],
    }
    return write_release(folder, DATASET, {"scotus_cases": cases}, card, source_payloads=payloads)
