"""The night's problems as a person reads them (issue 36, "say each thing once"): summary.md lists each problem
once, in a table with a header row, each rule a record broke beside the value that broke it, quoted and
shortened; the stage table says how many problems a stage had, not the problems again."""
from caseforge.flows import nightly_runner
from caseforge.flows.nightly_report import PROBLEM_COLUMNS, quoted
from caseforge.settings import load_settings

from nightly_problem_doubles import DEGENERATE_CLAIMS, registries


def test_summary_lists_each_problem_once_with_the_quarantined_text_beside_its_rule(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    result = nightly_runner.run_nightly(settings, nightly_runner.NightlyOptions(release_dir=tmp_path / "rel"),
                                        **registries(tmp_path))
    assert not result.ok and len(result.failures()) == len(DEGENERATE_CLAIMS)
    summary = (result.run_dir / "summary.md").read_text()
    assert "| " + " | ".join(PROBLEM_COLUMNS) + " |" in summary          # a header row
    for key, claim in DEGENERATE_CLAIMS.items():
        assert summary.count(key) == 1, summary                           # each problem once
        lines = [line for line in summary.splitlines() if key in line]
        assert "expect_column_values_to_" in lines[0] and quoted(claim) in lines[0], lines
    rows = {row.split(" | ")[0].strip("| "): row for row in summary.splitlines() if row.startswith("| builder")}
    assert "| 2 |" in rows["builder"]                                      # its count, not its problems again


def test_the_problems_artifact_shows_the_value_beside_a_rule_cut_as_the_terminal_cuts_it(tmp_path):
    """Issue 45: the problems table in the UI had the rule (its JSON arguments) before the value, so wide the
    value was off the screen; now stage | record | value | rule, the rule cut to a table cell's width."""
    from caseforge.flows.nightly_report import problem_rows, problems_artifact
    from caseforge.stage_report import CELL_WIDTH
    from caseforge.warehouse.connection import connect

    settings = load_settings(tmp_path / "cf.duckdb")
    result = nightly_runner.run_nightly(settings, nightly_runner.NightlyOptions(release_dir=tmp_path / "rel"),
                                        **registries(tmp_path))
    with connect(settings.db_path) as con:
        rows = problems_artifact(problem_rows(con, result))
    assert list(rows[0]) == ["stage", "record", "value", "rule"] == PROBLEM_COLUMNS
    assert rows[0]["value"] == quoted(DEGENERATE_CLAIMS[rows[0]["record"].rpartition("=")[2]])
    assert all(len(row["rule"]) <= CELL_WIDTH for row in rows)
    assert any(row["rule"].endswith("...") for row in rows), rows             # a rule with its arguments, cut


def test_a_long_value_is_quoted_shortened_on_one_line():
    assert quoted("a  b\nc") == '"a b c"'
    assert quoted("x" * 100, limit=10) == '"' + "x" * 9 + '…"'


def test_the_failed_nightly_says_each_failed_stage_in_its_own_line_and_the_first_problem(tmp_path):
    """The nightly's Failed state message (what the failure notification carries): the stage's one line, the
    same as its task run's state message, then the first record quarantined, which that line only counts."""
    from caseforge.flows.nightly import failed_message

    result = nightly_runner.run_nightly(load_settings(tmp_path / "cf.duckdb"),
                                        nightly_runner.NightlyOptions(release_dir=tmp_path / "rel"),
                                        **registries(tmp_path))
    [builder] = [o for o in result.outcomes if o.failed]
    assert builder.line() == "builder claims quarantined: 2 problems (in the night's problems)"
    message = failed_message(result)
    assert message.startswith(f"nightly {result.run_id}: 1 stage(s) failed (builder claims), 2 problem(s): "
                              f"{builder.line()}; first record quarantined: casefacts_generated claim_id=c1-0: expect_"), message
    assert "\n" not in message
