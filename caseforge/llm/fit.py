"""Fitting a prompt to the model's context window before it is sent.

A backend that knows its window exposes `context_window` (tokens) and `count_tokens(request)`; for
the others nothing can be checked here, and a prompt too long is the server's refusal, recorded as a
failure that is not retried. A step whose prompt can outgrow the window builds it from a size (how many
case names, how many characters of each passage) and asks `largest_fitting` for the largest size that
fits, so the request still says everything it can.
"""
from __future__ import annotations

from typing import Callable

from caseforge.llm.types import LLMRequest


def knows_its_window(backend) -> bool:
    return getattr(backend, "context_window", None) is not None and hasattr(backend, "count_tokens")


def fits(backend, request: LLMRequest) -> bool:
    """Whether prompt + max_tokens fit the backend's window (True when the backend cannot tell)."""
    if not knows_its_window(backend):
        return True
    return backend.count_tokens(request) + request.params.max_tokens <= backend.context_window


def largest_fitting(backend, make: Callable[[int], LLMRequest], largest: int, smallest: int = 0) -> tuple[LLMRequest, int]:
    """(make(n), n) for the largest n in [smallest, largest] whose request fits (make(smallest) when none
    does, so the caller records the overflow). Sizes are searched by bisection: make(n) must grow with n."""
    request = make(largest)
    if fits(backend, request):
        return request, largest
    low, high = smallest, largest          # make(high) does not fit
    while high - low > 1:
        middle = (low + high) // 2
        if fits(backend, make(middle)):
            low = middle
        else:
            high = middle
    return make(low), low
