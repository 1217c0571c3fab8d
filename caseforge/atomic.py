"""Replacing a file or a link in one step, so a reader sees the old one or the new one, never half of one:
the new one is made under a temporary name beside it (`.NAME.<32 hex>.tmp`), then renamed over it. The one place
caseforge renames a temporary file into place, and the one that clears what a killed writer left (`clear_debris`,
and for a process's own temporary folders, `process_folder`)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from caseforge import processes

# a callable that says why `path` is not caseforge's own output of the kind being written (None: it is)
Recogniser = Callable[[Path], "str | None"]


def staging_name(name: str, kind: str = "tmp") -> str:
    """`.NAME.<32 hex>.<kind>`: a name of its own beside NAME for a file or folder being made (tmp) or one moved
    aside (old)."""
    return f".{name}.{uuid.uuid4().hex}.{kind}"


@contextmanager
def renamed_into_place(path: str | Path, *, keep_existing: bool = False) -> Iterator[Path]:
    """A temporary sibling of `path` to make the new file or link at; renamed over `path` when the block ends
    without an error, removed otherwise (leaving `path` as it was). `keep_existing`: a file that is at `path` by
    then is kept and the new one dropped (two processes making the same new file: the first one stays)."""
    target = Path(path)
    partial = target.parent / staging_name(target.name)
    try:
        yield partial
        if keep_existing:
            try:
                os.link(partial, target)
            except FileExistsError:
                pass
            partial.unlink()
        else:
            os.replace(partial, target)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(target)          # a write() that failed names no file: a full disk is named by it
        raise


def write_atomically(path: str | Path, data: bytes | str, *, durable: bool = False) -> Path:
    """`data` (text is written as UTF-8) as the new content of `path`. `durable`: on disk (fsync) before it
    replaces the old content."""
    with renamed_into_place(path) as partial:
        with partial.open("wb") as out:
            out.write(data.encode() if isinstance(data, str) else data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
    return Path(path)


def link_atomically(path: str | Path, target: str | Path, *, folder: bool = False) -> None:
    """`path` made a symbolic link to `target` (relative to the link's folder unless absolute)."""
    with renamed_into_place(path) as partial:
        partial.symlink_to(target, target_is_directory=folder)


def _debris_pattern(name: str) -> re.Pattern:
    # a staging file or folder, or a side file a program made beside a staging file (DuckDB's WAL)
    return re.compile(rf"^\.{re.escape(name)}\.[0-9a-f]{{32}}\.(tmp|old)(\.wal)?$")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clear_debris(final: Path, recognise: Recogniser | None = None) -> list[Path]:
    """Remove the staging debris of `final` (in its folder) older than this process; when `final` is missing
    and a killed swap left the previous one aside (`.old`, recognised as ours), put that back first.
    Returns what was removed."""
    folder = final.parent
    if not folder.is_dir():
        return []
    pattern = _debris_pattern(final.name)
    started = processes.started_at()
    debris = []
    for entry in folder.iterdir():
        try:
            if pattern.match(entry.name) and entry.lstat().st_mtime < started:
                debris.append(entry)
        except FileNotFoundError:
            continue                         # another writer's clean-up got there first
    aside = sorted((p for p in debris if p.name.endswith(".old") and p.is_dir()), key=lambda p: p.stat().st_mtime)
    if aside and not os.path.lexists(final) and recognise is not None and recognise(aside[-1]) is None:
        aside[-1].rename(final)
        debris.remove(aside[-1])
    for entry in debris:
        _remove(entry)
    return debris


def clear_orphaned_folders(root: Path, prefix: str) -> None:
    """Remove the folders `<prefix><pid>-*` in `root` whose process runs no more (a killed one left them)."""
    for folder in root.glob(f"{glob.escape(prefix)}*-*"):
        pid = folder.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and processes.alive(int(pid)) is False:
            shutil.rmtree(folder, ignore_errors=True)


def new_process_folder(prefix: str, root: Path | None = None) -> Path:
    """A new temporary folder `<prefix><this pid>-<random>` in `root` (the system's temporary folder by
    default), after removing those of `prefix` that processes now gone left. Removing it is the caller's."""
    root = Path(root) if root is not None else Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    clear_orphaned_folders(root, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


@contextmanager
def process_folder(prefix: str, root: Path | None = None) -> Iterator[Path]:
    """new_process_folder for the length of a block, removed when it ends."""
    folder = new_process_folder(prefix, root)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
