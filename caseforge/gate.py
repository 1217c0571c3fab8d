"""The quality gate: validate a batch against its great-expectations suite before it is written.

Suites live in expectations/<table>.json. An expectation that fails on particular rows
(a null name, a malformed term, degenerate text a model wrote) quarantines those rows with the
reason and lets the rest land. A table-level failure (row count, duplicate keys) or too many bad
rows (the parser, or the model, is probably broken) rejects the whole batch: nothing is written
and the run says so; each row keeps its own reasons in the quarantine.

Besides great-expectations' own expectations a suite may name the text checks of
caseforge.text_expectations, and include a named set of them for one column with
{"type": "include_text_rules", "kwargs": {"column": C, "rules": NAME, ...}}: the set NAME of
expectations/text_rules.json, each given `column` and the other kwargs (a row_condition, say).
"""
from __future__ import annotations

import json
import logging
import time
import os
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache

import duckdb
import pandas as pd

from caseforge.settings import EXPECTATIONS_DIR
from caseforge.warehouse.statements import run_sql, sql_text

log = logging.getLogger(__name__)

BATCH_LEVEL_TYPES = frozenset({
    "expect_column_values_to_be_unique",
    "expect_compound_columns_to_be_unique",
    "expect_select_column_values_to_be_unique_within_record",
})
DEFAULT_MAX_FAILED_ROW_FRACTION = 0.5
MIN_ROWS_FOR_FRACTION_RULE = 20
# One GX context serves the process and is not thread-safe: parallel sources must take turns.
_GX_LOCK = threading.Lock()


@dataclass
class GateResult:
    table: str
    suite: str
    rows_checked: int
    passed: pd.DataFrame
    failed_rows: dict[int, list[str]] = field(default_factory=dict)   # positional index -> reasons
    batch_rejected: bool = False
    batch_reasons: list[str] = field(default_factory=list)
    result_json: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return not self.batch_rejected and not self.failed_rows

    @property
    def rows_failed(self) -> int:
        return self.rows_checked if self.batch_rejected else len(self.failed_rows)


INCLUDE_TEXT_RULES = "include_text_rules"
TEXT_RULES_FILE = "text_rules.json"


def load_suite_json(table: str) -> dict:
    """expectations/<table>.json, with every include_text_rules entry replaced by the expectations of its set."""
    path = EXPECTATIONS_DIR / f"{table}.json"
    if not path.exists():
        raise FileNotFoundError(f"no expectation suite for {table}: expected {path}")
    return expand_text_rules(json.loads(path.read_text(encoding="utf-8")), path.name)


def suite_fingerprint(*tables: str) -> str:
    """A hash of the gate's suites for these tables as validate() applies them (text rule sets included): what a
    payload with quarantined records was checked against; a change tries it again (ParsedPayloads)."""
    import hashlib

    suites = json.dumps([load_suite_json(table) for table in tables], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(suites.encode("utf-8")).hexdigest()


def expand_text_rules(suite: dict, where: str) -> dict:
    """`suite` with each include_text_rules entry replaced by its set's expectations, given its other kwargs."""
    expectations = []
    for expectation in suite["expectations"]:
        if expectation["type"] != INCLUDE_TEXT_RULES:
            expectations.append(expectation)
            continue
        kwargs = dict(expectation["kwargs"])
        name = kwargs.pop("rules")
        rules = text_rules().get(name)
        if rules is None:
            raise ValueError(f"{where}: no text rule set {name!r} in {TEXT_RULES_FILE} "
                             f"(known: {', '.join(sorted(text_rules()))})")
        expectations += [{"type": rule["type"], "kwargs": {**rule["kwargs"], **kwargs}, "meta": {"text_rules": name}}
                         for rule in rules]
    return {**suite, "expectations": expectations}


@lru_cache(maxsize=1)
def text_rules() -> dict[str, list[dict]]:
    """expectations/text_rules.json: rule set name -> its expectations (without a column)."""
    rules = json.loads((EXPECTATIONS_DIR / TEXT_RULES_FILE).read_text(encoding="utf-8"))
    return {name: value for name, value in rules.items() if not name.startswith("_")}


@lru_cache(maxsize=1)
def _context():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx  # slow import (seconds): only when a gate runs
    from great_expectations.data_context.types.base import ProgressBarsConfig

    import caseforge.text_expectations  # noqa: F401 - registers the text checks as expectations

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        ctx.data_sources.add_pandas("caseforge")
        .add_dataframe_asset("batch")
        .add_batch_definition_whole_dataframe("whole")
    )
    return gx, batch_definition


def _describe(expectation: dict) -> str:
    kwargs = {k: v for k, v in expectation.get("kwargs", {}).items()
              if k not in ("column", "batch_id", "row_condition", "condition_parser")}
    column = expectation.get("kwargs", {}).get("column")
    where = f" on {column}" if column else ""
    extra = f" {json.dumps(kwargs, ensure_ascii=False, default=str)}" if kwargs else ""
    return f"{expectation['type']}{where}{extra}"


def _gx_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """GX's pandas metrics choke on list/dict cells; give them a JSON view of such columns."""
    safe = frame.reset_index(drop=True).copy()
    for column in safe.columns:
        sample = safe[column].dropna().head(20)
        if any(isinstance(v, (list, dict, tuple)) or hasattr(v, "tolist") for v in sample):
            safe[column] = safe[column].map(lambda v: None if v is None else json.dumps(
                v.tolist() if hasattr(v, "tolist") else v, ensure_ascii=False, default=str))
    return safe


def validate(table: str, frame: pd.DataFrame, suite_json: dict | None = None) -> GateResult:
    """The batch against its table's suite (or `suite_json`, a suite in the same form); a progress line says how
    it went and how long it took."""
    started = time.monotonic()
    result = _validate(table, frame, suite_json or load_suite_json(table))
    log.info("gate %s: %d rows checked, %d passed, %s in %.1fs", table, result.rows_checked, len(result.passed),
             "batch rejected" if result.batch_rejected else f"{len(result.failed_rows)} quarantined",
             time.monotonic() - started)
    return result


def _validate(table: str, frame: pd.DataFrame, suite_json: dict) -> GateResult:
    frame = frame.reset_index(drop=True)
    result = GateResult(table=table, suite=suite_json["name"], rows_checked=len(frame), passed=frame)
    safe = _gx_safe(frame)
    with _GX_LOCK:
        gx, batch_definition = _context()
        suite = gx.ExpectationSuite(name=suite_json["name"], expectations=suite_json["expectations"])
        batch = batch_definition.get_batch(batch_parameters={"dataframe": safe})
        outcome = batch.validate(suite, result_format="COMPLETE")
        result.result_json = outcome.to_json_dict()
    for item in outcome.results:
        if item.success:
            continue
        config = item.expectation_config.to_json_dict()
        reason = _describe(config)
        indexes = (item.result or {}).get("unexpected_index_list")
        if config["type"] in BATCH_LEVEL_TYPES or indexes is None:
            result.batch_reasons.append(reason)
            continue
        for index in indexes:
            position = index if isinstance(index, int) else int(index.get("index", -1)) if isinstance(index, dict) else -1
            result.failed_rows.setdefault(position, []).append(reason)
    meta = suite_json.get("meta", {})
    fraction = float(meta.get("max_failed_row_fraction", DEFAULT_MAX_FAILED_ROW_FRACTION))
    if len(frame) >= MIN_ROWS_FOR_FRACTION_RULE and len(result.failed_rows) > fraction * len(frame):
        result.batch_reasons.append(
            f"{len(result.failed_rows)} of {len(frame)} rows failed (more than {fraction:.0%}): "
            f"{meta.get('broken', 'the parser')} is probably broken"
        )
    if result.batch_reasons:
        result.batch_rejected = True
        result.passed = frame.iloc[0:0]
    elif result.failed_rows:
        keep = [i for i in range(len(frame)) if i not in result.failed_rows]
        result.passed = frame.iloc[keep].reset_index(drop=True)
    return result


def _row_json(row: pd.Series) -> str:
    return json.dumps({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in row.items()},
                      ensure_ascii=False, default=str)


def record(con: duckdb.DuckDBPyConnection, run_id: int | None, frame: pd.DataFrame, result: GateResult,
           key_column: str | None = None) -> dict[int, int | None]:
    """Keep the validation result, and quarantine what did not pass; returns the known problems among them
    (position → the run that first quarantined that record; see keep_quarantined)."""
    now = datetime.now(timezone.utc)
    frame = frame.reset_index(drop=True)
    failed = [{"expectation": reason, "scope": "batch"} for reason in result.batch_reasons]
    failed += [{"row": i, "reasons": reasons} for i, reasons in sorted(result.failed_rows.items())[:200]]
    run_sql(
        con, "ops/record_quality_result.sql",
        [run_id, result.table, result.suite, now, result.success, result.rows_checked, result.rows_failed,
         result.batch_rejected, json.dumps(failed, default=str), json.dumps(result.result_json, default=str)],
    )
    if result.batch_rejected:
        reason = "batch rejected by gate: " + "; ".join(result.batch_reasons)
        rows = range(len(frame))
    else:
        rows = sorted(result.failed_rows)
    positions, quarantined = [], []
    for i in rows:
        if i < 0 or i >= len(frame):
            continue
        row = frame.iloc[i]
        own = "gate: " + "; ".join(result.failed_rows[i]) if i in result.failed_rows else None
        why = "; ".join(filter(None, [own, reason])) if result.batch_rejected else own
        key = str(row[key_column]) if key_column and key_column in row and row[key_column] is not None else None
        sha = row.get("raw_sha256") if "raw_sha256" in row else None
        positions.append(i)
        quarantined.append((run_id, result.table, key, "gate", why, _row_json(row), sha, now))
    kept = keep_quarantined(con, quarantined)
    return {position: since for position, (known, since) in zip(positions, kept) if known}


def keep_quarantined(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> list[tuple[bool, int | None]]:
    """Write quarantine rows (run_id, table, source_key, stage, reason, row_data, raw_sha256, quarantined_at) to
    ops.quarantine, except those whose identity (table, payload, record, stage, reason) it already holds: a known
    problem, found again by a re-parse, is not added twice (two new rows of one call that share an identity, such as
    duplicate keys of a rejected batch, are both written). Returns for each row whether it was known and the run
    that first quarantined it (None for a new one). A row without a payload (a failed fetch) has no identity: it
    is always written. Every row with a payload is also noted for the ledger (ops/quarantine_seen.sql)."""
    known: dict[int, int | None] = {}
    identified = [(i, r[1], r[2], r[3], r[4], r[6]) for i, r in enumerate(rows) if r[6] is not None]
    if identified:
        con.register("_quarantine", pd.DataFrame(identified, columns=[
            "position", "table_name", "source_key", "stage", "reason", "raw_sha256"]))
        try:
            known = {position: since for position, found, since in run_sql(con, "ops/known_quarantine.sql").fetchall()
                     if found}
        finally:
            con.unregister("_quarantine")
    new = [row for i, row in enumerate(rows) if i not in known]
    seen = [(row[0], row[6], known[i] if i in known else row[0]) for i, row in enumerate(rows) if row[6] is not None]
    if new:
        con.executemany(sql_text("ops/quarantine_row.sql"), new)
    if seen:
        run_sql(con, "ops/quarantine_seen.sql")
        con.register("_seen", pd.DataFrame(seen, columns=["run_id", "raw_sha256", "since"]))
        try:
            run_sql(con, "ops/remember_quarantine_seen.sql")
        finally:
            con.unregister("_seen")
    return [(i in known, known.get(i)) for i in range(len(rows))]


def gate(con: duckdb.DuckDBPyConnection, run_id: int | None, table: str, frame: pd.DataFrame,
         key_column: str | None = None) -> GateResult:
    result = validate(table, frame)
    record(con, run_id, frame, result, key_column=key_column)
    if result.batch_rejected:
        log.error("gate rejected the %s batch: %s", table, "; ".join(result.batch_reasons))
    elif result.failed_rows:
        log.warning("gate quarantined %d of %d %s rows", len(result.failed_rows), result.rows_checked, table)
    return result


def rejected_rows(con: duckdb.DuckDBPyConnection, run_id: int | None, suite: str, frame: pd.DataFrame,
                  key_column: str) -> dict:
    """`gate` for what a model wrote in one pass (`frame`, keyed by `key_column`): the key of every row that did
    not pass, with its reasons (every row's, when the batch was rejected)."""
    result = gate(con, run_id, suite, frame, key_column=key_column)
    keys = list(frame[key_column])
    return {keys[p]: "; ".join(result.failed_rows.get(p, result.batch_reasons)) for p in range(len(keys))
            if result.batch_rejected or p in result.failed_rows}


def quarantine(con: duckdb.DuckDBPyConnection, run_id: int | None, table: str, stage: str, reason: str,
               source_key: str | None = None, raw_sha256: str | None = None,
               row_data: dict | None = None) -> tuple[bool, int | None]:
    """Record an item that never reached the gate (fetch or parse failure); returns whether it was a known
    problem and since which run (keep_quarantined)."""
    [kept] = keep_quarantined(con, [(
        run_id, table, source_key, stage, reason,
        json.dumps(row_data, ensure_ascii=False, default=str) if row_data is not None else None,
        raw_sha256, datetime.now(timezone.utc))])
    return kept


@dataclass(frozen=True)
class ParseProblem:
    """One input that could not become rows: where it is (file, and line or key) and why."""

    where: str                       # as the run's report names it: "file/x.jsonl line 10", "2015/14-1096 (file y.json)"
    reason: str
    raw_sha256: str | None = None
    row_data: dict | None = None
    key: str | None = None           # ops.quarantine.source_key when it differs from `where` (an archive key)


def failure_reason(exc: BaseException) -> str:
    """A parser failure as a quarantine reason. A parser's own error (a ValueError subclass it defines) says why
    in its message; anything else is a parser bug on this input and is named with its type."""
    if isinstance(exc, ValueError) and type(exc).__module__ not in ("builtins", "json.decoder"):
        return str(exc) or type(exc).__name__
    return f"parser error {type(exc).__name__}: {exc}"


def quarantine_problem(con: duckdb.DuckDBPyConnection, run_id: int | None, table: str, problem: ParseProblem,
                       report, label: str, counter: str = "quarantined", stage: str = "parse") -> None:
    """Quarantine one problem and put it on the run's report: a counter and one line naming where and why.
    Whatever `counter` is called, it is also counted as `quarantined`, the name every stage shares. A known
    problem (the same record of the same payload quarantined before for the same reason) is counted as known
    instead: it is neither quarantined again nor a failure of this run."""
    known, since = quarantine(con, run_id, table, stage, problem.reason, source_key=problem.key or problem.where,
                              raw_sha256=problem.raw_sha256, row_data=problem.row_data)
    if known:
        report.known_problems(1, since=since)
        return
    report.add(counter)
    if counter != "quarantined":
        report.add("quarantined")
    report.fail(f"{label} {problem.where}: {problem.reason}")
