"""What archiving one judgment body costs as the archive grows: RawArchive.store (a row in ops.raw_payloads, the
body a file in the warehouse's <db>-archive/ folder) of distinct HUDOC-sized bodies into a fresh warehouse, batch
after batch, in one run.

    .venv/bin/python bench/archive_store.py [--batches 5] [--batch-size 300] [--quick]

Per batch: CPU milliseconds per new body, per body stored again unchanged (the no-op path), and the database
file against the bytes archived. The last line is the ratio of the last batch's cost per new body to the first's:
about 1 when a store costs the same whatever the archive holds. Bodies are Malyy's HTML (164 KB) with a counter
appended, from CASEFORGE_SAMPLES. --quick: 3 batches of 40 (CI checks that the bench still runs).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from caseforge.archive import RawArchive
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="3 batches of 40 bodies")
    args = parser.parse_args()
    if args.quick:
        args.batches, args.batch_size = 3, 40
    body = (load_settings().samples_dir / "hudoc" / "html" / "001-192223.html").read_bytes()
    per_new = []
    with tempfile.TemporaryDirectory(prefix="cf-archive-") as tmp:
        path = Path(tmp) / "bench.duckdb"
        con = connect(path)
        archive = RawArchive(con)
        stored = 0
        print(f"{'bodies held':>11} {'new: CPU ms/body':>17} {'unchanged: CPU ms/body':>23} {'db MB':>7} {'archived MB':>12}")
        for _ in range(args.batches):
            first = stored
            started = time.process_time()
            for number in range(first, first + args.batch_size):
                archive.store("hudoc", f"html/001-{number}", body + str(number).encode())
            new_ms = 1000 * (time.process_time() - started) / args.batch_size
            stored += args.batch_size
            started = time.process_time()
            for number in range(first, first + args.batch_size):
                archive.store("hudoc", f"html/001-{number}", body + str(number).encode())
            again_ms = 1000 * (time.process_time() - started) / args.batch_size
            per_new.append(new_ms)
            print(f"{stored:>11,} {new_ms:>17.2f} {again_ms:>23.2f} {path.stat().st_size / 2**20:>7.0f} "
                  f"{stored * len(body) / 2**20:>12.0f}")
        con.close()
    print(f"cost per new body, last batch / first batch: {per_new[-1] / per_new[0]:.2f}x")


if __name__ == "__main__":
    main()
