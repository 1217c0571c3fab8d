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


def test_a_long_value_is_quoted_shortened_on_one_line():
    assert quoted("a  b\nc") == '"a b c"'
    assert quoted("x" * 100, limit=10) == '"' + "x" * 9 + '…"'
