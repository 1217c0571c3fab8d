"""Which backend and model answer a step: configuration, not code.

Every LLM step has a name (the `step` it records in ops.llm_calls, e.g. "casefacts.factuality",
"aquaechr-judge") and a role: `generator` writes, `validator` checks what was written, `judge`
scores quality, `nli` decides entailment, `system` is the model an evaluation evaluates. Backend and
model are chosen, first wins:

  1. arguments (the command line's --llm / --model / --validator-model / ...);
  2. environment for the step: CASEFORGE_LLM_<STEP>_BACKEND / _MODEL
     (<STEP> upper-cased, anything not a letter or digit becomes "_": "casefacts.factuality" →
     CASEFORGE_LLM_CASEFACTS_FACTUALITY_MODEL);
  3. environment for the role: CASEFORGE_LLM_<ROLE>_BACKEND / _MODEL (e.g. CASEFORGE_LLM_VALIDATOR_MODEL);
  4. environment for everything: CASEFORGE_LLM_BACKEND / CASEFORGE_LLM_MODEL;
  5. the settings file (caseforge.settings): [llm.steps."<step>"] (a key may hold * wildcards),
     then [llm.roles.<role>], then [llm] backend / model (for every role);
  6. the chosen backend's default model for the role ([llm.models.<backend>] — only llamacpp has them:
     SmolLM2 generates, Gemma 3 270M checks; `system` defaults to the generator's model).
Options are laid over each other the same way: [llm.backends.<backend>.options], [llm.roles.<role>.options],
[llm.steps."<step>".options], then arguments.
"""
from __future__ import annotations

import fnmatch
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from caseforge.settings import file_tables, table
from caseforge.settings_tables import ROLES
from caseforge.families import family_of
from caseforge.llm.backends import REGISTRY, get_backend

log = logging.getLogger(__name__)

# the command-line flag that names each role's model (build casefacts: --validator-model; aquaechr, casegen eval:
# --judge-model; eval aquaechr: --nli-model)
ROLE_FLAGS = {"generator": "--model", "validator": "--validator-model", "judge": "--judge-model",
              "nli": "--nli-model", "system": "--model"}
PATHLIKE_OPTION = re.compile(r"(_path|_file|_dir|api_key)$")


@dataclass(frozen=True)
class LLMChoice:
    backend: str
    model: str
    options: dict = field(default_factory=dict)
    step: str | None = None
    role: str = "generator"

    @property
    def family(self) -> str:
        return family_of(self.model) or "unknown"

    def describe(self) -> str:
        return f"{self.backend}:{self.model}"

    def identity(self) -> dict:
        """What of this choice changes answers: backend, model and options, without paths and keys (which
        differ between machines, not between answers)."""
        return {"backend": self.backend, "model": self.model,
                "options": {k: v for k, v in sorted(self.options.items()) if not PATHLIKE_OPTION.search(k)}}


def _env_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


def _step_table(config: dict, step: str | None) -> dict:
    if not step:
        return {}
    steps = config.get("steps") or {}
    if step in steps:
        return steps[step]
    matches = sorted(key for key in steps if any(ch in key for ch in "*?[") and fnmatch.fnmatchcase(step, key))
    return steps[matches[-1]] if matches else {}


def llm_choice(step: str | None = None, role: str = "generator", backend: str | None = None,
               model: str | None = None, config_path: str | Path | None = None, **options) -> LLMChoice:
    if role not in ROLES:
        raise ValueError(f"unknown LLM role {role!r}; roles are {', '.join(ROLES)}")
    config = file_tables(config_path).get("llm", {})
    step_config = _step_table(config, step)
    role_config = (config.get("roles") or {}).get(role, {})

    def pick(name: str):
        explicit = {"backend": backend, "model": model}[name]
        if explicit:
            return explicit
        for prefix in ([f"CASEFORGE_LLM_{_env_key(step)}_"] if step else []) + [f"CASEFORGE_LLM_{role.upper()}_",
                                                                                 "CASEFORGE_LLM_"]:
            if os.environ.get(prefix + name.upper()):
                return os.environ[prefix + name.upper()]
        return step_config.get(name) or role_config.get(name) or config.get(name)

    chosen_backend = pick("backend") or "llamacpp"
    if chosen_backend not in REGISTRY:
        raise ValueError(f"unknown LLM backend {chosen_backend!r}; choose one of {', '.join(sorted(REGISTRY))}")
    defaults = (config.get("models") or {}).get(chosen_backend) or {}
    chosen_model = pick("model") or defaults.get(role) or (defaults.get("generator") if role == "system" else None)
    if not chosen_model:
        where = f"step {step}, " if step else ""
        raise ValueError(f"no model configured for the {chosen_backend} backend ({where}role {role}): pass "
                         f"{ROLE_FLAGS[role]}, set CASEFORGE_LLM_{role.upper()}_MODEL, or [llm.roles.{role}] model "
                         f"(or [llm] model, for every role) in the settings file")
    merged = {**((config.get("backends") or {}).get(chosen_backend, {}).get("options") or {}),
              **(role_config.get("options") or {}), **(step_config.get("options") or {})}
    if os.environ.get("CASEFORGE_REPLAY_FILE"):
        merged.setdefault("replay_file", os.environ["CASEFORGE_REPLAY_FILE"])
    merged.update({k: v for k, v in options.items() if v is not None})
    return LLMChoice(chosen_backend, chosen_model, merged, step, role)


def retry_failed() -> bool:
    """Whether jobs ask again, once, what a cached failure answered ([llm] retry_failed, or
    CASEFORGE_LLM_RETRY_FAILED=1)."""
    if os.environ.get("CASEFORGE_LLM_RETRY_FAILED"):
        return os.environ["CASEFORGE_LLM_RETRY_FAILED"].lower() not in ("0", "false", "no")
    return bool(table("llm").get("retry_failed", False))


def refresh() -> bool:
    """Whether jobs ask again what the cache already answered, keeping the replaced answers
    (CASEFORGE_LLM_REFRESH=1, which `--refresh` sets for the command and the flows it runs)."""
    return os.environ.get("CASEFORGE_LLM_REFRESH", "").lower() not in ("", "0", "false", "no")


_LOADED: dict[tuple, object] = {}
_LOCK = threading.Lock()
IN_PROCESS = ("llamacpp", "vllm")      # backends that load a model into this process


def backend_for(choice: LLMChoice):
    """The backend of a choice. A model loaded into this process (llamacpp, vllm) is loaded once and serves
    every step that uses it with the same options."""
    if choice.backend not in IN_PROCESS:
        return _knowing(get_backend(choice.backend, choice.model, **choice.options), choice)
    key = (choice.backend, choice.model, repr(sorted(choice.options.items())))
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = _knowing(get_backend(choice.backend, choice.model, **choice.options), choice)
        return _LOADED[key]


def _knowing(backend, choice: LLMChoice):
    """The backend, told the choice it was made from: a job that fans out hands that choice to the shard
    workers (caseforge.llm.fanout), which build the same backend on their own machine."""
    try:
        backend.choice = choice
    except AttributeError:      # a backend with __slots__ or a read-only attribute: it just cannot fan out
        pass
    return backend


def backend(step: str | None = None, role: str = "generator", llm: str | None = None, model: str | None = None,
            **options):
    """The backend that answers `step` in `role` (see the module docstring for how it is chosen)."""
    return backend_for(llm_choice(step, role, llm, model, **options))


class Backends:
    """The backends of one pipeline run, per step and role.

    `llm` and `models` are what the command line gave (None: the settings decide); `fixed` maps a role
    to a ready backend (test doubles), which then answers every step of that role."""

    def __init__(self, llm: str | None = None, models: dict[str, str | None] | None = None,
                 fixed: dict[str, object] | None = None, **options):
        self.llm, self.models, self.fixed = llm, dict(models or {}), dict(fixed or {})
        self.options = {k: v for k, v in options.items() if v is not None}

    def choice(self, step: str | None, role: str) -> LLMChoice:
        fixed = self.fixed.get(role)
        if fixed is not None:
            return LLMChoice(getattr(fixed, "name", "fixed"), fixed.model, {}, step, role)
        return llm_choice(step, role, self.llm, self.models.get(role), **self.options)

    def for_step(self, step: str | None, role: str):
        fixed = self.fixed.get(role)
        return fixed if fixed is not None else backend_for(self.choice(step, role))

    def model(self, role: str, step: str | None = None) -> str:
        return self.choice(step, role).model
