"""`vllm`: vLLM in process on a GPU worker (optional extra: `pip install caseforge[vllm]`).

The whole batch goes to the engine in ONE `LLM.chat(conversations, sampling_params_list)` call, so
the scheduler sees every prompt at once (one prompt at a time is several times slower).
Structured output uses current vLLM's `StructuredOutputsParams(json=schema)` on each request's
`SamplingParams(structured_outputs=...)`; the `guided_*` fields were removed from vLLM in v0.12.
An engine that fails the batch (or returns no output) gave no answer: its requests fail with answered=False,
so they are not cached as answers and the next run asks them again.
"""
from __future__ import annotations

import time

from caseforge.llm.types import Completion, LLMRequest


def _import_vllm():
    try:
        import vllm
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError as exc:
        raise RuntimeError(
            "the vllm backend needs vLLM with StructuredOutputsParams (vLLM >= 0.11) on a GPU worker: "
            "pip install 'caseforge[vllm]' — or use --llm openai against a `vllm serve` endpoint, "
            f"or --llm llamacpp on a CPU ({exc})"
        ) from exc
    return vllm, StructuredOutputsParams


class VLLMBackend:
    name = "vllm"

    def __init__(self, model: str, tensor_parallel_size: int = 1, data_parallel_size: int = 1,
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
                 enable_prefix_caching: bool = True, batch_size: int = 4096, dtype: str = "auto",
                 seed: int = 0, trust_remote_code: bool = False, engine_options: dict | None = None, **_ignored):
        self.model = model
        self.batch_size = int(batch_size)
        self._vllm, self._structured_params = _import_vllm()
        options = {
            "model": model, "tensor_parallel_size": int(tensor_parallel_size),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "enable_prefix_caching": bool(enable_prefix_caching), "dtype": dtype, "seed": int(seed),
            "trust_remote_code": bool(trust_remote_code),
        }
        if int(data_parallel_size) > 1:
            options["data_parallel_size"] = int(data_parallel_size)
        if max_model_len:
            options["max_model_len"] = int(max_model_len)
        options.update(engine_options or {})
        self.engine_options = options
        self.served_model = str(options["model"])     # what answers: the model the engine loaded (ops.llm_calls)
        self.llm = self._vllm.LLM(**options)

    def sampling_params_for(self, request: LLMRequest):
        params = request.params
        structured = None
        if request.json_schema is not None:
            structured = self._structured_params(json=request.json_schema)
        return self._vllm.SamplingParams(temperature=params.temperature, top_p=params.top_p,
                                         max_tokens=params.max_tokens, seed=params.seed,
                                         structured_outputs=structured)

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        if not requests:
            return []
        conversations = [r.messages for r in requests]
        sampling = [self.sampling_params_for(r) for r in requests]
        started = time.perf_counter()
        try:
            outputs = self.llm.chat(conversations, sampling, use_tqdm=False)
        except Exception as exc:   # the engine failed the batch: no request got an answer, each records why
            reason = f"vllm chat failed: {type(exc).__name__}: {exc}"
            return [Completion(text=None, error=reason, answered=False) for _ in requests]
        # The engine works on all prompts together; each one gets an equal share of the wall time.
        share = (time.perf_counter() - started) / len(requests)
        if len(outputs) != len(requests):
            return [Completion(text=None, answered=False,
                               error=f"vllm returned {len(outputs)} outputs for {len(requests)} prompts")
                    for _ in requests]
        return [self._completion(output, share, self.served_model) for output in outputs]

    @staticmethod
    def _completion(output, latency_s: float, served_model: str | None = None) -> Completion:
        if not output.outputs:
            return Completion(text=None, latency_s=latency_s, error="vllm produced no output", answered=False)
        first = output.outputs[0]
        prompt_tokens = len(output.prompt_token_ids) if output.prompt_token_ids is not None else None
        # A truncated answer (finish_reason "length") goes to the parser, which says what is wrong.
        return Completion(text=first.text, prompt_tokens=prompt_tokens, completion_tokens=len(first.token_ids),
                          latency_s=latency_s, finish_reason=getattr(first, "finish_reason", None),
                          served_model=served_model)
