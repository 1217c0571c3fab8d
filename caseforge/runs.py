"""ops.runs bookkeeping and the report every stage returns to the CLI and to Prefect."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

import duckdb

from caseforge.warehouse import run_sql


@dataclass
class StageReport:
    """What a stage did: counts for the UI and one-line reasons for everything that went wrong."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    run_id: int | None = None
    results: dict = field(default_factory=dict)     # what the stage made: an eval run id, a release folder

    def add(self, counter: str, n: int = 1) -> None:
        self.counts[counter] = self.counts.get(counter, 0) + n

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.counts.get("quarantined", 0)

    @property
    def status(self) -> str:
        if self.failures and not self.counts.get("quarantined"):
            return "failed"
        return "succeeded" if self.ok else "quarantined"

    def to_dict(self) -> dict:
        return asdict(self)


def start_run(con: duckdb.DuckDBPyConnection, kind: str, target: str) -> int:
    return run_sql(con, "ops/start_run.sql", [kind, target, datetime.now(timezone.utc)]).fetchone()[0]


def finish_run(con: duckdb.DuckDBPyConnection, run_id: int, report: StageReport) -> None:
    message = "; ".join(report.failures[:20]) or None
    run_sql(con, "ops/finish_run.sql",
            [datetime.now(timezone.utc), report.status, json.dumps(report.counts), message, run_id])
