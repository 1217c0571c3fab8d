"""The vllm backend against a fake `vllm` module double (no GPU, no vLLM install needed)."""
import sys
import types
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel, Field

from caseforge.llm import LLMRequest, SamplingParams, run_job
from caseforge.llm.backends import get_backend
from caseforge.warehouse.connection import connect


class Verdict(BaseModel):
    label: str = Field(max_length=20)


@dataclass
class FakeStructuredOutputsParams:
    json: dict | None = None


@dataclass
class FakeSamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    structured_outputs: FakeStructuredOutputsParams | None = None


@dataclass
class FakeCompletionOutput:
    text: str
    token_ids: list = field(default_factory=lambda: [1, 2, 3])
    finish_reason: str = "stop"


@dataclass
class FakeRequestOutput:
    prompt_token_ids: list
    outputs: list


class FakeLLM:
    """Records engine options and every chat() call; answers each conversation with a label."""

    instances: list = []

    def __init__(self, **options):
        self.options = options
        self.chat_calls = []
        FakeLLM.instances.append(self)

    def chat(self, messages, sampling_params=None, use_tqdm=True):
        self.chat_calls.append((messages, sampling_params))
        return [FakeRequestOutput(prompt_token_ids=list(range(7)),
                                  outputs=[FakeCompletionOutput(f'{{"label": "{m[-1]["content"]}"}}')])
                for m in messages]


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = FakeSamplingParams
    sampling_params = types.ModuleType("vllm.sampling_params")
    sampling_params.StructuredOutputsParams = FakeStructuredOutputsParams
    sampling_params.SamplingParams = FakeSamplingParams
    vllm.sampling_params = sampling_params
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling_params)
    FakeLLM.instances = []
    return vllm


def requests(n):
    return [LLMRequest(key=f"k{i}", messages=[{"role": "user", "content": f"label{i}"}],
                       params=SamplingParams(temperature=0.3, top_p=0.8, max_tokens=40, seed=i),
                       template_id="t", template_sha="s") for i in range(n)]


def test_the_whole_batch_is_one_chat_call_with_structured_outputs(fake_vllm, db_path):
    backend = get_backend("vllm", "Qwen/Qwen2.5-7B-Instruct", tensor_parallel_size=2, max_model_len=8192)
    [engine] = FakeLLM.instances
    assert engine.options["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert engine.options["tensor_parallel_size"] == 2 and engine.options["max_model_len"] == 8192
    assert engine.options["enable_prefix_caching"] is True
    result = run_job(connect(db_path), "label", backend, requests(25), Verdict)
    assert {k: v.label for k, v in result.outputs.items()} == {f"k{i}": f"label{i}" for i in range(25)}
    assert len(engine.chat_calls) == 1
    conversations, params = engine.chat_calls[0]
    assert len(conversations) == 25 and len(params) == 25
    assert conversations[3] == [{"role": "user", "content": "label3"}]
    assert params[3].structured_outputs == FakeStructuredOutputsParams(json=Verdict.model_json_schema())
    assert (params[3].temperature, params[3].top_p, params[3].max_tokens, params[3].seed) == (0.3, 0.8, 40, 3)
    assert result.prompt_tokens == 25 * 7 and result.completion_tokens == 25 * 3


def test_an_engine_error_becomes_a_recorded_failure_for_each_request(fake_vllm, db_path):
    backend = get_backend("vllm", "m")

    def broken_chat(messages, sampling_params=None, use_tqdm=True):
        raise ValueError("prompt too long")

    backend.llm.chat = broken_chat
    con = connect(db_path)
    result = run_job(con, "label", backend, requests(3), Verdict, max_attempts=1)
    assert not result.outputs and len(result.failures) == 3
    assert all("prompt too long" in f.reason for f in result.failures.values())
    # the engine gave no answer: not cached as one, so the next run asks again
    assert con.execute("SELECT DISTINCT status FROM ops.llm_calls").fetchall() == [("unanswered",)]
    del backend.llm.chat                                      # the engine's own chat again
    again = run_job(con, "label", backend, requests(3), Verdict, max_attempts=1)
    assert again.cache_hits == 0 and len(again.outputs) == 3


def test_missing_vllm_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(RuntimeError, match="pip install 'caseforge\\[vllm\\]'"):
        get_backend("vllm", "m")
