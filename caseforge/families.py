"""Model families from model names. A model checking or judging the output of its own family shares
its blind spots and favours its own style (self-preference bias), so generator and validator, or a
judged model and its judge, should come from different families."""
from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

# Ordered: the first pattern that matches names the family ("deepseek-r1-distill-qwen" is deepseek).
_FAMILIES = [
    ("deepseek", r"deepseek"),
    ("smollm", r"smollm"),
    ("qwen", r"qwen|qwq"),
    ("llama", r"llama|vicuna|tinyllama"),
    ("gemma", r"gemma"),
    ("mistral", r"mistral|mixtral|ministral|codestral|magistral"),
    ("phi", r"(?:^|[/_\-])phi"),
    ("gpt", r"gpt|(?:^|[/_\-])o[134](?:$|[\-_])|davinci|openai"),
    ("claude", r"claude"),
    ("command", r"command-?r|cohere|aya"),
    ("granite", r"granite"),
    ("olmo", r"olmo"),
    ("yi", r"(?:^|[/_\-])yi[\-_]"),
    ("glm", r"glm"),
    ("internlm", r"internlm"),
    ("falcon", r"falcon"),
    ("baichuan", r"baichuan"),
    ("nemotron", r"nemotron"),
    ("saul", r"saul"),
]


class SameFamily(ValueError):
    """Two roles that should differ in family were given models of one family."""


def family_of(model: str | None) -> str | None:
    """'Qwen/Qwen3-80B-A3B' → 'qwen'; 'google/gemma-3-27b-it' → 'gemma'; a name no pattern knows → None."""
    lowered = (model or "").lower()
    return next((family for family, pattern in _FAMILIES if re.search(pattern, lowered)), None)


def check_families(first: str, second: str, allow_same: bool = False,
                   roles: tuple[str, str] = ("generator", "validator")) -> str | None:
    """None when the two models are of known, different families. Otherwise a warning (also logged):
    a family that cannot be told, or one family shared with `allow_same`. One shared family without
    `allow_same` raises SameFamily."""
    a, b = family_of(first), family_of(second)
    if a is not None and b is not None and a != b:
        return None
    if a is None or b is None:
        unknown = [f"{role} {model!r}" for role, model, family in zip(roles, (first, second), (a, b)) if family is None]
        message = f"family unknown for {' and '.join(unknown)}: cannot check that the {roles[0]} and {roles[1]} differ"
    else:
        message = (f"{roles[0]} {first!r} and {roles[1]} {second!r} are both {a} models: a model checking its own "
                   f"family's output misses its blind spots and favours its style")
        if not allow_same:
            raise SameFamily(message + " (choose another model or pass --allow-same-family)")
        message += " (allowed by --allow-same-family)"
    log.warning(message)
    return message
