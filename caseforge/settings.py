"""What caseforge runs with, in one typed object (Settings), loaded once: the CASEFORGE_* environment variables
and the settings file's tables, plus where the project's own folders and a warehouse's companions are.

The settings file comes in three layers, later ones laid over earlier ones key by key:
  1. caseforge/defaults.toml, shipped with caseforge (offline defaults);
  2. the user's file: $CASEFORGE_CONFIG (or the older $CASEFORGE_LLM_CONFIG), else ./caseforge.toml;
  3. overrides for the current run (a deployment's `settings` parameter), see `overriding`.
`load_settings()` builds the object once and hands the same one out until the environment, the user's file or
the overrides in force change (tests change them freely; `reload_settings()` forgets it outright).
"""
from __future__ import annotations

import contextvars
import copy
import difflib
import os
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from caseforge.settings_tables import RENAMED, SettingsFile, key_elsewhere, known_keys

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
PROMPTS_DIR = PROJECT_ROOT / "prompts"
DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.toml"

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36 caseforge/0.1 (+legal benchmark research)"
)

class SettingsError(ValueError):
    """A setting has a value caseforge cannot use, or the settings file has a key caseforge does not know; each
    problem names the variable, or the file and its key."""

    def __init__(self, problems: str | list[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


# --- the settings ---

def env(default, *variables: str, **kwargs):
    """A setting read from the first of `variables` that is set to something other than empty."""
    return Field(default, json_schema_extra={"env": list(variables)}, **kwargs)


class Settings(BaseSettings):
    """Everything caseforge runs with. Each field says the environment variable it is read from (README,
    Configuration); `file` is the settings file."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

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

    # --- Prefect ---
    # Checked by caseforge.runtime.local_server, which says what it expects: local | ephemeral; seconds above 0.
    prefect_server: str = env("local", "CASEFORGE_PREFECT_SERVER")
    prefect_server_idle_s: str = env("", "CASEFORGE_PREFECT_SERVER_IDLE_S")
    notify_url: str = env("", "CASEFORGE_NOTIFY_URL")
    notify_block: str = env("", "CASEFORGE_NOTIFY_BLOCK")

    file: SettingsFile

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return init_settings, _Environment(settings_cls), _File(settings_cls)

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
            return cls(**values)
        finally:
            _ENVIRON.reset(token)


_ENVIRON: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("caseforge_environ", default=None)


def variables_of(name: str) -> list[str]:
    """The environment variables a field of Settings is read from, first first."""
    extra = Settings.model_fields[name].json_schema_extra
    return list(extra.get("env", [])) if isinstance(extra, dict) else []


class _Environment(PydanticBaseSettingsSource):
    """Each field's own variables (`env`), nothing else: an empty variable counts as unset."""

    def get_field_value(self, field, field_name: str):
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        environ = _ENVIRON.get()
        environ = os.environ if environ is None else environ
        found = {}
        for name in self.settings_cls.model_fields:
            for variable in variables_of(name):
                if environ.get(variable, "") != "":
                    found[name] = environ[variable]
                    break
        return found


class _File(PydanticBaseSettingsSource):
    """The settings file, its three layers merged."""

    def get_field_value(self, field, field_name: str):
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return {"file": merged_file()}


# --- the settings file's layers ---

_overrides: contextvars.ContextVar[tuple[dict, ...]] = contextvars.ContextVar("caseforge_settings_overrides",
                                                                               default=())
_READ: dict[Path, tuple[tuple, dict]] = {}          # file -> (its stamp when read, what it held)


def _stamp(path: Path) -> tuple:
    status = path.stat()
    return status.st_mtime_ns, status.st_size, status.st_ino


def read_toml(path: Path) -> dict:
    """A settings file's tables, read again only when the file changed. The one place a settings file is read."""
    path = Path(path).resolve()
    stamp = _stamp(path)
    cached = _READ.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with path.open("rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML ({exc})") from exc
    _READ[path] = (stamp, data)
    return data


def user_file(path: str | Path | None = None) -> Path | None:
    """The user's settings file, or None. An explicitly named file that is missing is an error."""
    explicit = path or os.environ.get("CASEFORGE_CONFIG") or os.environ.get("CASEFORGE_LLM_CONFIG")
    candidate = Path(explicit) if explicit else Path("caseforge.toml")
    if candidate.exists():
        return candidate
    if explicit:
        raise FileNotFoundError(f"settings file not found: {candidate} (CASEFORGE_CONFIG)")
    return None


def merge(base: dict, over: dict) -> dict:
    """`over` laid over `base`: tables merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merged_file(path: str | Path | None = None) -> dict:
    """The settings file as given, before it is typed: defaults, the user's file (`path`, else the one in
    force), then the current overrides."""
    data = read_toml(DEFAULTS_FILE)
    found = user_file(path)
    if found is not None:
        data = merge(data, read_toml(found))
    for layer in _overrides.get():
        data = merge(data, layer)
    return data


@contextmanager
def overriding(settings: dict | None) -> Iterator[None]:
    """Lay `settings` over the file for what runs inside (a flow run and its subflows and tasks)."""
    if not settings:
        yield
        return
    token = _overrides.set(_overrides.get() + (dict(settings),))
    try:
        yield
    finally:
        _overrides.reset(token)


# --- loaded once ---

_LOADED: dict[tuple, tuple[tuple[dict, ...], Settings]] = {}


# Every variable the settings are read from, and those that name the settings file, as os.environ keeps them:
# looked up in its own table of encoded names, since decoding the environment at each load_settings (a size
# check per payload, a parse budget per document) would cost more than the checks themselves.
_VARIABLES = tuple(os.fsencode(v) for v in (*(v for name in Settings.model_fields for v in variables_of(name)),
                                            "CASEFORGE_CONFIG", "CASEFORGE_LLM_CONFIG"))


def _in_force() -> tuple:
    """What the settings depend on: their environment variables, the user's file (which one, and its stamp),
    the overrides in force (by identity: each `overriding` block makes a new tuple)."""
    table = getattr(os.environ, "_data", None)
    variables = tuple(map(table.get, _VARIABLES)) if isinstance(table, dict) else \
        tuple(os.environ.get(os.fsdecode(v)) for v in _VARIABLES)
    explicit = variables[-2] or variables[-1]             # CASEFORGE_CONFIG, else CASEFORGE_LLM_CONFIG
    try:
        found = os.stat(explicit or "caseforge.toml")
        stamp = found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size
    except OSError:
        stamp = user_file() if explicit else None         # a named file that is missing: FileNotFoundError
    return variables, stamp, id(_overrides.get())


def load_settings(db: str | Path | None = None) -> Settings:
    """The settings in force (with `db` as the warehouse, when given). SettingsError names what is wrong."""
    key = _in_force()
    loaded = _LOADED.get(key)
    if loaded is None or loaded[0] is not _overrides.get():
        if len(_LOADED) > 32:
            _LOADED.clear()
        loaded = _LOADED[key] = (_overrides.get(), _validated(Settings))
    settings = loaded[1]
    return settings if db is None else settings.model_copy(update={"db_path": Path(db)})


def reload_settings() -> None:
    """Forget the settings loaded so far: the next load_settings reads the environment and the file again."""
    _LOADED.clear()
    _READ.clear()


def _validated(make, path: str | Path | None = None, the_file: bool = False):
    """make(), its validation errors as a SettingsError; `the_file`: make validates the settings file alone."""
    try:
        return make()
    except ValidationError as exc:
        raise SettingsError([_problem(error, path, the_file) for error in exc.errors()]) from None


def _problem(error: dict, path: str | Path | None, the_file: bool) -> str:
    loc = ("file",) * the_file + tuple(str(part) for part in error["loc"])
    error = {**error, "loc": loc}
    if loc and loc[0] == "file" and error["type"] == "extra_forbidden":
        return unknown_key(loc[1:-1], loc[-1], known_keys(loc[1:-1]), path)
    if loc and loc[0] == "file" and error["type"] == "literal_error" and loc[-1] == "[key]":
        return unknown_key(loc[1:-2], loc[-2], known_keys(loc[1:-2]), path)
    return f"{_where(error['loc'])}: {error['msg']} (got {_short(error.get('input'))})"


def unknown_key(table_path: tuple[str, ...], key: str, known: Iterable[str], path: str | Path | None = None) -> str:
    """One line for a key the settings file holds and caseforge does not know: the file that holds it, the key
    in its table, the closest known key."""
    known = sorted(set(known))
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    elsewhere = key_elsewhere(key) if not close else None
    renamed = RENAMED.get((*table_path, key))
    hint = (f"; it is now {renamed}" if renamed else f"; did you mean {close[0]}?" if close else f"; it belongs in {elsewhere}" if elsewhere else
            f" (known: {', '.join(known)})" if known else "")
    where = f"[{_dotted(table_path)}] {_dotted((key,))}" if table_path else f"[{_dotted((key,))}]"
    return f"{_layer_holding((*table_path, key), path)}: unknown setting {where}{hint}"


def _dotted(keys: tuple[str, ...]) -> str:
    """Keys as TOML writes them: llm.steps."casefacts.factuality"."""
    return ".".join(key if key.replace("_", "").replace("-", "").isalnum() else f'"{key}"' for key in keys)


def _layer_holding(keys: tuple[str, ...], path: str | Path | None) -> str:
    """Which layer of the settings file holds `keys`: a run's overrides, the user's file, or the defaults."""
    def holds(data: dict) -> bool:
        for key in keys:
            if not isinstance(data, dict) or key not in data:
                return False
            data = data[key]
        return True

    if any(holds(layer) for layer in _overrides.get()):
        return "this run's settings (overrides)"
    found = user_file(path)
    if found is not None and holds(read_toml(found)):
        return f"settings file {found}"
    return f"settings file {DEFAULTS_FILE}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(loc: tuple) -> str:
    """An error's place as a person sets it: the environment variable, or `[table] key` of the settings file."""
    if loc and loc[0] == "file":
        keys = [str(k) for k in loc[1:]]
        return f"settings file [{'.'.join(keys[:-1])}] {keys[-1]}" if len(keys) > 1 else f"settings file [{keys[0]}]"
    variables = variables_of(str(loc[0])) if loc and loc[0] in Settings.model_fields else []
    return variables[0] if variables else ".".join(map(str, loc))


# --- the settings file as plain tables, for readers that want a dict ---

def file_tables(path: str | Path | None = None) -> dict:
    """The settings file in force (or with `path` as the user's file) as its tables hold it, once checked."""
    if path is None:
        load_settings()
    else:
        _validated(lambda: SettingsFile.model_validate(merged_file(path)), path, the_file=True)
    return merged_file(path)


def table(*keys: str, path: str | Path | None = None) -> dict:
    """A nested table of the settings file ({} when absent), e.g. table("nightly", "builders", "casefacts")."""
    node: Any = file_tables(path)
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return {}
    return dict(node) if isinstance(node, dict) else {}


def upstream(name: str) -> str:
    """The base URL a live source fetches from ([upstream] <name>), without a trailing slash."""
    url = load_settings().file.upstream.base_urls().get(name)
    if not url:
        raise ValueError(f"no base URL for source {name!r}: set [upstream] {name} in the settings")
    return url
