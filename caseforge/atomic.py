"""Replacing a file or a link in one step, so a reader sees the old one or the new one, never half of one:
the new one is made under a temporary name beside it (`.NAME.<32 hex>.tmp`, what caseforge.outputs clears as
debris when a killed writer left it), then renamed over it. The one place caseforge renames a temporary file
into place."""
from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


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
