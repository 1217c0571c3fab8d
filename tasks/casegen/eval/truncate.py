"""Cut over-long prompt input from the middle: the head and the tail of a document carry the most."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

CUT_MARK = "\n……（中间部分因超出模型上下文长度已省略）……\n"


@dataclass(frozen=True)
class Truncation:
    text: str
    original_length: int
    kept_length: int        # in the unit measured (characters or tokens), the mark excluded
    cut: bool


def cut_middle(text: str, max_length: int, measure: Callable[[str], int] | None = None,
               mark: str = CUT_MARK) -> Truncation:
    """Keep the first and last parts of `text` so that it measures at most `max_length`, joined by `mark`.

    `measure` counts the unit of the budget (default: characters; pass a tokenizer's length function
    for tokens). The head gets the extra unit when the budget is odd. The mark itself is not counted
    against the budget: callers leave room for the prompt around the input anyway.
    """
    if max_length < 2:
        raise ValueError("max_length must be at least 2")
    measure = measure or len
    total = measure(text)
    if total <= max_length:
        return Truncation(text, total, total, False)
    if measure is len:
        head_len = (max_length + 1) // 2
        tail_len = max_length - head_len
        return Truncation(text[:head_len] + mark + text[len(text) - tail_len:], total, max_length, True)
    # a non-character budget: shrink a character window until both parts fit (binary search on the length)
    low, high = 0, len(text)
    best = ""
    while low <= high:
        keep = (low + high) // 2
        head, tail = text[: (keep + 1) // 2], text[len(text) - keep // 2:] if keep // 2 else ""
        if measure(head) + measure(tail) <= max_length:
            best, low = head + mark + tail, keep + 1
        else:
            high = keep - 1
    kept = best.split(mark)
    return Truncation(best, total, sum(measure(part) for part in kept), True)

