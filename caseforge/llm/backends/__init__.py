"""Backends behind one interface. Heavy ones (vllm, llama.cpp) are imported only when chosen."""
from __future__ import annotations

import inspect
from typing import Callable, Protocol

from caseforge.llm.types import Completion, LLMRequest


def _replay(model: str, **options):
    from caseforge.llm.backends.replay import ReplayBackend
    return ReplayBackend(model, **options)


def _openai(model: str, **options):
    from caseforge.llm.backends.openai_compat import OpenAIBackend
    return OpenAIBackend(model, **options)


def _llamacpp(model: str, **options):
    from caseforge.llm.backends.llamacpp import LlamaCppBackend
    return LlamaCppBackend(model, **options)


def _vllm(model: str, **options):
    from caseforge.llm.backends.vllm_offline import VLLMBackend
    return VLLMBackend(model, **options)


# backend name -> factory(model, **options); the factory imports its module when the backend is chosen
REGISTRY: dict[str, Callable[..., "Backend"]] = {
    "replay": _replay, "openai": _openai, "llamacpp": _llamacpp, "vllm": _vllm,
}


_HANDED_BY_CODE = {"self", "model", "sleep", "transport"}      # keywords that no settings file sets


def option_names(name: str) -> set[str]:
    """The options backend `name` takes from the settings ([llm.backends.<name>.options] and the like): its
    class's keywords (the modules are light; the engines they drive are imported when a backend starts)."""
    from caseforge.llm.backends import llamacpp, openai_compat, replay, vllm_offline

    classes = {"replay": replay.ReplayBackend, "openai": openai_compat.OpenAIBackend,
               "llamacpp": llamacpp.LlamaCppBackend, "vllm": vllm_offline.VLLMBackend}
    parameters = inspect.signature(classes[name]).parameters
    return {p.name for p in parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD and p.name not in _HANDED_BY_CODE}


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
    try:
        return REGISTRY[name](model, **options)
    except ModuleNotFoundError as exc:
        raise RuntimeError(f"LLM backend {name!r} is not available: {exc}") from exc
