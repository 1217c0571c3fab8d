"""Input fingerprints that follow change (issue 43): a builder's input fingerprint comes from the write journal and
DuckDB's storage facts, not from its rows, and still sees one row changed deep in a big input, whether the
change came through caseforge's curate statements or from another program."""
from __future__ import annotations

import time

import pytest

from caseforge.fingerprints import inputs_fingerprint, table_fingerprint
from caseforge.flows.nightly_plan import Plan, Stage
from caseforge.flows.nightly_runner import Night, _gated
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import replace_staging, run_sql

JUDGMENTS, PARAGRAPHS_EACH = 3_000, 100          # 300,000 paragraphs: three DuckDB row groups


@pytest.fixture
def big_input(db_path):
    """curated.echr_paragraphs with 300,000 rows, written once (checkpointed) as a full warehouse's is."""
    con = connect(db_path)
    con.execute("""INSERT INTO curated.echr_paragraphs
                   SELECT '001-' || (i // $each), (i % $each)::VARCHAR, 'judgment', NULL, NULL,
                          'paragraph ' || i || ' of a judgment, ' || repeat('with its reasons ', 12), i % $each, NULL, 'html', md5((i // $each)::VARCHAR), now()
                   FROM range($n) t(i)""", {"each": PARAGRAPHS_EACH, "n": JUDGMENTS * PARAGRAPHS_EACH})
    con.execute("CHECKPOINT")
    yield con
    con.close()


class Builder:
    """Test double of a builder: counts its runs."""

    def __init__(self):
        self.runs = 0

    def __call__(self):
        self.runs += 1
        return StageReport("double")


def run_gated(con, builder):
    """The builder double as a gated stage of a one-stage plan, on `con`, as the nightly runs it."""
    stage = Stage("builder", "double", lambda night: builder(), inputs=("curated.echr_paragraphs",), gated=True)
    return _gated(Night(None, 1, Plan([stage]), con=con), stage, time.monotonic())


def gated(con, builder) -> str:
    outcome = run_gated(con, builder)
    return outcome.note if outcome.status == "skipped" else outcome.status


def test_one_row_changed_deep_in_a_big_input_runs_the_builder(big_input):
    con, builder = big_input, Builder()
    assert gated(con, builder) == "succeeded"
    assert gated(con, builder) == "inputs unchanged" and builder.runs == 1

    # judgment 2,500 (row 250,000 on), changed upstream: parsed again and curated through the curate statement
    itemid = "001-2500"
    rows = con.execute("SELECT * EXCLUDE (updated_at) FROM curated.echr_paragraphs WHERE itemid = ? ORDER BY ordinal",
                       [itemid]).df()
    rows.loc[37, "text"] = "paragraph 250037, as the court corrected it"
    replace_staging(con, "echr_paragraphs", rows.assign(raw_sha256="f" * 64))
    run_sql(con, "hudoc/curate_echr_paragraphs.sql")
    assert gated(con, builder) == "succeeded" and builder.runs == 2

    # the same batch again (a re-run with nothing new): no row changes, nothing to rebuild
    run_sql(con, "hudoc/curate_echr_paragraphs.sql")
    assert gated(con, builder) == "inputs unchanged" and builder.runs == 2

    # a program other than caseforge changes one row, with no journal: DuckDB's storage facts move
    con.execute("UPDATE curated.echr_paragraphs SET text = 'edited by hand' WHERE itemid = '001-2999' AND ordinal = 99")
    assert gated(con, builder) == "succeeded" and builder.runs == 3
    con.execute("CHECKPOINT")            # a checkpoint alone changes no row: the fingerprint was taken after one
    assert gated(con, builder) == "inputs unchanged" and builder.runs == 3
    con.execute("DELETE FROM curated.echr_paragraphs WHERE itemid = '001-1234' AND ordinal = 5")
    assert gated(con, builder) == "succeeded" and builder.runs == 4


def test_the_fingerprint_reads_the_journal_not_the_rows(big_input):
    """Before issue 43 a fingerprint hashed every row (the defect: a night's cost grew with what is stored); now a
    curated table's is made of counts and DuckDB's storage facts alone, with no hash of its rows (what that saves at
    real sizes is bench/nightly_scale.py's to measure, not a timed unit test's); another schema's table is hashed."""
    fingerprint = table_fingerprint(big_input, "curated.echr_paragraphs")
    assert set(fingerprint) == {"rows", "changes", "last_change", "columns", "storage"}
    assert fingerprint["rows"] == JUDGMENTS * PARAGRAPHS_EACH
    assert table_fingerprint(big_input, "ops.runs").keys() == {"rows", "hash"}     # not journaled: hashed


def test_a_migration_changes_every_journaled_fingerprint(big_input):
    before, _ = inputs_fingerprint(big_input, ("curated.echr_paragraphs",))
    big_input.execute("INSERT INTO ops.migrations VALUES (999, '999_a_later_migration.sql', now())")
    assert inputs_fingerprint(big_input, ("curated.echr_paragraphs",))[0] != before


def test_an_empty_input_is_still_said_empty(db_path):
    con = connect(db_path)
    try:
        outcome = run_gated(con, Builder())
    finally:
        con.close()
    assert (outcome.status, outcome.note) == ("skipped", "input empty: curated.echr_paragraphs")


def test_a_bad_table_name_is_refused(db_path):
    con = connect(db_path)
    try:
        with pytest.raises(ValueError, match="schema.table"):
            table_fingerprint(con, "curated.t; DROP TABLE x")
    finally:
        con.close()


def test_a_fingerprint_recorded_while_the_warehouse_is_open_is_the_one_read_after_it_closed(db_path):
    """A stage's input fingerprint is recorded on the nightly's open connection; the next night (and `--plan`) reads
    it after the file was closed, which checkpoints it and moves DuckDB's storage facts of a table written since the
    last checkpoint. Recorded before that checkpoint, a table written earlier in the night looked changed the next
    night (the casegen release was written again after every night that built CaseGen, measured on `make run`)."""
    from caseforge.fingerprints import last_fingerprint

    con = connect(db_path)
    con.execute("CHECKPOINT")
    con.execute("""INSERT INTO curated.echr_paragraphs
                   SELECT '001-' || (i // 10), (i % 10)::VARCHAR, 'judgment', NULL, NULL, 'paragraph ' || i, i % 10,
                          NULL, 'html', md5((i // 10)::VARCHAR), now()
                   FROM range(1000) t(i)""")                    # written tonight, not checkpointed yet
    assert gated(con, Builder()) == "succeeded"
    recorded = last_fingerprint(con, "builder", "double")
    con.close()                                              # the night ends: the file is checkpointed
    con = connect(db_path)
    try:
        fingerprint, _ = inputs_fingerprint(con, ("curated.echr_paragraphs",))
        assert fingerprint == recorded
        assert gated(con, Builder()) == "inputs unchanged"
    finally:
        con.close()
