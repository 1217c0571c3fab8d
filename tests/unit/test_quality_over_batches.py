"""The quality gate's results per table over all the batches that make up its current data (the batches of
the run that last validated the table), not the last batch alone: a 238-row table gated in batches of
100 shows 238 rows checked, and fails when any of those batches failed."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from caseforge.flows.nightly_report import quality_rows
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import run_sql

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _result(con, run_id, table, minutes, rows, failed=0, rejected=False):
    run_sql(con, "ops/record_quality_result.sql",
            [run_id, table, f"{table}_suite", T0 + timedelta(minutes=minutes), failed == 0 and not rejected, rows,
             failed, rejected, "[]", "{}"])


def test_rows_checked_are_summed_over_the_batches_of_the_latest_run(tmp_path):
    con = connect(tmp_path / "cf.duckdb")
    for run_id, start in ((1, 0), (2, 60)):          # two nights, each gating scotus_cases in three batches
        for i, rows in enumerate((100, 100, 38)):
            _result(con, run_id, "scotus_cases", start + i, rows)
    _result(con, 1, "echr_judgments", 5, 50, failed=3)       # an older run failed: not today's data
    _result(con, 2, "echr_judgments", 65, 40)
    _result(con, 2, "echr_judgments", 66, 12)
    _result(con, 2, "guide_paragraphs", 70, 30)
    _result(con, 2, "guide_paragraphs", 71, 20, failed=2)    # one batch of today's failed: the table fails

    rows = {r["table_name"]: r for r in quality_rows(con)}
    assert rows["scotus_cases"]["rows_checked"] == 238 and rows["scotus_cases"]["batches"] == 3
    assert rows["scotus_cases"]["success"] is True
    assert rows["scotus_cases"]["validated_at"] == T0 + timedelta(minutes=62)
    assert (rows["echr_judgments"]["rows_checked"], rows["echr_judgments"]["success"]) == (52, True)
    guide = rows["guide_paragraphs"]
    assert (guide["rows_checked"], guide["rows_failed"], guide["success"], guide["batches"]) == (50, 2, False, 2)

    one = run_sql(con, "ops/latest_quality.sql", ["scotus_cases", "scotus_cases"]).fetchall()
    assert len(one) == 1
    release = run_sql(con, "ops/quality_for_release.sql", [["scotus_cases", "guide_paragraphs"]]).fetchall()
    assert [(r[0], r[3]) for r in release] == [("guide_paragraphs", 50), ("scotus_cases", 238)]
    con.close()
