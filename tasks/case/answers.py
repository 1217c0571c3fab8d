"""Read the answer a model STATES, never the first option letter that happens to appear.

Order of evidence, first that applies wins:
1. a JSON object with an "answer" (or "verdict"/"vote") field;
2. an explicit statement — "the answer is B", "final answer: (c)", "I think (c)", "I choose D",
   "option B is correct" — the LAST such statement in the reply (models often revise themselves);
3. a reply that opens with an option marker — "B) ...", "(B) ...", "B. ...", "B: ..." — or is one letter.
Anything else is unparsed (None), which the caller records as a failure.
A bare lower-case letter only counts in parentheses or before punctuation/end of text, so the
article in "the answer is a matter of..." is not read as option A.

A CaseFacts verdict is read by caseforge.scoring_rules.parse_verdict (the rule a release's harness applies too).
"""
from __future__ import annotations

import json
import re

from caseforge.scoring_rules import json_field, parse_verdict

_LETTER = r"(?:\(\s*(?P<p>[A-Da-d])\s*\)|(?P<u>\b(?-i:[A-D])\b)(?![’'])|(?P<l>\b(?-i:[a-d]))(?=\s*(?:[).:,;!]|$)))"
_LEAD = (r"(?:(?:final|correct|best|right)\s+)?(?:answer|option|choice)(?:\s+(?:is|would\s+be|must\s+be))?\s*[:=\-]?\s*"
         r"(?:(?:option|choice|letter)\s+)?"
         r"|\bi\s+(?:think|believe|choose|pick|select|would\s+(?:choose|pick|select|go\s+with)|will\s+go\s+with|go\s+with)\s+"
         r"(?:(?:option|choice|answer)\s+)?(?:is\s+)?")
_STATED = re.compile(rf"(?:{_LEAD}){_LETTER}", re.IGNORECASE | re.MULTILINE)
_OPTION_IS_CORRECT = re.compile(rf"(?:option|choice)\s+{_LETTER}\s+is\s+(?:the\s+)?(?:correct|right|best)",
                                re.IGNORECASE)
_OPENING = re.compile(r"^\s*(?:\*\*)?\(?(?P<x>[A-Da-d])(?:\)|\.|:|\s*$)")


def _letter(match: re.Match) -> str:
    return next(g for g in (match.group("p"), match.group("u"), match.group("l")) if g).upper()


def _from_value(value) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    if re.fullmatch(r"\(?[A-Da-d]\)?[.:)]?", value):
        return value.strip("().: ").upper()
    return parse_answer(value, use_json=False)


def parse_answer(reply: str | None, use_json: bool = True) -> str | None:
    if not reply or not reply.strip():
        return None
    found = json_field(reply, ("answer", "final_answer", "vote", "choice"), _from_value) if use_json else None
    if found:
        return found
    stated = [*(_STATED.finditer(reply)), *(_OPTION_IS_CORRECT.finditer(reply))]
    if stated:
        return _letter(max(stated, key=lambda m: m.start()))
    opening = _OPENING.match(reply)
    if opening:
        return opening.group("x").upper()
    return None


def stated_letter(value):
    """A pydantic before-validator for an option field: "(b)", "Option B", "THE ANSWER IS B" → "B"; anything
    else is left for the enum to refuse. The JSON schema still offers only the letters, so a constrained
    decoder writes one; an unconstrained model's phrasing is read the way parse_answer reads it."""
    return (_from_value(value) or value) if isinstance(value, str) else value


def stated_verdict(value):
    """A pydantic before-validator for a CaseFacts verdict field: "Supported", "verdict: REFUTED" → the label."""
    return (parse_verdict(value) or value) if isinstance(value, str) else value


def to_json(value) -> str:
    return json.dumps(value)
