"""The settings file's tables as typed models, one per table ([llm] with its roles, steps, backends and models,
[fanout], [upstream], [nightly], [release], [mirror]); caseforge.settings lays the file's layers over each other and
checks them against these (Settings.file)."""
from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# What a key of the settings file that no table declares does: "allow" keeps it (in the dict views too), as
# caseforge always has; "forbid" would make it an error. Every table below takes its policy from here.
UNKNOWN_KEYS = "allow"


class Table(BaseModel):
    """A table of the settings file."""

    model_config = ConfigDict(extra=UNKNOWN_KEYS, frozen=True)


class LlmChoice(Table):
    """[llm.roles.<role>], [llm.steps."<step>"] (a key may hold * wildcards), [llm.backends.<backend>]: a backend,
    a model and options of their own (caseforge.llm.config lays them over each other)."""

    backend: str | None = None
    model: str | None = None
    options: dict[str, Any] = {}


class LlmTable(Table):
    backend: str                                   # replay | openai | llamacpp | vllm
    model: str | None = None                       # every role's model, unless a role or step names its own
    retry_failed: bool = False                     # ask again, once, the requests a cached failure answered
    models: dict[str, dict[str, str]] = {}         # backend -> role -> its default model
    backends: dict[str, LlmChoice] = {}
    roles: dict[str, LlmChoice] = {}
    steps: dict[str, LlmChoice] = {}


class FanoutTable(Table):
    """Fan-out of LLM steps to GPU workers (docs/llm.md, "Fan-out"); the defaults say what each key is."""

    pool: str
    deployment: str
    shards: int
    min_shard_requests: int
    store: str
    store_endpoint_url: str
    poll_s: float
    heartbeat_s: float
    stale_after_s: float
    start_timeout_s: float
    no_worker_timeout_s: float
    shard_timeout_s: float
    max_submissions: int
    check_timeout_s: float


class MirrorTable(Table):
    """Publishing the Parquet mirror to a store after each run (README "The Parquet mirror")."""

    publish: str = ""
    endpoint_url: str = ""
    keep: int = Field(3, ge=2)              # the current generation and the one before it, at least
    check_timeout_s: float = Field(45.0, gt=0)


class UpstreamTable(Table):
    """Where each live source fetches from: base URLs (a source of its own may be added as a key)."""

    oyez: str
    hudoc: str
    guides: str

    def base_urls(self) -> dict[str, str]:
        """Every source's base URL that is set, without a trailing slash."""
        return {name: url.rstrip("/") for name, url in self.model_dump().items() if isinstance(url, str) and url}


class NightlyTable(Table):
    """Which benchmarks the nightly builds and evaluates, and the options each flow gets (its parameters)."""

    builders: dict[str, dict[str, Any]] = {}
    evaluations: dict[str, dict[str, Any]] = {}


class ReleaseTable(Table):
    """The cutoff of every release's fresh split (caseforge/release/fresh.py)."""

    fresh_after: str = ""
    fresh_months: int = 12

    @field_validator("fresh_after", mode="before")
    @classmethod
    def _date_as_text(cls, value):
        """A TOML date (fresh_after = 2024-06-30) as the text it stands for."""
        return str(value) if isinstance(value, (date, datetime)) else value


class SettingsFile(Table):
    """The settings file, its layers merged."""

    llm: LlmTable
    fanout: FanoutTable
    upstream: UpstreamTable
    nightly: NightlyTable = NightlyTable()
    release: ReleaseTable = ReleaseTable()
    mirror: MirrorTable = MirrorTable()
