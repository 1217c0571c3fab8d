"""The one way a parsed batch reaches curated: gate, then staging, then the curate SQL, atomically."""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pandas as pd

from caseforge import gate as quality
from caseforge.stopping import check_stop
from caseforge.warehouse.statements import replace_staging, run_sql, transaction


SHARED_CHANGE_COUNTERS = ("new", "changed")


@dataclass
class LoadOutcome:
    staged: int = 0
    quarantined: int = 0
    batch_rejected: bool = False
    reasons: list[str] = field(default_factory=list)
    changes: dict[str, int] = field(default_factory=dict)
    rejected_sha256: set[str] = field(default_factory=set)   # payloads of a rejected batch: none of it landed
    remade: int = 0                                           # curated rows made again by a re-parse
    known: int = 0                  # rows quarantined before for the same reason (not again, not a failure)
    known_since: int | None = None  # the earliest run that quarantined one of them

    def report_to(self, report, loaded: str, quarantined: str = "quarantined", changes_prefix: str = "",
                  max_reasons: int | None = None, records: bool = True) -> None:
        """Count the outcome on a StageReport under the caller's names, with a failure line per reason —
        and under the one vocabulary every stage shares (the nightly summary's columns): `quarantined`
        always, `new` and `changed` when this table holds the stage's records (`records`; False for a side
        table such as Oyez's legacy table or the guides' citations)."""
        for name, value in self.changes.items():
            report.add(f"{changes_prefix}{name}", value)
            if records and changes_prefix and name in SHARED_CHANGE_COUNTERS:
                report.add(name, value)
        if records:
            for name in SHARED_CHANGE_COUNTERS:
                report.counts.setdefault(name, 0)
        report.add(loaded, self.staged)
        report.add(quarantined, self.quarantined)
        if self.remade:
            report.add(f"{changes_prefix}remade" if changes_prefix else "remade", self.remade)
        if quarantined != "quarantined":
            report.add("quarantined", self.quarantined)
        if self.known:
            report.known_problems(self.known, since=self.known_since)
        for reason in self.reasons[:max_reasons]:
            report.fail(reason)


def batch_frame(rows: list[dict], columns: list[str], key: str | None = None, report=None,
                duplicates_counter: str = "duplicates_in_batch") -> pd.DataFrame:
    """Parsed rows as the frame gate_and_load takes: the given columns, None for missing values and,
    with `key`, one row per key (the last one wins, e.g. a file copied twice into a replay folder;
    how many were dropped is counted on `report`)."""
    frame = pd.DataFrame(rows, columns=columns)
    if key is not None:
        duplicated = frame.duplicated(key, keep="last")
        if duplicated.any():
            if report is not None:
                report.add(duplicates_counter, int(duplicated.sum()))
            frame = frame[~duplicated]
    return frame.astype(object).where(frame.notna(), None)


@dataclass(frozen=True)
class CuratedTable:
    """Where a gated batch lands, and how its new, changed and unchanged rows are counted.

    The batch is validated against expectations/<name>.json and what passes is staged in staging.<name>, then
    `curate_sql` writes it into curated; `identifiers` fill the `{name}` placeholders of a generic curate (and
    change-count) statement. A quarantined row is named by its `key_column`. Changes are counted by
    `change_counts_sql`, or by sql/ops/change_counts.sql comparing `content_column` (a content hash) with curated
    row by row on `change_key` (default: `key_column` alone), or not at all. `unit`: the columns of a unit a
    re-parse replaces as a whole (a case, a judgment's paragraphs)."""

    name: str
    curate_sql: str
    key_column: str
    identifiers: dict[str, str] | None = None
    change_counts_sql: str | None = None
    content_column: str | None = None
    change_key: tuple[str, ...] | None = None
    unit: tuple[str, ...] | None = None


def gate_and_load(con: duckdb.DuckDBPyConnection, run_id: int | None, frame: pd.DataFrame, table: CuratedTable,
                  remake: bool = False) -> LoadOutcome:
    """Validate `frame` against the table's expectations; load what passes (CuratedTable says where and how).

    `remake`: the batch holds a re-parse of payloads whose rows are already in curated (a new parser version,
    --reparse): their units (`table.unit`) are deleted before the curate statement, which then writes them as
    this parse made them (counted as `remade`; their new/changed/unchanged counts are taken before, against the
    rows as they were). `rejected_sha256` of the outcome names the payloads (raw_sha256) of a rejected batch:
    none of their rows landed. A quarantined row that is a known problem (keep_quarantined) is counted as known,
    neither quarantined again nor a failure; a rejected batch is a failure every time.

    Validation results and quarantined rows are committed even when the batch is rejected,
    and the staging write plus curate SQL run in one transaction, so a kill leaves either the
    old curated table or the new one.
    """
    if remake and not table.unit:
        raise ValueError(f"{table.name}: a re-parse replaces whole units, and none is named (CuratedTable.unit)")
    check_stop()                     # a batch is the unit a run stops between
    outcome = LoadOutcome()
    if frame.empty:
        return outcome
    result = quality.validate(table.name, frame)
    with transaction(con):
        known = quality.record(con, run_id, frame, result, key_column=table.key_column)
        outcome.batch_rejected = result.batch_rejected
        if result.batch_rejected:
            outcome.quarantined = result.rows_failed
            if "raw_sha256" in frame.columns:
                outcome.rejected_sha256 = set(frame["raw_sha256"].dropna())
            outcome.reasons.append(f"{table.name}: batch of {len(frame)} rejected: " + "; ".join(result.batch_reasons))
        else:
            outcome.quarantined = result.rows_failed - len(known)
            outcome.known = len(known)
            outcome.known_since = min((s for s in known.values() if s is not None), default=None)
            for i, reasons in sorted(result.failed_rows.items()):
                if i in known:
                    continue
                key = frame.iloc[i][table.key_column] if 0 <= i < len(frame) else "?"
                outcome.reasons.append(f"{table.name} {table.key_column}={key}: " + "; ".join(reasons))
        if not result.passed.empty:
            replace_staging(con, table.name, result.passed)
            counts_sql, counts_names = table.change_counts_sql, table.identifiers
            if table.content_column:
                counts_sql = "ops/change_counts.sql"
                counts_names = {"table": table.name, "key": table.change_key or table.key_column,
                                "content": table.content_column}
            if counts_sql:
                row = run_sql(con, counts_sql, identifiers=counts_names)
                names = [d[0] for d in row.description]
                outcome.changes = dict(zip(names, (int(v or 0) for v in row.fetchone())))
            if remake:
                outcome.remade = int(run_sql(con, "ops/delete_remade_rows.sql",
                                             identifiers={"table": table.name, "unit": table.unit}).fetchone()[0])
            run_sql(con, table.curate_sql, identifiers=table.identifiers)
            outcome.staged = len(result.passed)
    return outcome


def load_batch(con: duckdb.DuckDBPyConnection, run_id: int | None, frame: pd.DataFrame, table: CuratedTable,
               report, remake: bool = False, **counters) -> LoadOutcome | None:
    """gate_and_load of one parsed batch, counted on `report` under `counters` (LoadOutcome.report_to's names);
    None for an empty batch, which loads nothing."""
    if frame.empty:
        return None
    outcome = gate_and_load(con, run_id, frame, table, remake=remake)
    outcome.report_to(report, **counters)
    return outcome


def batches(items: list, size: int):
    """Consecutive slices of at most `size` items: the unit a stage hands to one task."""
    for start in range(0, len(items), size):
        yield items[start:start + size]
