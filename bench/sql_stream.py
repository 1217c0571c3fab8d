"""What a large answer costs `caseforge sql`: peak resident memory of the command (a fresh process, as a user runs
it) answering with 5,000,000 rows against the same query with 50,000, as csv and as json, in one run, and the
ratio (target: within 1.2x; before, the whole answer was held as Python rows, about 1.5 GB at 5 million).

    .venv/bin/python bench/sql_stream.py [--small 50000] [--large 5000000] [--formats csv,json] [--quick]

Each command writes its answer to /dev/null; the peak is the child's own (wait4's ru_maxrss), also its wall and
CPU seconds. The warehouse is an empty one (the rows come from DuckDB's range()), so only the answer's size
varies. --quick: 5,000 against 200,000 rows (CI checks that the bench still runs)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from caseforge.warehouse.connection import connect

QUERY = ("SELECT range AS id, 'row ' || range AS name, range * 0.5 AS score, "
         "DATE '2020-01-01' + (range % 1000)::INT AS day FROM range({rows})")


def run_sql(db: Path, rows: int, fmt: str) -> tuple[float, float, float]:
    """(peak RSS MB, wall s, CPU s) of `caseforge sql QUERY --format FMT` answering `rows` rows."""
    argv = [sys.executable, "-m", "caseforge", "sql", QUERY.format(rows=rows), "--format", fmt, "--timeout", "0",
            "--db", str(db)]
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"caseforge sql failed: {process.stderr.read().decode()[-2000:]}")
    process.stderr.close()
    return usage.ru_maxrss / 1024, wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=50_000)
    parser.add_argument("--large", type=int, default=5_000_000)
    parser.add_argument("--formats", default="csv,json")
    parser.add_argument("--quick", action="store_true", help="5,000 against 200,000 rows")
    args = parser.parse_args()
    if args.quick:
        args.small, args.large = 5_000, 200_000
    with tempfile.TemporaryDirectory(prefix="cf-sql-stream-") as tmp:
        db = Path(tmp) / "bench.duckdb"
        connect(db).close()
        print("| format | rows | peak RSS MB | wall s | CPU s |")
        print("| --- | --- | --- | --- | --- |")
        ratios = {}
        for fmt in args.formats.split(","):
            peaks = []
            for rows in (args.small, args.large):
                peak, wall, cpu = run_sql(db, rows, fmt)
                peaks.append(peak)
                print(f"| {fmt} | {rows:,} | {peak:.0f} | {wall:.1f} | {cpu:.1f} |", flush=True)
            ratios[fmt] = peaks[1] / peaks[0]
    for fmt, ratio in ratios.items():
        print(f"{fmt}: peak RSS at {args.large:,} rows / at {args.small:,} rows: {ratio:.2f}x (target <= 1.20x)")


if __name__ == "__main__":
    main()
