"""Two real cases through the pipeline with a small local model (llama.cpp); skipped when unavailable."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from casefacts_double import load_demo_cases  # noqa: E402

from caseforge.runs import StageReport  # noqa: E402
from caseforge.tasks.casefacts import pipeline  # noqa: E402
from caseforge.tasks.casefacts.build import make_context_parts  # noqa: E402
from caseforge.tasks.casefacts.config import BuildConfig  # noqa: E402
from caseforge.warehouse import connect  # noqa: E402


@pytest.mark.slow
@pytest.mark.smollm_pipeline
@pytest.mark.samples
def test_two_cases_with_smollm2_via_llamacpp(samples_dir, tmp_path):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not installed")
    if importlib.util.find_spec("caseforge.llm.backends.llamacpp") is None:
        pytest.skip("the llamacpp backend is not on this branch")
    from caseforge.llm.backends.llamacpp import smollm2_gguf_path

    try:
        model = os.environ.get("CASEFORGE_LLAMACPP_MODEL") or str(smollm2_gguf_path())
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"no local SmolLM2 GGUF file: {exc}")
    con = connect(tmp_path / "w.duckdb")
    load_demo_cases(con, samples_dir, scratch=tmp_path)
    # One small model for both roles: allowed here, with the family warning recorded.
    config = BuildConfig(generator_model=model, validator_model=model, allow_same_family=True, limit=2,
                         embedder="hashing")
    report = StageReport("casefacts llamacpp")
    backends, embedder = make_context_parts(config, "llamacpp", None, report)
    claims = pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, embedder))
    assert report.counts["same_family_warning"] == 1
    generated = con.execute("SELECT count(*) FROM build.casefacts_generated").fetchone()[0]
    judged = con.execute("SELECT count(*) FROM build.casefacts_factuality").fetchone()[0]
    assert judged == generated           # every claim judged or failed with a reason, none lost
    assert set(claims.columns) >= {"claim_id", "fact_id", "label", "split"}
