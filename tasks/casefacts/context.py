"""What every CaseFacts stage shares: the build's context (connection, run, report, configuration, backends,
embedder, the source cases), an LLM job of a step with its counts and build-step record, and a stage table gated
into its schema (curated for the dataset's claims, build for the intermediates later stages read back)."""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pandas as pd

from caseforge.artifacts import publish_table
from caseforge.llm import SamplingParams, run_job
from caseforge.llm.config import Backends
from caseforge.load import CuratedTable, gate_and_load
from caseforge.stage_report import StageReport
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.tasks.casefacts.leaks import find_leaks
from caseforge.text import html_to_text
from caseforge.warehouse.statements import run_sql, transaction

DELIVERABLE = "claims"      # curated.casefacts_claims; every other casefacts_* table is a build intermediate


@dataclass
class BuildContext:
    con: duckdb.DuckDBPyConnection
    run_id: int | None
    report: StageReport
    config: BuildConfig
    backends: Backends | dict            # per step and role; a dict of role → backend (test doubles) works too
    embedder: object = None
    cases: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self):
        if isinstance(self.backends, dict):
            self.backends = Backends(fixed=self.backends)

    def backend(self, step: str):
        """The backend answering `step` (its role from the config; its model from the settings)."""
        return self.backends.for_step(f"casefacts.{step}", self.config.role_of(step))

    def case(self, case_id: int) -> dict:
        return self._by_id[int(case_id)]

    def load_cases(self) -> None:
        self.cases = run_sql(self.con, "casefacts/source_cases.sql", {"limit": self.config.limit}).df()
        self._by_id = {int(r["case_id"]): r for r in self.cases.to_dict("records")}


def params(config: BuildConfig, step: str, max_tokens: int = 400) -> SamplingParams:
    return SamplingParams(temperature=config.temperature, top_p=config.top_p, max_tokens=max_tokens,
                          seed=config.seed)


def job(ctx: BuildContext, step: str, requests: list, model_cls):
    backend = ctx.backend(step)
    result = run_job(ctx.con, f"casefacts.{step}", backend, requests, model_cls)
    for name, value in result.counts().items():
        ctx.report.add(f"{step}.{name}", value)
    ctx.report.add("cache_hits", result.cache_hits)        # the name every stage shares (nightly summary)
    if requests:
        run_sql(ctx.con, "casefacts/record_build_step.sql",
                [ctx.run_id, step, backend.model, requests[0].template_id, requests[0].template_sha,
                 len(requests)])
    return result


def stage_schema(table: str) -> str:
    """Where casefacts_<table> lives: curated for the dataset users query, build for the stage tables
    only later stages (and the dataset card) read back."""
    return "curated" if table == DELIVERABLE else "build"


def load_stage(ctx: BuildContext, table: str, frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Gate a stage table and replace <stage_schema>.casefacts_<table>; returns the rows that passed, in key
    order."""
    name = f"casefacts_{table}"
    identifiers = {"schema": stage_schema(table), "table": name, "key": key}
    if frame.empty:
        _clear(ctx, identifiers)
        ctx.report.add(f"{table}.rows", 0)
        _stage_artifact(table, 0, 0, [])
        return run_sql(ctx.con, "casefacts/stage_rows.sql", identifiers=identifiers).df()   # empty, with its columns
    deliverable = table == DELIVERABLE
    outcome = gate_and_load(ctx.con, ctx.run_id, frame, CuratedTable(
        name, "casefacts/replace_stage_table.sql", key, identifiers,
        change_counts_sql="ops/row_change_counts.sql" if deliverable else None))
    if not outcome.staged and not (deliverable and outcome.batch_rejected):
        # nothing passed the gate: this build's stage holds no row (never the last build's rows); a rejected batch
        # of the deliverable leaves curated as it was, as every rejected batch does
        _clear(ctx, identifiers)
    # the dataset's claims are the build's records: new/changed in the columns every stage shares
    outcome.report_to(ctx.report, f"{table}.rows", changes_prefix=f"{table}.", records=deliverable)
    _stage_artifact(table, outcome.staged, outcome.quarantined, outcome.reasons)
    # in key order: later stages index rows by position (pair orientation, screening), so it must not vary
    return run_sql(ctx.con, "casefacts/stage_rows.sql", identifiers=identifiers).df()


def _clear(ctx: BuildContext, identifiers: dict) -> None:
    with transaction(ctx.con):
        run_sql(ctx.con, "ops/clear_staging_table.sql", identifiers=identifiers)
        run_sql(ctx.con, "casefacts/replace_stage_table.sql", identifiers=identifiers)


def _stage_artifact(table: str, staged: int, quarantined: int, reasons: list[str]) -> None:
    rows = [{"table": f"{stage_schema(table)}.casefacts_{table}", "rows": staged, "quarantined": quarantined,
             "problems": len(reasons)}]
    publish_table(f"casefacts-{table}", rows, "; ".join(reasons[:20]) or f"casefacts stage table {table}")


def clean(text: str | None) -> str:
    return " ".join((html_to_text(text or "") or "").split())


def claim_leaks(ctx: BuildContext, claim: str, case_ids: list[int]) -> list[str]:
    """Identifiers in a claim (party names, dates, citations, court phrasing): it must state a principle."""
    cases = [ctx.case(c) for c in case_ids]
    return find_leaks(claim, [c["name"] for c in cases],
                      {c["name"]: (c["first_party"], c["second_party"]) for c in cases})
