"""Row-level quarantine vs. batch rejection, and what the gate records."""
import json

import pandas as pd

from caseforge.gate import validate
from caseforge.load import CuratedTable, gate_and_load
from caseforge.warehouse.connection import connect


def case_rows(n=3, **overrides):
    rows = []
    for i in range(n):
        row = {c: None for c in ("case_id", "name", "term", "raw_sha256", "majority_vote", "minority_vote",
                                 "facts", "question", "conclusion", "citation")}
        row.update(case_id=i + 1, name=f"A v. B {i}", term="1999", raw_sha256="a" * 64, citation="1 U.S. 1")
        rows.append(row)
    for index, changes in overrides.items():
        rows[int(index.removeprefix("row"))].update(changes)
    return pd.DataFrame(rows)


def test_a_bad_row_is_quarantined_and_the_rest_passes():
    result = validate("scotus_cases", case_rows(3, row1={"name": None}))
    assert not result.batch_rejected and list(result.failed_rows) == [1]
    assert "expect_column_values_to_not_be_null on name" in result.failed_rows[1][0]
    assert list(result.passed["case_id"]) == [1, 3]


def test_duplicate_keys_reject_the_whole_batch():
    result = validate("scotus_cases", case_rows(3, row2={"case_id": 1}))
    assert result.batch_rejected and result.passed.empty
    assert any("unique" in reason for reason in result.batch_reasons)


def test_too_many_bad_rows_reject_the_batch_as_a_broken_parser():
    frame = case_rows(30)
    frame["term"] = "not a term"
    result = validate("scotus_cases", frame)
    assert result.batch_rejected and "parser is probably broken" in result.batch_reasons[-1]


SCOTUS_CASES = CuratedTable("scotus_cases", "oyez/curate_scotus_cases.sql", "case_id")


def test_rejected_batch_leaves_curated_untouched_and_is_recorded(db_path):
    con = connect(db_path)
    good = case_rows(2)
    good["decided_date"] = None
    for column in ("docket", "argued_date", "first_party", "second_party", "first_party_label", "second_party_label",
                   "description", "decision_type", "winning_party", "decision_count", "decisions",
                   "citation_volume", "citation_page", "citation_year", "lower_court", "manner_of_jurisdiction",
                   "justia_url", "source_url"):
        good[column] = None
    outcome = gate_and_load(con, 7, good, SCOTUS_CASES)
    assert outcome.staged == 2
    bad = good.copy()
    bad["case_id"] = 5
    bad["name"] = "changed"
    outcome = gate_and_load(con, 8, bad, SCOTUS_CASES)
    assert outcome.batch_rejected and outcome.quarantined == 2
    assert con.execute("SELECT count(*) FROM curated.scotus_cases WHERE name = 'changed'").fetchone()[0] == 0
    rows = con.execute("SELECT run_id, success, batch_rejected, failed_expectations FROM ops.quality_results "
                       "ORDER BY run_id").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(7, True, False), (8, False, True)]
    assert "unique" in json.loads(rows[1][3])[0]["expectation"]
    assert con.execute("SELECT count(*) FROM ops.quarantine WHERE run_id = 8 AND stage = 'gate'").fetchone()[0] == 2


def test_parallel_validations_each_see_their_own_batch():
    from concurrent.futures import ThreadPoolExecutor

    good = case_rows(40)
    bad = case_rows(40)
    bad["name"] = None
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda frame: validate("scotus_cases", frame), [good, bad] * 4))
    assert [r.batch_rejected for r in results] == [False, True] * 4
    assert all(not r.failed_rows for r in results[0::2])
