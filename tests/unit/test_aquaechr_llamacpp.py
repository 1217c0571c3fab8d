"""A real small model (SmolLM2 through llama.cpp) on a few paragraphs: whatever it answers ends as a kept
pair or a recorded removal reason, never a crash. Skips when llama.cpp or the backend is not installed."""
import pytest
from aquaechr_support import BagOfWordsEmbedderDouble, create_contract_tables
from test_aquaechr_filters import CITES, GUIDE, JUDGMENTS, PASSAGES

from caseforge.stage_report import StageReport
from caseforge.tasks.aquaechr.build import BuildConfig, build, make_backends
from caseforge.warehouse.connection import connect


@pytest.mark.slow
@pytest.mark.smollm_pipeline
def test_smollm2_candidates_are_kept_or_removed_with_a_reason(db_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from caseforge.llm import get_backend

    try:
        backend = get_backend("llamacpp", "smollm2-360m-instruct")
    except Exception as exc:      # backend module or model file missing on this machine
        pytest.skip(f"llamacpp backend not available: {exc}")
    con = connect(db_path)
    create_contract_tables(con, GUIDE[:3], [c for c in CITES if c[1] in {"1", "2", "3"}], JUDGMENTS, PASSAGES)
    report = StageReport("smollm2", run_id=1)
    candidates = build(con, 1, report, make_backends(backend=backend), BagOfWordsEmbedderDouble(),
                       BuildConfig(strategies=["i", "iv-a"], limit=2, search_extra=1))
    rows = con.execute("SELECT kept, removal_reason FROM curated.aquaechr_qa").fetchall()
    assert len(rows) == len(candidates) > 0
    assert all(kept or reason for kept, reason in rows)
