"""The one way a parsed batch reaches curated: gate, then staging, then the curate SQL, atomically."""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pandas as pd

from caseforge import gate as quality
from caseforge.warehouse import replace_staging, run_sql, transaction


@dataclass
class LoadOutcome:
    staged: int = 0
    quarantined: int = 0
    batch_rejected: bool = False
    reasons: list[str] = field(default_factory=list)
    changes: dict[str, int] = field(default_factory=dict)


def gate_and_load(
    con: duckdb.DuckDBPyConnection,
    run_id: int | None,
    table: str,
    frame: pd.DataFrame,
    curate_sql: str,
    key_column: str,
    change_counts_sql: str | None = None,
) -> LoadOutcome:
    """Validate `frame` against expectations/<table>.json; load what passes.

    Validation results and quarantined rows are committed even when the batch is rejected,
    and the staging write plus curate SQL run in one transaction, so a kill leaves either the
    old curated table or the new one.
    """
    outcome = LoadOutcome()
    if frame.empty:
        return outcome
    result = quality.validate(table, frame)
    with transaction(con):
        quality.record(con, run_id, frame, result, key_column=key_column)
        outcome.quarantined = result.rows_failed
        outcome.batch_rejected = result.batch_rejected
        if result.batch_rejected:
            outcome.reasons.append(f"{table}: batch of {len(frame)} rejected: " + "; ".join(result.batch_reasons))
        else:
            for i, reasons in sorted(result.failed_rows.items()):
                key = frame.iloc[i][key_column] if 0 <= i < len(frame) else "?"
                outcome.reasons.append(f"{table} {key_column}={key}: " + "; ".join(reasons))
        if not result.passed.empty:
            replace_staging(con, table, result.passed)
            if change_counts_sql:
                row = run_sql(con, change_counts_sql)
                names = [d[0] for d in row.description]
                outcome.changes = dict(zip(names, (int(v or 0) for v in row.fetchone())))
            run_sql(con, curate_sql)
            outcome.staged = len(result.passed)
    return outcome
