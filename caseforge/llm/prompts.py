"""Prompt templates: Jinja2 files in prompts/ with a `system` and a `user` block.

The template's content hash (the file and everything it includes) is part of each request's
identity, so editing a prompt invalidates exactly the cached answers it produced.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2
import jinja2.meta

from caseforge.settings import PROMPTS_DIR


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


class _CompiledTemplate:
    """One template compiled once; rebuilt when any file it loaded has changed on disk."""

    def __init__(self, root: Path, template_name: str):
        self.loader = _HashingLoader(root)
        self.env = jinja2.Environment(loader=self.loader, undefined=jinja2.StrictUndefined,
                                      keep_trailing_newline=False, autoescape=False, auto_reload=False)
        try:
            self.template = self.env.get_template(template_name)
        except jinja2.TemplateNotFound as exc:
            raise FileNotFoundError(f"prompt template not found: {root / template_name}") from exc
        if "user" not in self.template.blocks:
            raise ValueError(f"prompt template {template_name} needs a {{% block user %}}")
        self._load_include_closure(template_name)
        self._checked: dict[str, tuple[tuple, int]] = {}
        self._hashed: tuple[str, ...] = ()
        self._sha = ""

    def _load_include_closure(self, template_name: str) -> None:
        """Load every template this one can include, so the hash never depends on which branch rendered.

        Static references are followed recursively; a dynamic one (a name in a variable) brings in
        every template of the including file's folder.
        """
        pending, seen = [template_name], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            source = self.loader.get_source(self.env, name)[0]
            for reference in jinja2.meta.find_referenced_templates(self.env.parse(source)):
                if reference is None:
                    folder = os.path.dirname(name)
                    pending.extend(n for n in self.loader.list_templates()
                                   if os.path.dirname(n) == folder and n.endswith(".j2"))
                else:
                    pending.append(reference)

    def is_current(self) -> bool:
        """Same bytes on disk as when compiled? Checked by stat, and by content when the stat can't tell.

        A file whose mtime is close to when we read it may have been rewritten within the clock's
        granularity with the same size, so then the bytes are compared (git's "racy" rule).
        """
        root = self.loader.searchpath[0]
        for name, content in list(self.loader.loaded.items()):
            path = os.path.join(root, name)
            try:
                st = os.stat(path)
            except OSError:
                return False
            seen = (st.st_mtime_ns, st.st_size, st.st_ino)
            checked = self._checked.get(name)
            if checked is not None and checked[0] == seen and st.st_mtime_ns < checked[1] - _RACY_NS:
                continue
            try:
                if Path(path).read_bytes() != content:
                    return False
            except OSError:
                return False
            self._checked[name] = (seen, time.time_ns())
        return True

    def sha(self) -> str:
        names = tuple(sorted(self.loader.loaded))
        if names != self._hashed:
            digest = hashlib.sha256()
            for name in names:
                digest.update(name.encode())
                digest.update(self.loader.loaded[name])
            self._hashed, self._sha = names, digest.hexdigest()
        return self._sha


_RACY_NS = 2_000_000_000
_compiled: dict[tuple[str, str], _CompiledTemplate] = {}


def _template(root: Path, template_name: str) -> _CompiledTemplate:
    key = (str(root), template_name)
    compiled = _compiled.get(key)
    if compiled is None or not compiled.is_current():
        compiled = _compiled[key] = _CompiledTemplate(root, template_name)
    return compiled


def render(template_name: str, root: Path | None = None, **variables) -> RenderedPrompt:
    """Render prompts/<template_name> into chat messages.

    Compiled templates are kept between calls; every call still compares the files the template
    loaded with what is on disk, so an edited prompt is recompiled and gets a new hash.
    """
    compiled = _template(root or PROMPTS_DIR, template_name)
    context = compiled.template.new_context(variables)
    messages = []
    for role in ("system", "user"):
        if role in compiled.template.blocks:
            text = "".join(compiled.template.blocks[role](context)).strip()
            if text:
                messages.append({"role": role, "content": text})
    return RenderedPrompt(messages, template_name, compiled.sha())
