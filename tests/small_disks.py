"""Small disks for the disk-full tests (issue 43, item 3): a command run in a private user and mount namespace
(`unshare`) where chosen folders are tmpfs mounts of a given size, so the command meets a real full disk
(ENOSPC) and nothing outside it fills up; a filler file that leaves a chosen number of bytes free; and digests of
what a warehouse holds and what a release or the mirror shows, to compare a night that met a full disk (and the
night after it) with an undisturbed one."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

FILLER = ".disk-filler"
# columns that differ between two runs of the same data: when and by which run a row was written
VOLATILE = ("run_id", "_at", "ops_run")


def namespaces_refused(probe_folder: Path) -> str | None:
    """Why a tmpfs cannot be mounted in a user namespace here (None: it can)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no `unshare` here to mount a small tmpfs in a private namespace"
    probe_folder.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "-o", "size=1m",
                            "tmpfs", str(probe_folder)], capture_output=True, text=True, timeout=30)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs in a user namespace here: {probe.stderr.strip()}"


def in_small_disks(mounts: list[tuple[Path, str]], argv: list[str], env: dict | None = None,
                   timeout: float = 1200) -> subprocess.CompletedProcess:
    """`argv` in a private user and mount namespace where each (folder, size) of `mounts` is a tmpfs of that size
    ("8m"), mounted in order (a folder may lie inside an earlier mount)."""
    script = "".join(f'mkdir -p "{folder}" && mount -t tmpfs -o size={size} tmpfs "{folder}" && '
                     for folder, size in mounts) + 'exec "$@"'
    for folder, _ in mounts:
        folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run([shutil.which("unshare"), "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
                           *argv], env=env, capture_output=True, text=True, timeout=timeout)


def free_bytes(folder: Path) -> int:
    found = os.statvfs(folder)
    return found.f_bavail * found.f_frsize


def fill(folder: Path, leave: int = 0) -> int:
    """A filler file in `folder` taking all its filesystem's free space but `leave` bytes; returns its size."""
    size = max(0, free_bytes(folder) - leave)
    with (folder / FILLER).open("wb") as out:
        chunk = b"\0" * (1 << 20)
        left = size
        try:
            while left > 0:
                left -= out.write(chunk[:min(left, len(chunk))])
        except OSError:           # the filesystem's own bookkeeping took a little: full is full
            pass
    return size


def unfill(folder: Path) -> None:
    (folder / FILLER).unlink(missing_ok=True)


def table_digests(db: Path, schemas: tuple[str, ...] = ("curated",)) -> dict[str, list]:
    """Each table of `schemas` → [rows, an order-independent hash of its rows without the VOLATILE columns]."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN "
                             f"({', '.join('?' for _ in schemas)}) ORDER BY 1, 2", list(schemas)).fetchall()
        found = {}
        for schema, table in tables:
            columns = [(name, kind) for name, kind in con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? "
                "ORDER BY column_index", [schema, table]).fetchall()
                if not any(mark in name for mark in VOLATILE) and "TIMESTAMP" not in kind]
            # a JSON value may carry the run that wrote it (eval.item_outputs' `ops_run_id`): left out too
            listed = ", ".join(f"""regexp_replace("{c}"::VARCHAR, '"[a-z_]*run_id": *[0-9]+,? *', '', 'g')"""
                               if kind == "JSON" else f'"{c}"' for c, kind in columns)
            rows, digest = con.execute(f'SELECT count(*), coalesce(sum(hash({listed})::HUGEINT), 0)::VARCHAR '
                                       f'FROM "{schema}"."{table}"').fetchone()
            found[f"{schema}.{table}"] = [rows, digest]
        return found
    finally:
        con.close()


def files_digest(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Each file under `folder` (links followed) → its sha256; names containing one of `skip` left out."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not any(s in p.name for s in skip)}


def main() -> None:
    """`python tests/small_disks.py fill FOLDER LEAVE` / `unfill FOLDER` (for shell steps inside a namespace)."""
    command, folder = sys.argv[1], Path(sys.argv[2])
    if command == "fill":
        print(json.dumps({"filled": fill(folder, int(sys.argv[3]))}))
    else:
        unfill(folder)


if __name__ == "__main__":
    main()
