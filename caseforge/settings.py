"""What caseforge runs with, in one typed object (Settings): every CASEFORGE_* environment variable, each a field read
by pydantic-settings' own environment handling (the field's `validation_alias` names its variables; an empty one
counts as unset), and the settings file's tables (`Settings.file`: caseforge.settings_file lays its three layers
over each other, caseforge.settings_tables types them); plus where the project's folders and a warehouse's
companions are.

Loaded once per command and handed down: the command line reads them (`read_settings`) and makes them current for
everything the command runs (`using`), flags included (`--refresh`); a run session makes the settings it was handed
current for its stages (caseforge.session), and a flow run a worker starts reads them once. `load_settings()` hands
out the current settings, and reads them afresh only where nothing made any current (a library call, a test).
A run's overrides (a deployment's `settings` parameter) are laid over the current settings' file by `overriding`.
"""
from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from caseforge.settings_errors import Belongs, SettingsError, problem, unknown_backend
from caseforge.settings_file import OVERRIDES, forget_files, layer_holding, merge, merged_file
from caseforge.settings_tables import BACKENDS, SettingsFile, ours

__all__ = ["EXPECTATIONS_DIR", "PROJECT_ROOT", "PROMPTS_DIR", "SQL_DIR", "Settings", "SettingsError", "load_settings",
           "overriding", "read_settings", "reload_settings", "upstream", "using", "variables_of"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
PROMPTS_DIR = PROJECT_ROOT / "prompts"

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36 caseforge/0.1 (+legal benchmark research)"
)


def env(default, *variables: str, **kwargs):
    """A setting read from the first of `variables` that is set to something other than empty."""
    return Field(default, validation_alias=AliasChoices(*variables), **kwargs)


class Settings(BaseSettings):
    """Everything caseforge runs with. Each field says the environment variable it is read from
    (docs/configuration.md); `file` is the settings file."""

    # case_sensitive: variables are named exactly; the prefix only keeps a field's own name (read too, since values
    # may be given by field name) out of the variables anyone sets; "_" with one split gathers CASEFORGE_LLM_* into
    # llm_variables.
    model_config = SettingsConfigDict(frozen=True, extra="forbid", case_sensitive=True, env_ignore_empty=True,
                                      env_prefix="CASEFORGE_field_", env_nested_delimiter="_", env_nested_max_split=1,
                                      validate_by_name=True, validate_by_alias=True)

    db_path: Path = env(Path("data/caseforge.duckdb"), "CASEFORGE_DB")
    export_dir: Path | None = None                 # the Parquet mirror somewhere else than beside the warehouse
    samples_dir: Path = env(PROJECT_ROOT.parent / "shared" / "samples", "CASEFORGE_SAMPLES")

    # --- fetching from upstream ---
    user_agent: str = env(DEFAULT_USER_AGENT, "CASEFORGE_USER_AGENT")
    requests_per_second: float = env(2.0, "CASEFORGE_RPS")
    max_retries: int = env(5, "CASEFORGE_MAX_RETRIES")
    backoff_base_s: float = env(1.0, "CASEFORGE_BACKOFF_S")
    # timeout_s bounds each network operation (connect, one read); fetch_deadline_s a whole request, redirects and
    # body included, so a body fed a byte at a time ends too.
    timeout_s: float = env(30.0, "CASEFORGE_TIMEOUT_S")
    fetch_deadline_s: float = env(300.0, "CASEFORGE_FETCH_DEADLINE_S")
    # A host that fails this many connection attempts in a row (no HTTP answer: refused, unresolvable, timed out),
    # or keeps failing them for this many seconds, is given up for the rest of the fetcher's run.
    host_max_failures: int = env(12, "CASEFORGE_HOST_MAX_FAILURES")
    host_failure_budget_s: float = env(120.0, "CASEFORGE_HOST_FAILURE_BUDGET_S")

    # --- what one upstream input may weigh or cost before it is refused unparsed (caseforge.archive) ---
    # Far above the largest real input, far below what would choke a parser or the warehouse.
    max_mb_oyez_case: float = env(2, "CASEFORGE_MAX_MB_OYEZ_CASE")         # a case detail (largest real: 71 KB)
    max_mb_oyez_list: float = env(64, "CASEFORGE_MAX_MB_OYEZ_LIST")         # the case list of every term
    max_mb_oyez_legacy: float = env(64, "CASEFORGE_MAX_MB_OYEZ_LEGACY")     # the legacy justice table CSV
    max_mb_hudoc_body: float = env(32, "CASEFORGE_MAX_MB_HUDOC_BODY")       # a judgment body, HTML or DOCX
    # one part of a DOCX body once inflated (word/document.xml of 001-175180: 0.5 MB)
    max_mb_hudoc_docx_part: float = env(64, "CASEFORGE_MAX_MB_HUDOC_DOCX_PART")
    max_mb_hudoc_metadata: float = env(32, "CASEFORGE_MAX_MB_HUDOC_METADATA")  # a query page or metadata file
    max_mb_guides_guide: float = env(64, "CASEFORGE_MAX_MB_GUIDES_GUIDE")   # a guide: PDF, text or page CSV
    max_mb_cn_dump: float = env(1024, "CASEFORGE_MAX_MB_CN_DUMP")           # a dump file or API answer
    max_mb_cn_record: float = env(4, "CASEFORGE_MAX_MB_CN_RECORD")          # one judgment in a dump
    max_mb_barexam_file: float = env(1024, "CASEFORGE_MAX_MB_BAREXAM_FILE")  # barexam_qa.csv, passages_*.jsonl
    max_mb_barexam_record: float = env(1, "CASEFORGE_MAX_MB_BAREXAM_RECORD")  # one question row or passage line
    # Most markup elements in one HUDOC body (Malyy's HTML has 3,215; the DOCX of 001-175180 14,202).
    max_elements_hudoc_body: int = env(200_000, "CASEFORGE_MAX_ELEMENTS_HUDOC_BODY")
    # Seconds one document may take to parse (a long judgment or Chinese record takes well under one).
    max_parse_s_hudoc_body: float = env(60, "CASEFORGE_MAX_PARSE_S_HUDOC_BODY")
    max_parse_s_cn_record: float = env(30, "CASEFORGE_MAX_PARSE_S_CN_RECORD")
    # A DOCX part over 1 MB inflating more than this many times its compressed size is refused unread (real
    # parts: 30 at most; deflate can reach 1,032).
    max_zip_ratio: float = env(100, "CASEFORGE_MAX_ZIP_RATIO")

    # --- the warehouse and queries on it ---
    # A run that finds the warehouse held by another process waits this long for it, saying who holds it,
    # before it gives up; a caseforge query holding it stops itself meanwhile.
    busy_wait_s: float = env(300.0, "CASEFORGE_BUSY_WAIT_S")
    # Bounds of an ad-hoc query (`caseforge sql`, `status`, `quality`): a statement running longer is stopped
    # (0: never); DuckDB's memory limit (empty: a quarter of this machine's memory) and the most it may spill
    # to a temporary folder under query_temp_dir (empty: the system's temporary folder, $TMPDIR).
    query_timeout_s: float = env(60.0, "CASEFORGE_QUERY_TIMEOUT_S")
    query_memory_limit: str = env("", "CASEFORGE_QUERY_MEMORY_LIMIT")
    query_temp_limit: str = env("4GB", "CASEFORGE_QUERY_TEMP_LIMIT")
    query_temp_dir: str = env("", "CASEFORGE_QUERY_TEMP_DIR")

    # --- progress lines ---
    progress: str = env("auto", "CASEFORGE_PROGRESS")                   # auto | bar | plain (and off, 0, 1, ...)
    progress_heartbeat_s: float = env(30.0, "CASEFORGE_PROGRESS_HEARTBEAT_S")  # 0: no line while nothing ends

    # --- models and credentials that are not the settings file's ---
    embedding_model: str = env("", "CASEFORGE_EMBEDDING_MODEL", "CASEFORGE_DENSE_MODEL")   # empty: the packaged one
    casegen_judge: str = env("", "CASEFORGE_CASEGEN_JUDGE")
    wenshu_cookies: str = env("", "CASEFORGE_WENSHU_COOKIES")
    wenshu_token: str = env("", "CASEFORGE_WENSHU_TOKEN")
    wenshu_doc_url: str = env("", "CASEFORGE_WENSHU_DOC_URL")
    # the Label Studio API token of `caseforge review` (else [review] token of the settings file); never logged
    review_token: SecretStr = env(SecretStr(""), "CASEFORGE_REVIEW_TOKEN")
    # the first user of the Label Studio that `make review-server` starts (caseforge.review.server)
    review_user: str = env("", "CASEFORGE_REVIEW_USER")
    review_password: SecretStr = env(SecretStr(""), "CASEFORGE_REVIEW_PASSWORD")

    # --- Prefect ---
    # Checked by caseforge.runtime.local_server, which says what it expects: local | ephemeral; seconds above 0.
    prefect_server: str = env("local", "CASEFORGE_PREFECT_SERVER")
    prefect_server_idle_s: str = env("", "CASEFORGE_PREFECT_SERVER_IDLE_S")
    notify_url: str = env("", "CASEFORGE_NOTIFY_URL")
    notify_block: str = env("", "CASEFORGE_NOTIFY_BLOCK")
    # Marks LLM shard runs Crashed after this long without a heartbeat (caseforge.runtime.zombie_runs; at least three
    # heartbeats of 30 s).
    zombie_window_s: int = env(90, "CASEFORGE_ZOMBIE_WINDOW_S")

    # --- the LLM layer (caseforge.llm.config resolves a step's backend and model from these and the file's [llm]) ---
    # CASEFORGE_LLM_<STEP>_BACKEND/_MODEL, CASEFORGE_LLM_<ROLE>_BACKEND/_MODEL and CASEFORGE_LLM_BACKEND/_MODEL, each
    # under what follows CASEFORGE_LLM_ (e.g. "CASEFACTS_FACTUALITY_MODEL"): read through `llm_variable`
    llm_variables: dict[str, str] = env({}, "CASEFORGE_LLM")
    llm_refresh: bool = env(False, "CASEFORGE_LLM_REFRESH")           # ask again what the cache answered (--refresh)
    llm_retry_failed: bool | None = env(None, "CASEFORGE_LLM_RETRY_FAILED")   # unset: the file's [llm] retry_failed
    # This machine's own, never part of a choice's identity nor sent to a shard worker (caseforge.llm.config):
    openai_base_url: str = env("", "CASEFORGE_OPENAI_BASE_URL")       # below a base_url option of the settings file
    openai_api_key: str = env("", "CASEFORGE_OPENAI_API_KEY", repr=False)
    llamacpp_model_path: str = env("", "CASEFORGE_LLAMACPP_MODEL_PATH")
    replay_file: str = env("", "CASEFORGE_REPLAY_FILE")
    # The shard store a worker answers shards of (a kubernetes pool's `store`): runs naming another are refused.
    fanout_store: str = env("", "CASEFORGE_FANOUT_STORE")

    # the user's settings file (empty: ./caseforge.toml when there is one)
    config_file: Path | None = env(None, "CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG")
    file: SettingsFile

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return init_settings, _Environment(settings_cls), _File(settings_cls)

    @field_validator("llm_variables")
    @classmethod
    def _known_backends(cls, variables: dict[str, str]) -> dict[str, str]:
        for key, value in variables.items():
            if key.endswith("BACKEND") and value not in BACKENDS:
                raise ours(unknown_backend(f"CASEFORGE_LLM_{key}", value))
        return variables

    # --- what the settings say, worked out ---

    def llm_variable(self, scope: str | None, what: str) -> str | None:
        """CASEFORGE_LLM_<SCOPE>_<WHAT> (scope None: CASEFORGE_LLM_<WHAT>); `what` is BACKEND or MODEL."""
        return self.llm_variables.get(f"{scope}_{what}" if scope else what) or None

    @property
    def retry_failed(self) -> bool:
        """Whether jobs ask again, once, what a cached failure answered (--retry-failed,
        CASEFORGE_LLM_RETRY_FAILED, else [llm] retry_failed)."""
        return self.file.llm.retry_failed if self.llm_retry_failed is None else self.llm_retry_failed

    # --- everything that belongs to one warehouse lies beside it, named after it ---

    @property
    def db_key(self) -> str:
        """What the folders that belong to this warehouse are named after: its file name without `.duckdb`,
        so two warehouses in one folder never share a mirror, a run folder or a release."""
        name = self.db_path.name
        return name[: -len(".duckdb")] if name.endswith(".duckdb") and name != ".duckdb" else name

    @property
    def parquet_dir(self) -> Path:
        """The Parquet mirror of this warehouse (curated tables and the ops tables `status` and `quality`
        read), rewritten after each run and read by `caseforge sql` while a run holds the DB file:
        `<db dir>/<db name>-parquet`."""
        return self.export_dir or self.db_path.parent / f"{self.db_key}-parquet"

    @property
    def archive_dir(self) -> Path:
        """The bodies of the archived upstream payloads (ops.raw_payloads describes them), one file per
        content named by its sha256: `<db dir>/<db name>-archive/<first two hex digits>/<sha256>`."""
        return self.db_path.parent / f"{self.db_key}-archive"

    @property
    def runs_dir(self) -> Path:
        """Per-run folders (a nightly's summary and plots): `<db dir>/<db name>-runs`."""
        return self.db_path.parent / f"{self.db_key}-runs"

    @property
    def reports_dir(self) -> Path:
        """Evaluation reports (leaderboards, metrics exports, their plots), one folder per benchmark:
        `<db dir>/<db name>-reports`."""
        return self.db_path.parent / f"{self.db_key}-reports"

    @property
    def release_dir(self) -> Path:
        """Where the nightly writes releases unless told otherwise: `<db dir>/<db name>-releases`."""
        return self.db_path.parent / f"{self.db_key}-releases"

    @classmethod
    def of_environment(cls, environ: Mapping[str, str], **values) -> "Settings":
        """The settings as they would be in `environ` instead of this process's environment."""
        token = _ENVIRON.set(environ)
        try:
            return _validated(lambda: cls(**values))
        finally:
            _ENVIRON.reset(token)

    def overridden(self, layer: dict) -> "Settings":
        """These settings with `layer` laid over their file (checked again: SettingsError names what is wrong)."""
        token = OVERRIDES.set(OVERRIDES.get() + (dict(layer),))      # a problem then names the overrides
        try:
            file = _validated(lambda: SettingsFile.model_validate(merge(self.file.model_dump(), layer)), the_file=True,
                              named=self.config_file)
        finally:
            OVERRIDES.reset(token)
        return self.model_copy(update={"file": file})


_ENVIRON: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("caseforge_environ", default=None)
_CURRENT: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("caseforge_settings", default=None)


def variables_of(name: str) -> list[str]:
    """The environment variables a field of Settings is read from, first first."""
    alias = Settings.model_fields[name].validation_alias
    return [str(choice) for choice in alias.choices] if isinstance(alias, AliasChoices) else []


class _Environment(EnvSettingsSource):
    """pydantic-settings' own environment source, on this process's environment or the one `of_environment` names;
    the settings file is no variable."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        environ = _ENVIRON.get()
        if environ is None:
            return super()._load_env_vars()
        return {name: value for name, value in environ.items() if value != ""}

    def __call__(self) -> dict[str, Any]:
        return {key: value for key, value in super().__call__().items() if key != "file"}


class _File(PydanticBaseSettingsSource):
    """The settings file, its layers merged: the user's file is the one the settings name (config_file)."""

    def get_field_value(self, field, field_name: str):
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        state = self.current_state
        named = next((state[k] for k in ("config_file", *variables_of("config_file")) if state.get(k)), None)
        return {"file": merged_file(named)}


# --- loaded once, then handed down ---

def read_settings(config_file: str | Path | None = None, belongs: Belongs | None = None) -> Settings:
    """The settings as the environment and the settings file say now (`config_file`: that file as the user's).
    SettingsError names every problem, one line each; `belongs` adds where a misplaced key belongs."""
    values = {"config_file": config_file} if config_file else {}
    return _validated(lambda: Settings(**values), belongs=belongs, named=config_file)


def load_settings(db: str | Path | None = None) -> Settings:
    """The current settings (those `using` made current: a command's, a run's), else the settings read now; with
    `db` as the warehouse, when given."""
    settings = _CURRENT.get() or read_settings()
    return settings if db is None else settings.model_copy(update={"db_path": Path(db)})


@contextmanager
def using(settings: Settings) -> Iterator[Settings]:
    """Make `settings` the current ones for what runs inside (in this context: its threads and Prefect task runs
    copy it)."""
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


@contextmanager
def overriding(layer: dict | None) -> Iterator[Settings]:
    """Lay `layer` over the current settings' file for what runs inside (a flow run and its subflows and tasks):
    the settings it yields are the current ones there, and settings read there have the layer too."""
    settings = load_settings()
    if not layer:
        with using(settings) as current:
            yield current
        return
    settings = settings.overridden(layer)
    token = OVERRIDES.set(OVERRIDES.get() + (dict(layer),))
    try:
        with using(settings) as current:
            yield current
    finally:
        OVERRIDES.reset(token)


def reload_settings() -> None:
    """Forget the settings files read so far (the environment is read by each read_settings)."""
    forget_files()


def _validated(make, the_file: bool = False, belongs: Belongs | None = None, named: str | Path | None = None):
    """make(), its validation errors as one SettingsError; `the_file`: make validates the settings file alone."""
    try:
        return make()
    except ValidationError as exc:
        errors = [{**e, "loc": ("file", *e["loc"])} if the_file else e for e in exc.errors()]
        raise SettingsError([problem(e, lambda keys: layer_holding(keys, _named(named)), variables_of, belongs)
                             for e in errors]) from None


def _named(named: str | Path | None) -> str | Path | None:
    """The user's settings file a problem is in: the one named, else CASEFORGE_CONFIG's."""
    return named or os.environ.get("CASEFORGE_CONFIG") or os.environ.get("CASEFORGE_LLM_CONFIG") or None


def upstream(name: str) -> str:
    """The base URL a live source fetches from ([upstream] <name>), without a trailing slash."""
    url = load_settings().file.upstream.base_urls().get(name)
    if not url:
        raise ValueError(f"no base URL for source {name!r}: set [upstream] {name} in the settings")
    return url
