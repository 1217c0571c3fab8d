"""Backends behind one interface. Heavy ones (vllm, llama.cpp) are imported only when chosen."""
from __future__ import annotations

import importlib
from typing import Protocol

from caseforge.llm.types import Completion, LLMRequest

# backend name -> "module:factory"; each factory takes (model, **options)
REGISTRY = {
    "replay": "caseforge.llm.backends.replay:ReplayBackend",
    "openai": "caseforge.llm.backends.openai_compat:OpenAIBackend",
    "llamacpp": "caseforge.llm.backends.llamacpp:LlamaCppBackend",
    "vllm": "caseforge.llm.backends.vllm_offline:VLLMBackend",
}


class Backend(Protocol):
    name: str
    model: str
    batch_size: int      # how many requests the job hands over at once (and writes per transaction)

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        """One completion per request, in order; a per-request problem is a Completion with `error`."""

    # Optional, and preferred by run_job where present:
    #   complete_stream(requests) -> Iterator[tuple[int, Completion]]
    # every request's completion exactly once, tagged with its index, as each finishes; closing the
    # iterator early stops the work still in flight.


def get_backend(name: str, model: str, **options) -> Backend:
    if name not in REGISTRY:
        raise ValueError(f"unknown LLM backend {name!r}; choose one of {', '.join(sorted(REGISTRY))}")
    module_name, factory = REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise RuntimeError(f"LLM backend {name!r} is not available: {exc}") from exc
    return getattr(module, factory)(model, **options)
