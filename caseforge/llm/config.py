"""Which backend and model a step uses: configuration, not code.

Precedence, first wins:
  1. arguments (the CLI's --llm / --model / --replay-file)
  2. per-step environment: CASEFORGE_LLM_<STEP>_BACKEND, CASEFORGE_LLM_<STEP>_MODEL
     (<STEP> upper-cased, anything not a letter or digit becomes "_": "casefacts/validate" → CASEFACTS_VALIDATE)
  3. environment: CASEFORGE_LLM_BACKEND, CASEFORGE_LLM_MODEL
  4. TOML file ($CASEFORGE_LLM_CONFIG, else ./caseforge.toml if present):
       [llm]
       backend = "openai"
       model = "Qwen/Qwen2.5-7B-Instruct"
       [llm.options]                       # handed to the backend (base_url, concurrency, ...)
       concurrency = 64
       [llm.steps."casefacts/validate"]    # one step's own choice
       model = "meta-llama/Llama-3.1-8B-Instruct"
  5. defaults: the llamacpp backend with SmolLM2-135M-Instruct (runs anywhere; for trying the
     pipeline, not for building a real benchmark).
"""
from __future__ import annotations

import logging
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from caseforge.families import family_of
from caseforge.llm.backends import REGISTRY, get_backend

log = logging.getLogger(__name__)

DEFAULT_BACKEND = "llamacpp"
DEFAULT_MODELS = {"llamacpp": "smollm2-135m-instruct"}


@dataclass(frozen=True)
class LLMChoice:
    backend: str
    model: str
    options: dict = field(default_factory=dict)
    step: str | None = None

    @property
    def family(self) -> str:
        return family_of(self.model) or "unknown"

    def describe(self) -> str:
        return f"{self.backend}:{self.model}"


def _env_key(step: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", step).strip("_").upper()


def load_config_file(path: str | Path | None = None) -> dict:
    """The [llm] table of the TOML config ({} when there is no file)."""
    explicit = path or os.environ.get("CASEFORGE_LLM_CONFIG")
    candidate = Path(explicit) if explicit else Path("caseforge.toml")
    if not candidate.exists():
        if explicit:
            raise FileNotFoundError(f"LLM config file not found: {candidate}")
        return {}
    with candidate.open("rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{candidate}: not valid TOML ({exc})") from exc
    return data.get("llm", {})


def llm_choice(step: str | None = None, backend: str | None = None, model: str | None = None,
               config_path: str | Path | None = None, **options) -> LLMChoice:
    config = load_config_file(config_path)
    step_config = (config.get("steps") or {}).get(step, {}) if step else {}
    env_step = f"CASEFORGE_LLM_{_env_key(step)}_" if step else None

    def pick(name: str):
        explicit = {"backend": backend, "model": model}[name]
        if explicit:
            return explicit
        if env_step and os.environ.get(env_step + name.upper()):
            return os.environ[env_step + name.upper()]
        if os.environ.get(f"CASEFORGE_LLM_{name.upper()}"):
            return os.environ[f"CASEFORGE_LLM_{name.upper()}"]
        return step_config.get(name) or config.get(name)

    chosen_backend = pick("backend") or DEFAULT_BACKEND
    if chosen_backend not in REGISTRY:
        raise ValueError(f"unknown LLM backend {chosen_backend!r}; choose one of {', '.join(sorted(REGISTRY))}")
    chosen_model = pick("model") or DEFAULT_MODELS.get(chosen_backend)
    if not chosen_model:
        raise ValueError(f"no model configured for the {chosen_backend} backend"
                         f"{' (step ' + step + ')' if step else ''}: pass --model or set CASEFORGE_LLM_MODEL")
    merged = {**(config.get("options") or {}), **(step_config.get("options") or {})}
    if os.environ.get("CASEFORGE_REPLAY_FILE"):
        merged.setdefault("replay_file", os.environ["CASEFORGE_REPLAY_FILE"])
    merged.update({k: v for k, v in options.items() if v is not None})
    return LLMChoice(chosen_backend, chosen_model, merged, step)


def backend_for(choice: LLMChoice):
    return get_backend(choice.backend, choice.model, **choice.options)
