"""Model families from model names: the generator and the validator should not share one."""
from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

FAMILIES = ("qwen", "llama", "gemma", "mistral", "mixtral", "smollm", "gpt", "phi", "deepseek", "olmo",
            "granite", "falcon", "command", "claude", "yi", "internlm", "glm", "nemotron")


def family_of(model: str) -> str:
    """'Qwen/Qwen3-80B-A3B' → 'qwen'; 'google/gemma-3-27b-it' → 'gemma'; unknown → the bare name."""
    name = model.lower().rsplit("/", 1)[-1]
    for family in FAMILIES:
        if re.search(rf"(?:^|[^a-z]){family}", name) or name.startswith(family):
            return "mistral" if family == "mixtral" else family
    return re.split(r"[-_.:0-9]", name, maxsplit=1)[0] or name


def check_families(generator: str, validator: str, allow_same: bool = False) -> str | None:
    """Refuse (ValueError) a generator and validator of one family unless allowed; then return a warning."""
    if family_of(generator) != family_of(validator):
        return None
    message = (f"generator {generator!r} and validator {validator!r} are both of the {family_of(generator)!r} "
               "family: a model checking its own family's output misses its shared blind spots")
    if not allow_same:
        raise ValueError(message + " (pass --allow-same-family to proceed anyway)")
    log.warning(message)
    return message
