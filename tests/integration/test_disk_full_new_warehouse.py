"""A disk that fills while a new warehouse is being made leaves no file that cannot be opened (issue 43, item 3).
DuckDB, meeting a full disk as it creates a database, leaves an empty or part-written file behind, and no later open
succeeds ("not a valid DuckDB database file"): the first night on a disk that filled early could never be followed
by another (found by bench/disk_full_nightly.py with the disk filled 1.3 s into the night). On a real full disk (a
small tmpfs in a private namespace, tests/small_disks.py), at several amounts of space left: the open fails as a full
disk, nothing is left at the warehouse's path, and once the space is freed the warehouse opens and is migrated."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from small_disks import in_small_disks, namespaces_refused

pytestmark = [pytest.mark.timeout(300)]

DRIVER = r'''
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from small_disks import fill, unfill
from caseforge.disk_full import disk_full_line, disk_full_of
from caseforge.warehouse.connection import connect

disk = Path(sys.argv[1])
seen = []
for leave in (0, 4096, 64 * 1024, 256 * 1024):
    db = disk / f"left-{leave}" / "cf.duckdb"
    db.parent.mkdir()
    fill(disk, leave)
    try:
        connect(db).close()
        failed = None
    except Exception as exc:
        failed = {"type": type(exc).__name__, "disk_full": disk_full_of(exc) is not None, "text": str(exc)[:300],
                  "line": disk_full_line(exc, "ingest oyez", near=db)}
    left = sorted(p.name for p in db.parent.iterdir())
    unfill(disk)
    try:
        with connect(db) as con:
            migrations = con.execute("SELECT count(*) FROM ops.migrations").fetchone()[0]
        opens = "yes"
    except Exception as exc:
        opens, migrations = f"{type(exc).__name__}: {exc}"[:300], 0
    seen.append({"leave": leave, "failed": failed, "left": left, "opens": opens, "migrations": migrations})
print(json.dumps(seen))
'''


def test_a_full_disk_while_a_warehouse_is_made_leaves_nothing_that_cannot_open(tmp_path):
    refused = namespaces_refused(tmp_path / "probe")
    if refused:
        pytest.skip(refused)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    disk = tmp_path / "disk"
    done = in_small_disks([(disk, "16m")], [sys.executable, str(driver), str(disk),
                                             str(Path(__file__).resolve().parents[1])], timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    full = [point for point in seen if point["failed"] is not None]
    assert full, seen                                   # the small amounts left are too little for a new warehouse
    for point in full:
        assert point["failed"]["disk_full"], point      # told as a full disk, of the warehouse
        assert point["failed"]["line"].startswith(f"ingest oyez: the disk is full (no space left on {tmp_path}/disk"), point
        assert "writing the warehouse (" in point["failed"]["line"], point
        assert "cf.duckdb" not in point["left"] and "cf.duckdb.wal" not in point["left"], point
    for point in seen:
        assert point["opens"] == "yes" and point["migrations"] > 0, point
