"""A real small model (SmolLM2 GGUF through llama.cpp) drafting one judgment item; skipped without one."""
import os
from pathlib import Path

import pytest

from caseforge.settings import load_settings
from caseforge.tasks.casegen import pipeline
from caseforge.tasks.casegen.eval import pipeline as eval_pipeline
from caseforge.tasks.casegen.eval.evaluate import EvalConfig

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "casegen" / "full_cases.jsonl"


@pytest.mark.slow
@pytest.mark.smollm_pipeline
def test_smollm_drafts_a_judgment_item(db_path, tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from caseforge.llm.backends.llamacpp import smollm2_gguf_path

    try:
        model_path = os.environ.get("CASEFORGE_SMOLLM_GGUF") or str(smollm2_gguf_path())
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.skip(f"no local SmolLM2 GGUF file: {exc}")
    config = load_settings(db_path)
    pipeline.run_build(config, from_file=str(FIXTURE), limit=1)
    params = eval_pipeline.EvalParams(models=[model_path], llm="llamacpp", judge_model=None, task="judgment", limit=1,
                                 config=EvalConfig(max_input_chars=1500, max_new_tokens=128),
                                 out_dir=str(tmp_path / "reports"))
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.counts[f"generate_{model_path}_ok"] == 1, report.failures
    assert report.counts["metrics_scored"] == 1
