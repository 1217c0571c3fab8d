"""What `eval aquaechr` does when there is nothing to evaluate."""
from pathlib import Path

from caseforge.settings import load_settings
from caseforge.tasks.aquaechr.eval.run import Options, evaluate

REPLAY = Path(__file__).resolve().parent.parent / "fixtures" / "replay" / "aquaechr_eval.jsonl"


def test_an_empty_item_set_fails_the_evaluation_instead_of_scoring_n_0(tmp_path):
    report = evaluate(load_settings(tmp_path / "w.duckdb"),
                      Options(system="posthoc-rarr", llm="replay", model="double-aqeval-1", replay_file=str(REPLAY),
                              no_bertscore=True, out_dir=str(tmp_path / "out")))
    assert report.failures == ["no items to evaluate in curated.aquaechr_qa"]
    assert "eval_run_id" not in report.results
