"""Two real cases through the pipeline with a small local model (llama.cpp); skipped when unavailable."""
import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from casefacts_double import load_demo_cases  # noqa: E402

from caseforge.stage_report import StageReport  # noqa: E402
from caseforge.tasks.casefacts import pipeline  # noqa: E402
from caseforge.llm.config import Backends  # noqa: E402
from caseforge.tasks.casefacts.build import make_config  # noqa: E402
from caseforge.tasks.casefacts.embed import HashingEmbedder  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


@pytest.mark.slow
@pytest.mark.smollm_pipeline
@pytest.mark.samples
def test_two_cases_with_smollm2_via_llamacpp(samples_dir, tmp_path):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not installed")
    con = connect(tmp_path / "w.duckdb")
    load_demo_cases(con, samples_dir, scratch=tmp_path)
    # The default models: SmolLM2 generates, Gemma 3 270M validates (two families).
    backends = Backends("llamacpp")
    config = make_config(backends, limit=2, embedder="hashing")
    assert (config.generator_model, config.validator_model) == ("smollm2-135m-instruct", "gemma-3-270m")
    report = StageReport("casefacts llamacpp")
    claims = pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, HashingEmbedder()))
    generated = con.execute("SELECT count(*) FROM build.casefacts_generated").fetchone()[0]
    judged = con.execute("SELECT count(*) FROM build.casefacts_factuality").fetchone()[0]
    assert judged == generated           # every claim judged or failed with a reason, none lost
    assert set(claims.columns) >= {"claim_id", "fact_id", "label", "split"}
