"""Hold a warehouse from another process, the way a running `caseforge` run does (DuckDB lets one
process open the file; every other one is refused, even read-only)."""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def held_by_another_process(db: Path) -> Iterator[subprocess.Popen]:
    code = ("import sys; from caseforge.warehouse.connection import connect;"
            f"con = connect({str(db)!r}); print('ready', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().strip()
        assert line == "ready", f"the holder did not open {db}"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
