"""Test double for the LLM in the CASE / CaseFacts pipelines: plausible JSON from the prompt text alone.

`ScriptedLegalBackendDouble` reads the rendered prompt and answers like a cautious model would:
advocates propose queries from their position's words, jurors and answerers pick the option whose
words overlap most with its evidence (the devil's advocate takes the runner-up), verifiers pick
the verdict named by overlap and cite the first cases shown. It is deterministic.
"""
from __future__ import annotations

import json
import re

from caseforge.llm.types import Completion

WORD = re.compile(r"[a-z]{4,}")


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def _overlap(a: str, b: str) -> int:
    return len(_words(a) & _words(b))


class ScriptedLegalBackendDouble:
    name = "scripted-legal-double"

    def __init__(self, model: str = "double-legal-1", batch_size: int = 16):
        self.model = model
        self.batch_size = batch_size
        self.asked = 0

    def complete_batch(self, requests):
        out = []
        for request in requests:
            self.asked += 1
            system = request.messages[0]["content"] if len(request.messages) > 1 else ""
            user = request.messages[-1]["content"]
            out.append(Completion(text=self.answer(system, user), prompt_tokens=len(user) // 4, completion_tokens=30))
        return out

    def answer(self, system: str, user: str) -> str:
        if "search queries" in user:
            position = re.search(r"Position you argue for \(\w\): (.*)", user).group(1)
            words = sorted(_words(position))[:6]
            round_no = int(re.search(r"Search round (\d+)", user).group(1))
            return json.dumps({"queries": [" ".join(words[:3]), " ".join(words[3:6] or words[:2])][:round_no],
                               "done": round_no >= 2})
        if "Options and the evidence" in user:
            return self._juror(system, user)
        if "Reply as {\"reasoning\"" in user and "A, B, C or D" in user:
            return self._multiple_choice(user)
        if "verdict" in user:
            return self._verdict(user)
        return "I am not sure."

    def _juror(self, system: str, user: str) -> str:
        blocks = re.split(r"\nOption (\w): ", user)
        scored = []
        for label, body in zip(blocks[1::2], blocks[2::2]):
            option_text, _, evidence = body.partition("\n")
            scored.append((_overlap(option_text, evidence), label))
        ranked = sorted(scored, key=lambda s: (-s[0], s[1]))
        pick = ranked[1][1] if "most popular option" in system and len(ranked) > 1 else ranked[0][1]
        confidence = round(0.5 + min(ranked[0][0], 8) / 20, 2)
        styles = {"plain": pick, "paren": f"({pick.lower()})", "option": f"Option {pick}"}
        style = "paren" if "plain words" in system else "option" if "settled case law" in system else "plain"
        return json.dumps({"reasoning": f"The evidence for option {pick} fits best.", "answer": styles[style],
                           "confidence": confidence})

    def _multiple_choice(self, user: str) -> str:
        options = dict(re.findall(r"^([A-D])\) (.*)$", user, re.MULTILINE))
        passages = "\n".join(re.findall(r"^\[\d+\] (.*)$", user, re.MULTILINE))
        context = passages or user.split("Question:")[-1]
        pick = max(sorted(options), key=lambda label: _overlap(options[label], context))
        return json.dumps({"reasoning": "Weighing the options against the rule.", "answer": f"THE ANSWER IS {pick}"})

    def _verdict(self, user: str) -> str:
        statement = re.search(r"Statement: (.*)", user).group(1)
        verdict = "REFUTED" if re.search(r"\b(?:not|never|no)\b", statement) else "SUPPORTED"
        names = re.findall(r"^### (.*)$", user, re.MULTILINE)[:2]
        return json.dumps({"verdict": verdict.title(), "cases": names})
