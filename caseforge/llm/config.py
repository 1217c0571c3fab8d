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
[llm.steps."<step>".options], then arguments; below them all, what this machine's environment says for the
backend (CASEFORGE_OPENAI_BASE_URL, CASEFORGE_OPENAI_API_KEY, CASEFORGE_LLAMACPP_MODEL_PATH, CASEFORGE_REPLAY_FILE:
LLMChoice.machine). Every variable is a field of caseforge.settings.Settings; `llm_choice` reads them from the
settings it is handed, the one place a choice is resolved.
"""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field, replace

from caseforge.settings import Settings, load_settings
from caseforge.settings_errors import closest
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
    # this machine's own values for the backend (its endpoint, key, model file, replay file from the environment):
    # below `options`, never part of the identity nor handed to a shard worker
    machine: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def family(self) -> str:
        return family_of(self.model) or "unknown"

    def describe(self) -> str:
        return f"{self.backend}:{self.model}"

    def backend_options(self) -> dict:
        """What the backend is made with: this machine's values, then the options."""
        return {**self.machine, **self.options}

    def identity(self) -> dict:
        """What of this choice changes answers: backend, model and options, without paths and keys (which
        differ between machines, not between answers)."""
        return {"backend": self.backend, "model": self.model,
                "options": {k: v for k, v in sorted(self.options.items()) if not PATHLIKE_OPTION.search(k)}}


def _env_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


def llm_choice(settings: Settings, step: str | None = None, role: str = "generator", backend: str | None = None,
               model: str | None = None, **options) -> LLMChoice:
    """The backend, model and options that answer `step` in `role` under `settings` (the module docstring says
    which wins): the one place a choice is resolved."""
    if role not in ROLES:
        raise ValueError(f"unknown LLM role {role!r}; roles are {', '.join(ROLES)}")
    llm = settings.file.llm
    scopes = ([_env_key(step)] if step else []) + [role.upper(), None]
    tables = (llm.step(step), llm.roles.get(role), llm)

    def pick(what: str):
        found = {"backend": backend, "model": model}[what]
        found = found or next((v for scope in scopes if (v := settings.llm_variable(scope, what.upper()))), None)
        return found or next((getattr(t, what) for t in tables if t is not None and getattr(t, what)), None)

    chosen_backend = pick("backend") or "llamacpp"
    if chosen_backend not in REGISTRY:
        close = closest(chosen_backend, REGISTRY)
        raise ValueError(f"unknown LLM backend {chosen_backend!r}{f'; did you mean {close}?' if close else ''}; "
                         f"choose one of {', '.join(sorted(REGISTRY))}")
    defaults = llm.models.get(chosen_backend) or {}
    chosen_model = pick("model") or defaults.get(role) or (defaults.get("generator") if role == "system" else None)
    if not chosen_model:
        where = f"step {step}, " if step else ""
        raise ValueError(f"no model configured for the {chosen_backend} backend ({where}role {role}): pass "
                         f"{ROLE_FLAGS[role]}, set CASEFORGE_LLM_{role.upper()}_MODEL, or [llm.roles.{role}] model "
                         f"(or [llm] model, for every role) in the settings file")
    own = llm.backends.get(chosen_backend)
    merged = {**(own.options if own else {}), **(tables[1].options if tables[1] else {}), **tables[0].options}
    merged.update({k: v for k, v in options.items() if v is not None})
    return LLMChoice(chosen_backend, chosen_model, merged, step, role, _machine(settings, chosen_backend))


def _machine(settings: Settings, backend: str) -> dict:
    """This machine's values for `backend` from its environment: endpoint, key, model file, replay file."""
    values = {"openai": {"base_url": settings.openai_base_url, "api_key": settings.openai_api_key},
              "llamacpp": {"model_path": settings.llamacpp_model_path},
              "replay": {"replay_file": settings.replay_file}}.get(backend, {})
    return {name: value for name, value in values.items() if value}


def with_endpoint(choice: LLMChoice, endpoint: str | None) -> LLMChoice:
    """The choice, answered at `endpoint` unless it names its own (an option, or this machine's environment)."""
    if not endpoint or "base_url" in choice.backend_options():
        return choice
    return replace(choice, options={**choice.options, "base_url": endpoint})


_LOADED: dict[tuple, object] = {}
_LOCK = threading.Lock()
IN_PROCESS = ("llamacpp", "vllm")      # backends that load a model into this process


def backend_for(choice: LLMChoice):
    """The backend of a choice. A model loaded into this process (llamacpp, vllm) is loaded once and serves
    every step that uses it with the same options."""
    if choice.backend not in IN_PROCESS:
        return _knowing(get_backend(choice.backend, choice.model, **choice.backend_options()), choice)
    key = (choice.backend, choice.model, repr(sorted(choice.backend_options().items())))
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = _knowing(get_backend(choice.backend, choice.model, **choice.backend_options()), choice)
        return _LOADED[key]


def _knowing(backend, choice: LLMChoice):
    """The backend, told the choice it was made from: a job that fans out hands that choice to the shard
    workers (caseforge.llm.fanout), which build the same backend on their own machine."""
    try:
        backend.choice = choice
    except AttributeError:      # a backend with __slots__ or a read-only attribute: it just cannot fan out
        pass
    return backend


class Backends:
    """The backends of one pipeline run, per step and role.

    `settings`: the run's (default: the current ones); `llm` and `models` are what the command line gave (None:
    the settings decide); `fixed` maps a role to a ready backend (test doubles), which then answers every step of
    that role."""

    def __init__(self, llm: str | None = None, models: dict[str, str | None] | None = None,
                 fixed: dict[str, object] | None = None, settings: Settings | None = None, **options):
        self.llm, self.models, self.fixed = llm, dict(models or {}), dict(fixed or {})
        self.settings = settings or load_settings()
        self.options = {k: v for k, v in options.items() if v is not None}

    def choice(self, step: str | None, role: str) -> LLMChoice:
        fixed = self.fixed.get(role)
        if fixed is not None:
            return LLMChoice(getattr(fixed, "name", "fixed"), fixed.model, {}, step, role)
        return llm_choice(self.settings, step, role, self.llm, self.models.get(role), **self.options)

    def for_step(self, step: str | None, role: str):
        fixed = self.fixed.get(role)
        return fixed if fixed is not None else backend_for(self.choice(step, role))

    def model(self, role: str, step: str | None = None) -> str:
        return self.choice(step, role).model
