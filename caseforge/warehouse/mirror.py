"""The Parquet mirror beside the warehouse (`<db name>-parquet`): curated and the ops tables `status` and
`quality` read, rewritten after each run as a new generation swapped in whole, so queries answer from it while
a run holds the file; and finding the mirror that belongs to a warehouse again."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from caseforge import processes
from caseforge.atomic import link_atomically, staging_name
from caseforge.warehouse.statements import IDENTIFIER, curated_tables, database_file, run_sql, table_exists, transaction
from caseforge.warehouse.table_state import journal_states

# The ops tables the mirror carries besides curated, so `caseforge status`, `quality` and `llm stats` (and
# queries on them) answer while a run holds the file. The archive, the LLM cache (its per-step statistics and
# what each run's calls cost, the views llm_call_stats and llm_run_costs, are mirrored) and the bookkeeping of
# single stages stay out: they are large or only the pipeline reads them.
MIRRORED_OPS_TABLES = ("runs", "nightly_stages", "quality_results", "quarantine", "input_fingerprints",
                       "llm_call_stats", "llm_run_costs")
MIRROR_MANIFEST = "MIRROR.json"


# How the mirror is laid out (docs/configuration.md, "The Parquet mirror"): `<db>-parquet` is a link to
# one generation folder `<db>-parquet.d/NNNNNNNN/` holding MIRROR.json and every table's files, so a reader that
# resolves the link once reads one consistent write; a write builds the next generation under a `.….tmp` name
# and swaps the link. A table whose rows carry a stamp that every write sets (MIRROR_STAMP_COLUMN, or an
# append-only ops table's time) is a folder `<table>.parquet/` of parts by stamp range: a run writes the parts
# whose rows changed and a part for its new rows; every other table is one file, written when its content hash
# changed. Files left unchanged are hard links to the previous generation's. A curated table whose state
# (caseforge.warehouse.table_state: the write journal, its columns, DuckDB's storage facts) is the one recorded with
# the previous generation is not read at all: its files are linked as they are.
MIRROR_STAMP_COLUMN = "updated_at"
APPEND_ONLY_STAMPS = {"ops.quality_results": "validated_at", "ops.quarantine": "quarantined_at"}
MIRROR_MAX_PARTS = 16
_STAMP_LOW, _STAMP_HIGH = -(2 ** 62), 2 ** 62      # epoch-µs bounds of the first and the newest part
_MIRROR_LOCK = threading.Lock()                     # parallel sources of one process mirror one at a time


def mirror_generations(parquet_dir: Path) -> Path:
    """The folder of the mirror's generations, beside the link `parquet_dir` that names the current one."""
    return parquet_dir.with_name(parquet_dir.name + ".d")


def remove_mirror_debris(parquet_dir: Path) -> list[Path]:
    """Remove what a mirror write killed midway left (every staging name starts with '.' and ends with '.tmp')
    that is older than this process, so never the staging of a write still running; returns what went."""
    found = [*mirror_generations(parquet_dir).glob(".*.tmp"), *parquet_dir.parent.glob(f".{parquet_dir.name}.*.tmp")]
    started = processes.started_at()
    removed = []
    for path in found:
        try:
            if path.lstat().st_mtime >= started:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


class _MirrorWrite:
    """One write of the mirror: the next generation, staged in `staging`, reusing `previous` where it can."""

    def __init__(self, con: duckdb.DuckDBPyConnection, staging: Path, number: int,
                 previous: dict | None, previous_folder: Path | None):
        self.con, self.staging, self.number = con, staging, number
        self.previous = (previous or {}).get("tables", {}) if isinstance((previous or {}).get("tables"), dict) else {}
        self.previous_folder = previous_folder
        self.written = 0
        self.columns: dict[str, list] = {}
        for schema, table, column, kind in run_sql(con, "ops/table_columns.sql").fetchall():
            self.columns.setdefault(f"{schema}.{table}", []).append([column, kind])
        self.keys = {f"{schema}.{table}": tuple(columns)
                     for schema, table, columns in run_sql(con, "ops/primary_keys.sql").fetchall()}
        self.states = journal_states(con, [f"curated.{t}" for t in curated_tables(con)])

    def table(self, name: str) -> dict:
        schema, _, table = name.partition(".")
        relative = f"{table}.parquet" if schema == "curated" else f"{schema}/{table}.parquet"
        (self.staging / relative).parent.mkdir(parents=True, exist_ok=True)
        columns = hashlib.sha256(json.dumps(self.columns.get(name, [])).encode()).hexdigest()[:16]
        stamp = APPEND_ONLY_STAMPS.get(name) or (
            MIRROR_STAMP_COLUMN if any(c == MIRROR_STAMP_COLUMN for c, _ in self.columns.get(name, [])) else None)
        old = self.previous.get(name) or {}
        if old.get("columns") != columns or old.get("stamp") != stamp:
            old = {}
        state = self.states.get(name)                   # a curated table: what the write journal says of it
        if state is not None and old.get("state") == state and all(self._keep(p) for p in old.get("parts", [])):
            return {**old, "state": state}               # unchanged since the last generation: no row read
        if stamp is None:
            parts = self._whole(name, relative, old.get("parts", []))
        else:
            parts = self._parts(name, relative, stamp, old.get("parts", []))
        return {"columns": columns, "stamp": stamp, "parts": parts, **({"state": state} if state else {})}

    def _keep(self, part: dict) -> bool:
        """Hard-link a part of the previous generation into this one (a copy where links fail)."""
        source = (self.previous_folder / part["file"]) if self.previous_folder else None
        if source is None or not source.is_file():
            return False
        target = self.staging / part["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        return True

    def _whole(self, name: str, relative: str, old_parts: list[dict]) -> list[dict]:
        rows, content = run_sql(self.con, "ops/table_fingerprint.sql", identifiers={"table": name}).fetchone()
        part = {"file": relative, "rows": int(rows), "hash": str(content)}
        if len(old_parts) == 1 and {k: old_parts[0].get(k) for k in part} == part and self._keep(part):
            return [part]
        run_sql(self.con, "ops/mirror_table_to_parquet.sql", {"path": (self.staging / relative).as_posix()},
                identifiers={"table": name})
        self.written += 1
        return [part]

    def _parts(self, name: str, relative: str, stamp: str, old_parts: list[dict]) -> list[dict]:
        key = self.keys.get(name) or (stamp,)
        uppers = [int(p["upper"]) for p in old_parts]
        found = {int(part): (int(rows), int(newest), str(content)) for part, rows, newest, content in run_sql(
            self.con, "ops/mirror_part_fingerprints.sql",
            {"lowers": [_STAMP_LOW, *uppers], "uppers": [*uppers, _STAMP_HIGH]},
            identifiers={"table": name, "stamp": stamp, "key": key}).fetchall()}
        if not found and len(old_parts) == 1 and old_parts[0]["rows"] == 0 and self._keep(old_parts[0]):
            return old_parts                    # empty before and now: its empty part stands
        parts, lower = [], _STAMP_LOW
        for index, old in enumerate(old_parts):
            rows, _, content = found.get(index, (0, 0, "0"))
            if rows:
                part = {"file": old["file"], "upper": old["upper"], "rows": rows, "hash": content}
                if (old.get("rows"), old.get("hash")) != (rows, content) or not self._keep(part):
                    part["file"] = self._write_part(name, relative, stamp, lower, int(old["upper"]), len(parts))
                parts.append(part)
            lower = int(old["upper"])           # an emptied part's range joins the next part's: it holds no rows
        rows, newest, content = found.get(len(old_parts), (0, 0, "0"))
        if rows:
            parts.append({"file": self._write_part(name, relative, stamp, lower, newest, len(parts)),
                          "upper": newest, "rows": rows, "hash": content})
        while len(parts) > MIRROR_MAX_PARTS:
            parts = self._merge_smallest(name, relative, stamp, parts)
        if not parts:                           # no rows: one empty part, so the table and its columns are there
            parts = [{"file": self._write_part(name, relative, stamp, _STAMP_LOW, _STAMP_LOW, 0),
                      "upper": _STAMP_LOW, "rows": 0, "hash": "0"}]
        return parts

    def _merge_smallest(self, name: str, relative: str, stamp: str, parts: list[dict]) -> list[dict]:
        i = min(range(len(parts) - 1), key=lambda j: parts[j]["rows"] + parts[j + 1]["rows"])
        lower = int(parts[i - 1]["upper"]) if i else _STAMP_LOW
        merged = {"upper": parts[i + 1]["upper"], "rows": parts[i]["rows"] + parts[i + 1]["rows"],
                  "hash": str(int(parts[i]["hash"]) + int(parts[i + 1]["hash"]))}
        for gone in (parts[i], parts[i + 1]):
            (self.staging / gone["file"]).unlink(missing_ok=True)
        merged["file"] = self._write_part(name, relative, stamp, lower, int(merged["upper"]), i)
        return [*parts[:i], merged, *parts[i + 2:]]

    def _write_part(self, name: str, relative: str, stamp: str, lower: int, upper: int, index: int) -> str:
        file = f"{relative}/{self.number:08d}-{index:03d}.parquet"
        while (self.staging / file).exists():
            index += 1000
            file = f"{relative}/{self.number:08d}-{index:03d}.parquet"
        (self.staging / file).parent.mkdir(parents=True, exist_ok=True)
        run_sql(self.con, "ops/mirror_part_to_parquet.sql",
                {"path": (self.staging / file).as_posix(), "lower": lower, "upper": upper},
                identifiers={"table": name, "stamp": stamp})
        self.written += 1
        return file


def _current_generation(parquet_dir: Path) -> tuple[Path, dict] | None:
    """The generation folder the mirror link names and its manifest, if it has one of its own."""
    if not parquet_dir.is_symlink():
        return None
    folder = parquet_dir.resolve()
    try:
        return folder, json.loads((folder / MIRROR_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _swap_link(parquet_dir: Path, generation: Path) -> None:
    """Point `parquet_dir` at `generation` in one rename. A mirror of before generations (a plain folder) is
    moved aside first, once: for that instant there is no mirror, never a mixed one."""
    relative = os.path.relpath(generation, parquet_dir.parent)
    if parquet_dir.is_dir() and not parquet_dir.is_symlink():
        aside = parquet_dir.with_name(staging_name(parquet_dir.name))
        parquet_dir.rename(aside)
        link_atomically(parquet_dir, relative)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        link_atomically(parquet_dir, relative)


def export_curated_parquet(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Mirror every curated table (and nothing else of curated) and the ops tables in MIRRORED_OPS_TABLES to
    Parquet as the next generation of the mirror at `out_dir`, swapped in whole (a reader sees the previous
    generation or this one, never a mix), with a manifest naming the database it was written from and when
    (open_for_query reads only a mirror of its own database). Only what changed is written: see the layout
    above. All tables are read in one transaction, so they show one moment of the warehouse; DuckDB streams
    each COPY to its file. Returns the curated tables' paths under `out_dir`."""
    out_dir = Path(out_dir)
    with _MIRROR_LOCK:
        generations = mirror_generations(out_dir)
        generations.mkdir(parents=True, exist_ok=True)
        remove_mirror_debris(out_dir)
        database = database_file(con)
        database = str(database.resolve()) if database else None
        current = _current_generation(out_dir)
        if current is not None and current[1].get("database") != database:
            current = None                      # another warehouse's mirror: nothing of it is reused
        number = 1 + max((int(p.name) for p in generations.iterdir() if p.name.isdigit()), default=0)
        staging = generations / f".{number:08d}.{os.getpid()}.{threading.get_ident()}.tmp"
        staging.mkdir()
        write = _MirrorWrite(con, staging, number, current[1] if current else None, current[0] if current else None)
        tables = {}
        with transaction(con):
            curated = [f"curated.{t}" for t in curated_tables(con)]
            ops = [f"ops.{t}" for t in MIRRORED_OPS_TABLES if table_exists(con, f"ops.{t}")]
            for name in curated + ops:
                tables[name] = write.table(name)
        manifest = {"database": database, "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "generation": number, "previous": current[0].name if current else None,
                    "files_written": write.written, "tables": tables}
        (staging / MIRROR_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        final = generations / f"{number:08d}"
        staging.rename(final)
        _swap_link(out_dir, final)
        keep = {final.name, current[0].name if current else None}
        for old in generations.iterdir():       # the previous generation stays for readers that resolved it
            if old.name.isdigit() and old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
    return [out_dir / tables[name]["parts"][0]["file"].split("/")[0] for name in curated]


@dataclass(frozen=True)
class Mirror:
    """A Parquet mirror that belongs to the warehouse being queried: one generation of it."""

    folder: Path
    written_at: datetime
    files: dict[str, tuple[Path, ...]]          # schema.table -> its files (one, or the parts of a folder)

    def age(self, now: datetime | None = None) -> str:
        seconds = max(0, int(((now or datetime.now(timezone.utc)) - self.written_at).total_seconds()))
        if seconds < 120:
            return f"{seconds} s"
        if seconds < 2 * 3600:
            return f"{seconds // 60} min"
        if seconds < 2 * 86400:
            return f"{seconds // 3600} h {seconds % 3600 // 60} min"
        return f"{seconds // 86400} days"

    def note(self, db_path: Path) -> str:
        return (f"note: {db_path} is held by another process (a run is writing it); answering from its Parquet "
                f"mirror {self.folder}, written {self.written_at:%Y-%m-%d %H:%M:%S} UTC ({self.age()} ago), "
                f"which has curated.* and {', '.join(t for t in self.files if not t.startswith('curated.'))}")


def _manifest_files(folder: Path, tables) -> dict[str, list[Path]]:
    if isinstance(tables, list):                # a mirror written before generations: one file per table
        return {name: [folder / (f"{name.partition('.')[2]}.parquet" if name.startswith("curated.")
                                 else f"{name.partition('.')[0]}/{name.partition('.')[2]}.parquet")]
                for name in tables if isinstance(name, str)}
    return {name: [folder / part["file"] for part in entry.get("parts", [])] for name, entry in tables.items()}


def find_mirror(db_path: Path, parquet_dir: Path) -> Mirror:
    """The mirror of `db_path` in `parquet_dir`: the generation its link names, resolved once, so every file
    read belongs to one write. WarehouseBusy-worthy reason (ValueError) when there is none, when it was
    written from another database, or when it predates the manifest."""
    folder = Path(parquet_dir).resolve()
    manifest_path = folder / MIRROR_MANIFEST
    if not manifest_path.exists():
        raise ValueError(f"no Parquet mirror of it at {parquet_dir}" if not any(folder.glob("*.parquet"))
                         else f"{parquet_dir} has no {MIRROR_MANIFEST} saying which database it mirrors")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    own = str(Path(db_path).resolve())
    if manifest.get("database") != own:
        raise ValueError(f"the Parquet mirror at {parquet_dir} belongs to {manifest.get('database')}, not {own}")
    files = {}
    for name, paths in _manifest_files(folder, manifest.get("tables", [])).items():
        schema = name.partition(".")[0]
        if IDENTIFIER.match(name) and schema in ("curated", "ops") and paths and all(p.is_file() for p in paths):
            files[name] = tuple(paths)
    return Mirror(Path(parquet_dir), datetime.fromisoformat(manifest["written_at"]), files)

