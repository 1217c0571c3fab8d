"""The settings file's tables as typed models, one per table ([llm] with its roles, steps, backends and models,
[fanout], [upstream], [nightly], [release], [mirror], [review], [source_health]); caseforge.settings lays the
file's layers over each other and checks them against these (Settings.file)."""
from __future__ import annotations

import fnmatch
import types
import typing
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_core import PydanticCustomError

# A key no table declares is an error naming it, its file and the closest known key (caseforge.settings): a
# misspelt setting must not be ignored.
UNKNOWN_KEYS = "forbid"

# keys that were renamed: what a file that still has one is told
RENAMED = {("fanout", "shard_dir"): "[fanout] store (a folder, or a URL such as s3://bucket/prefix: docs/llm.md, "
                                    "Fan-out)"}

ROLES = ("generator", "validator", "judge", "nli", "system")
BACKENDS = ("replay", "openai", "llamacpp", "vllm")        # caseforge.llm.backends.REGISTRY's names
Role = Literal[ROLES]
BackendName = Literal[BACKENDS]


class Table(BaseModel):
    """A table of the settings file."""

    model_config = ConfigDict(extra=UNKNOWN_KEYS, frozen=True)


def ours(message: str) -> PydanticCustomError:
    """A validation error whose message is the whole line caseforge.settings_errors prints for it."""
    return PydanticCustomError("caseforge", message)


class LlmChoice(Table):
    """[llm.roles.<role>], [llm.steps."<step>"] (a key may hold * wildcards), [llm.backends.<backend>]: a backend,
    a model and options of their own (caseforge.llm.config lays them over each other)."""

    backend: BackendName | None = None
    model: str | None = None
    options: dict[str, Any] = {}


class LlmTable(Table):
    backend: BackendName
    model: str | None = None                       # every role's model, unless a role or step names its own
    retry_failed: bool = False                     # ask again, once, the requests a cached failure answered
    models: dict[BackendName, dict[Role, str]] = {}   # backend -> role -> its default model
    backends: dict[BackendName, LlmChoice] = {}
    roles: dict[Role, LlmChoice] = {}
    steps: dict[str, LlmChoice] = {}               # step names are checked where the pipelines are known

    def step(self, name: str | None) -> LlmChoice:
        """[llm.steps."<name>"], else the last (in sorted order) of the wildcard keys that match it."""
        if not name:
            return LlmChoice()
        if name in self.steps:
            return self.steps[name]
        matches = sorted(key for key in self.steps if any(ch in key for ch in "*?[") and fnmatch.fnmatchcase(name, key))
        return self.steps[matches[-1]] if matches else LlmChoice()


class FanoutTable(Table):
    """Fan-out of LLM steps to GPU workers (docs/llm.md, "Fan-out"); the defaults say what each key is. An empty
    `pool`: every step runs in process."""

    pool: str
    deployment: str
    shards: int = Field(ge=1)
    min_shard_requests: int = Field(ge=1)
    store: str
    store_endpoint_url: str
    poll_s: float
    heartbeat_s: float
    stale_after_s: float
    start_timeout_s: float
    no_worker_timeout_s: float
    shard_timeout_s: float
    max_submissions: int = Field(ge=1)
    check_timeout_s: float

    @property
    def enabled(self) -> bool:
        return bool(self.pool.strip())

    @field_validator("deployment")
    @classmethod
    def _flow_and_deployment(cls, value: str) -> str:
        if "/" not in value:
            raise ours(f"[fanout] deployment must be 'flow name/deployment name', not {value!r}")
        return value

    @model_validator(mode="after")
    def _heartbeats_before_dead(self) -> "FanoutTable":
        if self.stale_after_s < 3 * self.heartbeat_s:
            raise ours(f"[fanout] stale_after_s = {self.stale_after_s:g} is less than three heartbeats (heartbeat_s = "
                       f"{self.heartbeat_s:g}): a live shard would be taken for dead")
        return self


class MirrorTable(Table):
    """Publishing the Parquet mirror to a store after each run (docs/configuration.md, "The Parquet mirror")."""

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


HealthAction = Literal["fail", "warn"]


class SourceHealthRules(Table):
    """[source_health.sources.<source>]: one source's own values of the [source_health] keys."""

    listing_min_ratio: float | None = Field(None, ge=0)
    yield_min_ratio: float | None = Field(None, ge=0)
    yield_min_basis: int | None = Field(None, ge=1)
    quiet_gap_factor: float | None = Field(None, gt=0)
    baseline_nights: int | None = Field(None, ge=2)
    on_listing: HealthAction | None = None
    on_yield: HealthAction | None = None
    on_quiet: HealthAction | None = None


class SourceHealthTable(Table):
    """The nightly's source-health rules (caseforge/source_health.py); the defaults say what each key is."""

    listing_min_ratio: float = Field(0.5, ge=0)
    yield_min_ratio: float = Field(0.5, ge=0)
    yield_min_basis: int = Field(3, ge=1)
    quiet_gap_factor: float = Field(3.0, gt=0)
    baseline_nights: int = Field(14, ge=2)
    on_listing: HealthAction = "fail"
    on_yield: HealthAction = "fail"
    on_quiet: HealthAction = "warn"
    sources: dict[str, SourceHealthRules] = {}      # source names are checked where the registry is known

    def for_source(self, source: str) -> dict:
        """The rules of one source: its own values over these."""
        own = self.sources.get(source)
        values = self.model_dump(exclude={"sources"})
        if own is not None:
            values.update({key: value for key, value in own.model_dump().items() if value is not None})
        return values


class ReleaseTable(Table):
    """The cutoff of every release's fresh split (caseforge/release/fresh.py), and the endpoint of an
    S3-compatible server releases are written to (caseforge/release/stored.py)."""

    fresh_after: str = ""
    fresh_months: int = 12
    store_endpoint_url: str = ""

    @field_validator("fresh_after", mode="before")
    @classmethod
    def _date_as_text(cls, value):
        """A TOML date (fresh_after = 2024-06-30) as the text it stands for."""
        return str(value) if isinstance(value, (date, datetime)) else value


class ReviewPolicy(Table):
    """[review.policy]: what a release of a reviewed benchmark needs (caseforge/review/policy.py). Below it the
    release is held back (`below = "hold"`) or written and marked unreviewed (`below = "mark"`)."""

    min_reviewed: int = Field(30, ge=0)            # items with annotations from every annotator asked for
    min_agreement: float = Field(0.6, ge=-1, le=1)  # the lower end of the judge agreement's 95% interval
    agreement: Literal["kappa", "ac1", "accuracy"] = "kappa"   # the judge's figure min_agreement reads (docs/review.md)
    below: Literal["mark", "hold"] = "mark"


class ReviewTable(Table):
    """[review]: people measure the judge on Label Studio (docs/review.md). Empty url: no review."""

    url: str = ""                                  # the Label Studio server, e.g. http://127.0.0.1:8080
    token: SecretStr = SecretStr("")               # its API token (CASEFORGE_REVIEW_TOKEN wins); never logged
    sample_size: int = Field(40, ge=1)             # items pushed per benchmark
    seed: int = 13                                 # the stratified sample's seed
    annotators_per_item: int = Field(2, ge=2)      # the overlap: a further annotation is refused
    nightly: list[str] = []                        # benchmarks the nightly's review stage pulls and pushes
    timeout_s: float = Field(30.0, gt=0)           # one request to Label Studio
    page_size: int = Field(100, ge=1)              # tasks per page of a pull
    bootstrap_resamples: int = Field(1000, ge=100)  # for the 95% intervals (seeded by `seed`)
    policy: ReviewPolicy = ReviewPolicy()


class SettingsFile(Table):
    """The settings file, its layers merged."""

    llm: LlmTable
    fanout: FanoutTable
    upstream: UpstreamTable
    nightly: NightlyTable = NightlyTable()
    source_health: SourceHealthTable = SourceHealthTable()
    release: ReleaseTable = ReleaseTable()
    mirror: MirrorTable = MirrorTable()
    review: ReviewTable = ReviewTable()


# --- what the tables declare, for the errors that name an unknown key (caseforge.settings.unknown_key) ---

def known_keys(table_path: tuple[str, ...]) -> list[str]:
    """The keys the tables declare at `table_path` of the settings file (() for its tables)."""
    node = _node_at(table_path)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return list(node.model_fields)
    if typing.get_origin(node) is dict and typing.get_origin(typing.get_args(node)[0]) is Literal:
        return list(typing.get_args(typing.get_args(node)[0]))
    return []


def key_elsewhere(key: str) -> str | None:
    """Where a key the tables declare in another table belongs (`[llm.backends.<name>] options`), or None."""
    found = _declared(SettingsFile, ())
    return next((f"[{'.'.join(path)}] {key}" for path, name in found if name == key), None)


def _node_at(table_path: tuple[str, ...]):
    node: Any = SettingsFile
    for part in table_path:
        if isinstance(node, type) and issubclass(node, BaseModel):
            node = node.model_fields[part].annotation if part in node.model_fields else None
        elif typing.get_origin(node) is dict:
            node = typing.get_args(node)[1]
        node = _without_none(node)
    return node


def _declared(node, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """(table path, key) of every key the tables declare, a table of free names shown as <name>."""
    node = _without_none(node)
    if typing.get_origin(node) is dict:
        return _declared(typing.get_args(node)[1], (*path, "<name>"))
    if not (isinstance(node, type) and issubclass(node, BaseModel)):
        return []
    found = []
    for name, field in node.model_fields.items():
        found.append((path, name))
        found += _declared(field.annotation, (*path, name))
    return found


def _without_none(annotation):
    """`X | None` as X."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    optional = typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1
    return args[0] if optional else annotation
