"""Test doubles for the AQuAECHR evaluation (named as doubles)."""
from __future__ import annotations

import re


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


class SubstringNLIDouble:
    """NLI double: the premise entails the hypothesis iff the hypothesis's words appear, in order and
    contiguous, in the premise. Pairs whose hypothesis contains FAIL get None (a failed judgment)."""

    name = "substring-double"

    def __init__(self):
        self.failures: dict[str, str] = {}
        self.asked: list[tuple[str, str]] = []

    def entails(self, pairs):
        out = []
        for premise, hypothesis in pairs:
            self.asked.append((premise, hypothesis))
            if "FAIL" in hypothesis:
                self.failures[hypothesis] = "double refuses"
                out.append(None)
            else:
                out.append(_norm(hypothesis) in _norm(premise))
        return out
