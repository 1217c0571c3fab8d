"""Prompt templates: Jinja2 files in prompts/ with a `system` and a `user` block.

The template's content hash (the file and everything it includes) is part of each request's
identity, so editing a prompt invalidates exactly the cached answers it produced.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import jinja2

from caseforge.config import PROMPTS_DIR


@dataclass(frozen=True)
class RenderedPrompt:
    messages: list[dict[str, str]]
    template_id: str
    template_sha: str


class _HashingLoader(jinja2.FileSystemLoader):
    """Remembers every file it loads so includes count towards the template hash."""

    def __init__(self, root: Path):
        super().__init__(str(root), encoding="utf-8")
        self.loaded: dict[str, bytes] = {}

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        self.loaded[template] = Path(filename).read_bytes()
        return source, filename, uptodate


def render(template_name: str, root: Path | None = None, **variables) -> RenderedPrompt:
    """Render prompts/<template_name> into chat messages."""
    loader = _HashingLoader(root or PROMPTS_DIR)
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                             autoescape=False)
    try:
        template = env.get_template(template_name)
    except jinja2.TemplateNotFound as exc:
        raise FileNotFoundError(f"prompt template not found: {(root or PROMPTS_DIR) / template_name}") from exc
    if "user" not in template.blocks:
        raise ValueError(f"prompt template {template_name} needs a {{% block user %}}")
    context = template.new_context(variables)
    messages = []
    for role in ("system", "user"):
        if role in template.blocks:
            text = "".join(template.blocks[role](context)).strip()
            if text:
                messages.append({"role": role, "content": text})
    digest = hashlib.sha256()
    for name in sorted(loader.loaded):
        digest.update(name.encode())
        digest.update(loader.loaded[name])
    return RenderedPrompt(messages, template_name, digest.hexdigest())
