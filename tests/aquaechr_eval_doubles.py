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


DOC_LINE = re.compile(r"^\[Doc (\d+)\] [^\n]*?; § [^:]+: (.*)$", re.MULTILINE)
STATEMENT = re.compile(r"^Statement (\d+): (.*)$", re.MULTILINE)
EVIDENCE = re.compile(r"^  Evidence: [^\n]*?; § [^:]+: (.*)$", re.MULTILINE)


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(?:\s|$)", text.strip())
    return (match.group(1) if match else text.strip()).rstrip(".") + "."


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class ScriptedAqevalBackendDouble:
    """Test double of an LLM for the AQuAECHR systems: answers each prompt kind with plausible JSON built
    from the prompt itself (copies passage sentences and cites them, sometimes messily; asks for missing
    information once per item; revises the first statement of a draft; judges entailment by word overlap)."""

    name = "scripted-aqeval-double"
    batch_size = 8

    def __init__(self, model: str = "double-aqeval-1"):
        self.model = model
        self.asked: list[tuple[str, str]] = []

    def complete_batch(self, requests):
        from caseforge.llm.types import Completion

        return [Completion(text=self.answer(r), prompt_tokens=10, completion_tokens=10) for r in requests]

    def answer(self, request) -> str:
        import json

        template = request.template_id
        user = request.messages[-1]["content"]
        self.asked.append((template, request.key))
        if template.endswith("closed_book.j2"):
            topic = user.split("\n")[1].rstrip("?").strip()
            return json.dumps({"answer": f"The Court answers the question of {topic[0].lower() + topic[1:]} "
                                         "case by case. It weighs the circumstances of each application. "
                                         "The State enjoys a margin of appreciation."})
        if template.endswith("rtg_answer.j2"):
            docs = DOC_LINE.findall(user)
            parts = [f"{_first_sentence(docs[0][1])[:-1]} [Doc 1]."]
            if len(docs) > 1:
                parts.append(f"{_first_sentence(docs[1][1])[:-1]} [1, Doc 2].")
            parts.append("The Court has also relied on other material [Doc 42].")
            return json.dumps({"answer": " ".join(parts)})
        if template.endswith("llatrieval_check.j2"):
            first_time = sum(1 for t, k in self.asked if t == template and k == request.key) == 1
            if first_time:
                return json.dumps({"sufficient": False, "keep": [1, 2],
                                   "missing": "minimum level of severity of prison conditions"})
            return json.dumps({"sufficient": True, "keep": [1], "missing": ""})
        if template.endswith("rarr_revise.j2"):
            statements = STATEMENT.findall(user)
            evidence = EVIDENCE.findall(user)
            checks = [{"number": int(n), "agrees": True, "revised": text} for n, text in statements]
            if checks and evidence:
                checks[0] = {"number": 1, "agrees": False, "revised": _first_sentence(evidence[0])}
            return json.dumps({"statements": checks})
        if template.endswith("nli.j2"):
            premise = user.split("Premise:\n", 1)[1].split("\n\nHypothesis:\n", 1)[0]
            hypothesis = user.split("\n\nHypothesis:\n", 1)[1].split("\n\nDoes the premise", 1)[0]
            words = _words(hypothesis)
            overlap = len(words & _words(premise)) / len(words) if words else 0.0
            return json.dumps({"entailment": "yes" if overlap >= 0.8 else "no"})
        raise AssertionError(f"double got an unexpected template {template}")
