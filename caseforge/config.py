"""Settings from the environment, with the defaults the README documents."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
PROMPTS_DIR = PROJECT_ROOT / "prompts"

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36 caseforge/0.1 (+legal benchmark research)"
)


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    db_path: Path = field(default_factory=lambda: Path(os.environ.get("CASEFORGE_DB", "data/caseforge.duckdb")))
    export_dir: Path | None = None
    samples_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("CASEFORGE_SAMPLES", str(PROJECT_ROOT.parent / "shared" / "samples")))
    )
    user_agent: str = field(default_factory=lambda: os.environ.get("CASEFORGE_USER_AGENT", DEFAULT_USER_AGENT))
    requests_per_second: float = field(default_factory=lambda: _env_float("CASEFORGE_RPS", 2.0))
    max_retries: int = field(default_factory=lambda: int(_env_float("CASEFORGE_MAX_RETRIES", 5)))
    backoff_base_s: float = field(default_factory=lambda: _env_float("CASEFORGE_BACKOFF_S", 1.0))
    timeout_s: float = field(default_factory=lambda: _env_float("CASEFORGE_TIMEOUT_S", 30.0))
    # timeout_s bounds each network operation (connect, one read); this bounds a whole request, redirects and
    # body included, so a body fed a byte at a time ends too.
    fetch_deadline_s: float = field(default_factory=lambda: _env_float("CASEFORGE_FETCH_DEADLINE_S", 300.0))
    # A host that fails this many connection attempts in a row (no HTTP answer: refused, unresolvable,
    # timed out), or keeps failing them for this many seconds, is given up for the rest of the fetcher's run:
    # its remaining requests fail at once, naming the host, instead of each retrying with backoff.
    host_max_failures: int = field(default_factory=lambda: int(_env_float("CASEFORGE_HOST_MAX_FAILURES", 12)))
    host_failure_budget_s: float = field(default_factory=lambda: _env_float("CASEFORGE_HOST_FAILURE_BUDGET_S", 120.0))
    # A run that finds the warehouse held by another process waits this long for it, saying who holds it,
    # before it gives up (caseforge.warehouse.connect); a caseforge query holding it stops itself meanwhile.
    busy_wait_s: float = field(default_factory=lambda: _env_float("CASEFORGE_BUSY_WAIT_S", 300.0))
    # Bounds of an ad-hoc query (`caseforge sql`, `status`, `quality`: caseforge.warehouse.open_for_query):
    # a statement running longer is stopped (0: never); DuckDB's memory limit (empty: a quarter of this
    # machine's memory) and the most it may spill to a temporary folder under query_temp_dir (empty: the
    # system's temporary folder, $TMPDIR).
    query_timeout_s: float = field(default_factory=lambda: _env_float("CASEFORGE_QUERY_TIMEOUT_S", 60.0))
    query_memory_limit: str = field(default_factory=lambda: os.environ.get("CASEFORGE_QUERY_MEMORY_LIMIT", ""))
    query_temp_limit: str = field(default_factory=lambda: os.environ.get("CASEFORGE_QUERY_TEMP_LIMIT", "4GB"))
    query_temp_dir: str = field(default_factory=lambda: os.environ.get("CASEFORGE_QUERY_TEMP_DIR", ""))

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


def settings(db: str | Path | None = None) -> Settings:
    base = Settings()
    if db is None:
        return base
    return dataclasses.replace(base, db_path=Path(db))
