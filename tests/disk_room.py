"""Room on the disk before the whole suite starts (`make test`: --require-free-disk GB): the suite's temporary files
reach about 4 GB (3,874 MiB, 4.06 GB: a fresh-clone run of `make test` on 2026-11-29, `du -sm` of pytest's temporary
folder every 20 s). With less free, tests fail at random, by the hundreds, once the disk fills (as the CI run of
48e2e81 most likely did: its log ends mid-line at 78%); one line at the start says why instead."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from small_disks import free_bytes

GB = 1_000_000_000


def temporary_root(basetemp: str | None) -> Path:
    """The folder whose disk holds the suite's temporary files: --basetemp's, else pytest's own root for them."""
    if basetemp:
        return Path(basetemp).resolve()
    return Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())


def shortfall(folder: Path, need_gb: float) -> str | None:
    """One line when `folder`'s disk (the nearest existing folder above it) has less than `need_gb` GB free."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free = free_bytes(existing)
    if free >= need_gb * GB:
        return None
    return (f"not enough disk for the test suite: {free / GB:.2f} GB free at {existing}, the suite's temporary files "
            f"need about {need_gb:g} GB (--require-free-disk); free some space, or point --basetemp elsewhere")
