"""Where caseforge may write what a user names (a release folder, a replay file, a report folder).

One rule for every command that writes a file (docs/configuration.md, "Where outputs may go"):

- no output is the warehouse, its WAL, its temp folder, its "writer waiting" file, its archive of payload
  bodies, its Parquet mirror (the link and its generations) or its run folders, nor lies inside them; an output that replaces a folder as a whole must not hold them either
  (`check_output_path`);
- a folder is replaced as a whole only when it is missing, empty, or holds what caseforge itself wrote there
  (the caller recognises its own kind: a release by its release.json), through a sibling staging folder
  swapped in at the end (`prepare_folder`, `staged_folder`);
- a file is written to a temporary sibling and renamed over the old one at the end, and replaces only a
  file of its own kind (`replacing_file`);
- staging debris a killed writer left (`.NAME.<32 hex>.tmp` / `.old`), older than this process, is removed
  at the next write; a release a killed swap left aside is put back first.

Anything else is refused with OutputRefused: one line saying why, exit 2.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from caseforge.atomic import Recogniser, clear_debris, renamed_into_place, staging_name


class OutputRefused(ValueError):
    """caseforge will not write there; the message says why, in one line."""


def warehouse_files(settings) -> dict[Path, str]:
    """What belongs to the warehouse of `settings` and may never be an output: path -> what it is."""
    from caseforge.warehouse.connection import writer_waiting_path
    from caseforge.warehouse.mirror import mirror_generations

    db = Path(settings.db_path)
    return {db: "the warehouse", db.with_name(db.name + ".wal"): "the warehouse's WAL",
            db.with_name(db.name + ".tmp"): "the warehouse's temp folder",
            writer_waiting_path(db): "the warehouse's \"writer waiting\" file",
            Path(settings.archive_dir): "the warehouse's archive of payload bodies",
            Path(settings.parquet_dir): "the warehouse's Parquet mirror",
            mirror_generations(Path(settings.parquet_dir)): "the warehouse's Parquet mirror generations",
            Path(settings.runs_dir): "the warehouse's run folders"}


def _absolute(path: str | Path) -> Path:
    """`path` made absolute without following a link at its last step (`.` and `..` folded)."""
    absolute = Path(os.path.abspath(path))
    return absolute if absolute == absolute.parent else absolute.parent.resolve() / absolute.name


def check_output_path(path: str | Path, settings, what: str, *, replaced: bool = False) -> Path:
    """`path` as an absolute path, or OutputRefused when it is (or lies inside) one of the warehouse's own
    files (warehouse_files). `replaced`: the output replaces whatever is at `path` as a whole (a release
    folder, a replay file), so `path` must not hold any of them either, nor be a symbolic link (replacing
    it would replace the link, or through it a folder the user did not name)."""
    given = _absolute(path)
    if replaced and given.is_symlink():
        raise OutputRefused(f"refusing to write {what} to {path}: it is a symbolic link (to {os.readlink(given)}); "
                            "name the folder or file itself")
    resolved = given.resolve()
    for protected, name in warehouse_files(settings).items():
        own = _absolute(protected).resolve()
        if resolved == own or resolved.is_relative_to(own):
            where = "it is" if resolved == own else "it lies inside"
            raise OutputRefused(f"refusing to write {what} to {path}: {where} {name} ({own}); choose a folder of "
                                "its own")
        if replaced and own.is_relative_to(resolved):
            raise OutputRefused(f"refusing to write {what} to {path}: it holds {name} ({own}), which replacing it "
                                "would delete; choose an empty or new folder")
    return given


def check_output_folders(settings, what: str, **folders: str | Path | None) -> None:
    """check_output_path for each folder option given (None: the default, a folder of caseforge's choosing);
    `folders` are named after their options (out_dir: --out-dir)."""
    for option, folder in folders.items():
        if folder:
            check_output_path(folder, settings, f"{what} (--{option.replace('_', '-')})")


def _listing(folder: Path, limit: int = 3) -> str:
    names = sorted(p.name for p in folder.iterdir())
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def prepare_folder(folder: str | Path, recognise: Recogniser, what: str) -> Path:
    """The absolute folder `what` may be written to as a whole, after clear_debris; OutputRefused unless it is
    missing, empty, or recognised as caseforge's own (recognise returns None; else the reason it is not)."""
    final = _absolute(folder)
    if final.is_symlink():
        raise OutputRefused(f"refusing to write {what} to {folder}: it is a symbolic link (to {os.readlink(final)}); "
                            "name the folder itself")
    clear_debris(final, recognise)
    if final.exists() and not final.is_dir():
        raise OutputRefused(f"refusing to write {what} to {folder}: it exists and is not a folder")
    if final.is_dir() and any(final.iterdir()):
        reason = recognise(final)
        if reason:
            raise OutputRefused(f"refusing to write {what} to {folder}: it holds {_listing(final)} and {reason}; "
                                "caseforge replaces only an empty folder or one it wrote itself: choose an empty "
                                "or new folder")
    return final


@contextmanager
def staged_folder(final: Path) -> Iterator[Path]:
    """A staging folder beside `final` (from prepare_folder) to write into; when the block ends without an
    error, it replaces `final` as a whole (the old one moved aside, the new one moved in, the old one
    removed); on an error it is removed and `final` is left as it was."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / staging_name(final.name, "tmp")
    staging.mkdir()
    try:
        yield staging
        if final.exists():
            retired = final.parent / staging_name(final.name, "old")
            final.rename(retired)
            staging.rename(final)
            shutil.rmtree(retired)
        else:
            staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_replaceable_file(path: str | Path, recognise: Recogniser | None, what: str) -> Path:
    """The absolute file `what` may replace: missing, empty, or recognised as caseforge's own of that kind."""
    target = _absolute(path)
    if target.is_symlink():
        raise OutputRefused(f"refusing to write {what} to {path}: it is a symbolic link (to {os.readlink(target)}); "
                            "name the file itself")
    if target.exists():
        if not target.is_file():
            raise OutputRefused(f"refusing to write {what} to {path}: it exists and is not a file")
        reason = recognise(target) if recognise is not None and target.stat().st_size else None
        if reason:
            raise OutputRefused(f"refusing to write {what} to {path}: {reason}; caseforge replaces only a file it "
                                "wrote itself: choose another name")
    return target


@contextmanager
def replacing_file(path: str | Path, recognise: Recogniser | None, what: str, *, binary: bool = False) -> Iterator[IO]:
    """A handle on a temporary sibling of `path`, renamed over it when the block ends without an error
    (removed on an error, leaving `path` as it was); refused first by check_replaceable_file."""
    target = check_replaceable_file(path, recognise, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    clear_debris(target)
    with renamed_into_place(target) as partial:
        with partial.open("wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())


def write_text_atomically(path: str | Path, text: str) -> Path:
    """`text` written to a temporary sibling of `path`, then renamed over it: a reader (or a later run) sees
    the old file or the new one, never half of one."""
    with replacing_file(path, None, "a file") as out:
        out.write(text)
    return Path(path)
