"""What a known bad record costs (issue 36): 4,000 synthetic Chinese judgments made from the samples
(bench/scale.py's cn_corpus) in two dump files, one judgment in the second with a case number of 1937 (its
case_year outside the gate's range, 1949-2100); the first ingest, then the same ingest again with nothing
changed, each in a fresh process (bench/scale.py's step: the work alone, after imports and the
great-expectations context).

    .venv/bin/python bench/known_problems.py [--docs 4000] [--work DIR] [--keep]

Printed: CPU seconds of each, the ratio (target: the same ingest again ≤ 10% of the first), the run's status and
the exit status `caseforge ingest cn` gives it (1 for quarantined), what it parsed (payloads_parsed) and the rows
it added to ops.quarantine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import scale

TARGET_AGAIN = 0.10
EXIT_STATUS = {"succeeded": 0, "quarantined": 1, "failed": 1}


def corpus(samples: Path, folder: Path, docs: int) -> str:
    """Two dump files of docs / 2 judgments; in the second, the first judgment from its 100th on whose case
    number can be put in 1937 (as the parser reads it) is. Returns its doc id."""
    from caseforge.tasks.cn.casenumber import CASE_NO
    from caseforge.tasks.cn.records import parse_record, record_from_dict

    scale.CN_PER_FILE = (docs + 1) // 2
    scale.cn_corpus(samples, folder, 0, docs)
    second = sorted(folder.glob("*.jsonl"))[1]
    lines = second.read_text(encoding="utf-8").splitlines()
    for n in range(99, len(lines)):
        record = json.loads(lines[n])
        match = CASE_NO.search(record["full_text"])
        if not match:
            continue
        text = record["full_text"][:match.start(1)] + "1937" + record["full_text"][match.end(1):]
        if parse_record(record_from_dict({**record, "full_text": text}))["case_year"] != 1937:
            continue
        lines[n] = json.dumps({**record, "full_text": text}, ensure_ascii=False)
        second.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return record["doc_id"]
    raise SystemExit(f"bench: no judgment in {second.name} has a case number to put out of range")


def quarantine_rows(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM ops.quarantine").fetchone()[0]
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--quick", action="store_true", help="400 judgments (CI checks that the bench still runs)")
    args = parser.parse_args()
    if args.quick:
        args.docs = 400
    samples = scale.samples_dir()
    if not samples.is_dir():
        raise SystemExit(f"bench: no samples at {samples} (set CASEFORGE_SAMPLES)")
    work = args.work or Path(tempfile.mkdtemp(prefix="caseforge-known-"))
    os.environ.setdefault("CASEFORGE_PROGRESS", "plain")
    try:
        folder, db = work / "dumps", work / "cn.duckdb"
        bad = corpus(samples, folder, args.docs)
        rows, before = [], 0
        for step in ("first", "again"):
            result = scale.step_in_child("cn", db, folder)
            after = quarantine_rows(db)
            rows.append({"step": step, **result, "quarantine_added": after - before})
            before = after
        print(f"bench/known_problems.py: {args.docs:,} judgments in 2 dump files, one ({bad}) with case_year 1937")
        print()
        print("| step | CPU s | wall s | status | exit status | payloads parsed | payloads unchanged | quarantined |"
              " known problems | ops.quarantine rows added |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            c = r["counts"]
            print(f"| {r['step']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['status']} | "
                  f"{EXIT_STATUS.get(r['status'], 1)} | {c.get('payloads_parsed', 'n/a')} | "
                  f"{c.get('payloads_unchanged', 0)} | {c.get('quarantined', 0)} | {c.get('known_problems', 0)} | "
                  f"{r['quarantine_added']} |")
        ratio = rows[1]["cpu_s"] / rows[0]["cpu_s"]
        print()
        print(f"again / first CPU: {ratio:.1%} (target ≤ {TARGET_AGAIN:.0%}: {'met' if ratio <= TARGET_AGAIN else 'MISSED'})")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
