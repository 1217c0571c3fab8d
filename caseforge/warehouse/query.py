"""The connection for ad-hoc SQL (`caseforge sql`, `quality`, `status`): read-only, sandboxed (nothing but the
warehouse and its mirror can be read, nothing written, attached, installed) and bounded (statement time,
memory, spill), on the warehouse, or on its Parquet mirror while a run holds the file."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb

from caseforge.atomic import new_process_folder
from caseforge.settings import Settings, load_settings
from caseforge.warehouse.connection import connect, writer_waiting
from caseforge.warehouse.errors import QueryStopped, WarehouseBusy
from caseforge.store import open_store
from caseforge.warehouse.mirror import Mirror, find_mirror
from caseforge.warehouse.published import PublishedMirror, find_published

# The ad-hoc query connection (open_for_query): the warehouse and its own mirror, nothing else. DuckDB's
# own settings do it, then lock_configuration so no statement can set them back: COPY TO, EXPORT, ATTACH,
# read_text/read_csv/glob, INSTALL/LOAD and SET/RESET are all refused (tests/integration/test_query_sandbox.py).
QUERY_SANDBOX = {
    "enable_external_access": False,        # no file or URL but the database itself; no ATTACH, no COPY TO
    "autoinstall_known_extensions": False,  # no download of an extension a query names
    "autoload_known_extensions": False,
}



def open_mirror(mirror: Mirror | PublishedMirror, folder: Path, name: str = "mirror", config: dict | None = None,
                filesystem=None) -> duckdb.DuckDBPyConnection:
    """A read-only database over the mirror, sandboxed like the file: its curated.* and ops.* views read the
    mirror's files.

    The views are written once to `<folder>/<name>.duckdb` (a throwaway file), which is then opened
    read-only, so `CREATE`, `DROP`, `INSERT` and `ATTACH` are refused as they are on the warehouse itself,
    with the same errors (an in-memory database would take them). The files are handed to DuckDB as Arrow
    datasets, so DuckDB itself opens no path at all: allowing the mirror's folder or files instead
    (allowed_directories / allowed_paths) would also let a query write there (DuckDB 1.5.5:
    COPY ... TO '<mirror file>' (FORMAT parquet, USE_TMP_FILE false) overwrites it).

    A published mirror (`filesystem`: a pyarrow filesystem over the store) is read the same way: Arrow opens
    exactly the objects its generation lists. DuckDB is handed no filesystem and loads no httpfs, so no
    statement can name a URL: a registered fsspec filesystem is either refused by the sandbox or, let through
    with allowed_directories, readable and writable under that prefix (docs/sql.md, "A published mirror")."""
    import pyarrow.dataset as ds

    datasets = {"_mirror_" + table.replace(".", "_"): ds.dataset([str(p) for p in paths], format="parquet",
                                                                 filesystem=filesystem)
                for table, paths in sorted(mirror.files.items())}
    views = folder / f"{name}.duckdb"
    with duckdb.connect(str(views), config=QUERY_SANDBOX) as writer:
        for schema in sorted({table.partition(".")[0] for table in mirror.files} | {"curated"}):
            writer.execute(f"CREATE SCHEMA {schema}")      # inline by rule (docs/sql.md): the reader's own schemas
        for table in sorted(mirror.files):
            hidden = "_mirror_" + table.replace(".", "_")
            writer.register(hidden, datasets[hidden])
            # inline by rule (docs/sql.md): a view over the registered dataset; `table` is a checked identifier
            writer.execute(f"CREATE VIEW {table} AS SELECT * FROM {hidden}")
    con = duckdb.connect(str(views), read_only=True, config={**QUERY_SANDBOX, **(config or {})})
    for hidden, dataset in datasets.items():
        con.register(hidden, dataset)
    con.execute("SET lock_configuration = true")   # inline by rule (docs/sql.md): a connection setting
    return con


@dataclass(frozen=True)
class QueryBounds:
    """What an ad-hoc query may use (Settings.query_*): seconds per statement (0: no limit), DuckDB's memory
    limit, the most it may spill, and where (a folder of its own under temp_root, removed at the end)."""

    timeout_s: float
    memory_limit: str
    temp_limit: str
    temp_root: Path

    @classmethod
    def of(cls, settings: Settings | None = None) -> "QueryBounds":
        settings = settings or load_settings()
        return cls(settings.query_timeout_s, settings.query_memory_limit or default_memory_limit(),
                   settings.query_temp_limit, Path(settings.query_temp_dir or tempfile.gettempdir()))

    def duckdb_config(self, temp_dir: Path) -> dict:
        return {"memory_limit": self.memory_limit, "max_temp_directory_size": self.temp_limit,
                "temp_directory": str(temp_dir)}


def default_memory_limit() -> str:
    """A quarter of this machine's memory (or of its cgroup's limit): DuckDB's own default is 80%, which
    leaves a running pipeline little."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        total = min(total, int(limit)) if limit.isdigit() else total
    except OSError:
        pass
    return f"{max(64, total // 4 // 1_000_000)}MB"


ROWS_PER_BATCH = 2048            # QueryConnection.fetch_batches: what an answer holds in Python at once (DuckDB's
                                 # own vector size)

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)b?\s*", re.IGNORECASE)


def size_in_bytes(text: str) -> int:
    """A size as DuckDB reads its settings ("4GB": 4·1000³, "4GiB": 4·1024³, "512MB", "1000" bytes)."""
    found = _SIZE.fullmatch(text)
    if not found:
        raise ValueError(f"not a size: {text!r} (e.g. 4GB, 512MB, 2GiB)")
    number, prefix, binary = found.groups()
    power = "kmgtp".find(prefix.lower()) + 1 if prefix else 0
    return int(float(number) * (1024 if binary else 1000) ** power)


QUERY_FOLDER_PREFIX = "caseforge-query-"


class QueryConnection:
    """open_for_query's connection: a DuckDB connection (every attribute passes through) whose statements a
    watchdog thread stops, with DuckDB's interrupt(), when they run longer than `timeout_s`, or, on the
    warehouse file, as soon as a run waits for the file (writer_waiting): the query stops and says so
    (QueryStopped) instead of the run failing. Closing it removes its temporary folder."""

    POLL_S = 0.2

    def __init__(self, con: duckdb.DuckDBPyConnection, mode: str, db_path: Path, bounds: QueryBounds,
                 workdir: Path):
        self._con, self.mode, self.db_path, self.bounds, self._workdir = con, mode, Path(db_path), bounds, workdir
        self.timeout_s = bounds.timeout_s
        self._running: tuple[int, float] | None = None      # (statement number, started) while one runs
        self._statements = 0
        self._last: tuple[int, float] = (0, time.monotonic())
        self._stopped: dict[int, str] = {}
        self._closed = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="caseforge-query-watchdog", daemon=True)
        self._watchdog.start()
        self._remove_workdir = weakref.finalize(self, shutil.rmtree, workdir, True)   # at exit, if never closed

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self) -> "QueryConnection":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _yield_reason(self) -> str | None:
        if self.mode != "warehouse":
            return None                      # the mirror holds no lock on the file
        waiting = writer_waiting(self.db_path)
        if waiting is None:
            return None
        who = f"PID {waiting.get('pid')}" + (f", {waiting['command']}" if waiting.get("command") else "")
        return (f"query stopped: a run needs the warehouse ({who}) and is waiting to write {self.db_path}; "
                "ask again when it is done (meanwhile queries answer from the Parquet mirror)")

    def _timeout_reason(self) -> str:
        return (f"query stopped after {self.timeout_s:g} s, its statement timeout (--timeout S on `caseforge sql`, "
                "or CASEFORGE_QUERY_TIMEOUT_S; 0 for none)")

    def _watch(self) -> None:
        while not self._closed.wait(self.POLL_S):
            running = self._running
            if running is None:
                continue
            number, started = running
            reason = self._yield_reason()
            if reason is None and self.timeout_s and time.monotonic() - started >= self.timeout_s:
                reason = self._timeout_reason()
            if reason and self._running == running:
                self._stopped[number] = reason
                try:
                    self._con.interrupt()
                except duckdb.Error:
                    return                   # closed meanwhile

    def execute(self, *args, **kwargs):
        reason = self._yield_reason()
        if reason:
            raise QueryStopped(reason)
        self._statements += 1
        self._last = (self._statements, time.monotonic())
        with self._statement(self._last):
            return self._con.execute(*args, **kwargs)

    def fetch_batches(self, cursor, rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[list[tuple]]:
        """The answer of the statement just executed on `cursor`, `rows_per_batch` rows at a time. DuckDB computes
        it as it is fetched, so the fetching is still the statement: its timeout (counted from its start) and a
        run's need of the file stop it as they stop execute()."""
        statement = self._last
        while True:
            with self._statement(statement):
                rows = cursor.fetchmany(rows_per_batch)
            if not rows:
                return
            yield rows

    @contextlib.contextmanager
    def _statement(self, statement: tuple[int, float]):
        """While statement `(number, started)` runs: the watchdog may stop it, and DuckDB's errors of a stopped or
        bounded statement become QueryStopped, saying which bound."""
        number = statement[0]
        self._running = statement
        try:
            yield
        except duckdb.OutOfMemoryException as exc:
            first = " ".join(str(exc).split("\n\n")[0].split())
            raise QueryStopped(f"query stopped: it needs more than its memory limit of {self.bounds.memory_limit} "
                               f"and temporary spill of {self.bounds.temp_limit} under {self.bounds.temp_root} "
                               f"(CASEFORGE_QUERY_MEMORY_LIMIT, CASEFORGE_QUERY_TEMP_LIMIT, "
                               f"CASEFORGE_QUERY_TEMP_DIR): {first}") from exc
        except duckdb.Error as exc:
            # interrupted while executing: InterruptException; while fetching a streamed answer DuckDB says
            # "Attempting to execute an unsuccessful or closed pending query result ... INTERRUPT Error"
            if number in self._stopped or isinstance(exc, duckdb.InterruptException):
                raise QueryStopped(self._stopped.get(number, "query interrupted")) from exc
            raise
        finally:
            self._running = None

    @property
    def spool_folder(self) -> Path:
        """The query's own temporary folder (removed when the connection closes), for what it writes aside."""
        return self._workdir

    @property
    def spool_limit_bytes(self) -> int:
        return size_in_bytes(self.bounds.temp_limit)

    def close(self) -> None:
        self._closed.set()
        try:
            self._con.close()
        finally:
            self._remove_workdir()


def _query_workdir(bounds: QueryBounds) -> Path:
    return new_process_folder(QUERY_FOLDER_PREFIX, bounds.temp_root)   # a killed query's spill can be gigabytes


def open_published_for_query(url: str, bounds: QueryBounds | None = None, endpoint_url: str | None = None
                             ) -> tuple[QueryConnection, str]:
    """The connection for ad-hoc SQL on a mirror published to a store (`--mirror URL`), from any machine with
    read credentials: the generation the store's pointer names, resolved once, read through views as the
    local mirror is (open_mirror), with the same sandbox and bounds. Returns the connection and "published";
    a note on stderr says which generation answers. StoreError (one line naming the store) when it cannot."""
    import pyarrow.fs

    bounds = bounds or QueryBounds.of()
    store = open_store(url, endpoint_url=endpoint_url or None)
    published = find_published(store)
    workdir = _query_workdir(bounds)
    config = {**QUERY_SANDBOX, **bounds.duckdb_config(workdir / "spill")}
    try:
        filesystem = pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(store.fs))
        con = open_mirror(published, workdir, "published", config, filesystem=filesystem)
        print(published.note(), file=sys.stderr)
        return QueryConnection(con, "published", Path(workdir / "published.duckdb"), bounds, workdir), "published"
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def open_for_query(db_path: Path, parquet_dir: Path, bounds: QueryBounds | None = None
                   ) -> tuple[QueryConnection, str]:
    """The connection for ad-hoc SQL (`caseforge sql`, `quality`, `status`): read-only on the warehouse,
    or, while a run holds the file (or waits for it), a read-only reader over this warehouse's own Parquet
    mirror (a note on stderr says so and how old it is). Either way sandboxed (QUERY_SANDBOX, locked):
    nothing outside the warehouse and its mirror can be read or written, nothing created, attached,
    installed or loaded; and bounded (QueryBounds: statement timeout, memory, temporary spill). A corrupt
    warehouse or one made by a newer caseforge is an error, never answered from the mirror.
    Returns the connection and "warehouse" or "parquet"."""
    bounds = bounds or QueryBounds.of()
    workdir = _query_workdir(bounds)
    config = {**QUERY_SANDBOX, **bounds.duckdb_config(workdir / "spill")}
    try:
        try:
            waiting = writer_waiting(db_path)
            if waiting:                      # a run waits for the file: do not take it from under it
                raise WarehouseBusy(f"{db_path} is busy: a run (PID {waiting.get('pid')}) is waiting to write it")
            con, mode = connect(db_path, read_only=True, config={**config, "lock_configuration": True}), "warehouse"
        except WarehouseBusy as busy:
            try:
                mirror = find_mirror(Path(db_path), Path(parquet_dir))
            except ValueError as reason:
                raise WarehouseBusy(f"{busy}; {reason}") from busy
            con, mode = open_mirror(mirror, workdir, Path(db_path).stem, config), "parquet"
            print(mirror.note(Path(db_path)), file=sys.stderr)
        return QueryConnection(con, mode, Path(db_path), bounds, workdir), mode
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise

