"""What a night costs at scale: first ingest, a no-op re-run and a 1% increment, per source, on synthetic
corpora made from the real samples (new ids, every document's text made its own), in one run.

    .venv/bin/python bench/scale.py [--quick] [--oyez N] [--hudoc N] [--cn N] [--sources oyez,hudoc,cn]
                                    [--increment 0.01] [--work DIR] [--keep]

Default sizes are the real ones (3,300 SCOTUS cases, 25,000 HUDOC English judgments, 50,000 Chinese judgments);
`--quick` is a CI-sized run (seconds). For each source:

- first      the corpus folder into an empty warehouse
- no-op      the same folder again into that warehouse (nothing new)
- inc→full   a folder of 1% new documents into the full warehouse
- inc→empty  the same 1% into an empty warehouse

Each step is `caseforge.tasks.<source>.ingest.refresh(settings, from_dir=...)` (the work of
`caseforge ingest SOURCE --from-dir`: archive, parse, gate, curate, the post-steps and the Parquet mirror,
without Prefect), in a fresh process per step (`--quick`: all in this process). CPU seconds are the step's own
(user + system, all threads), after imports and the great-expectations context (start-up is
bench/command_overhead.py's). Peak RSS is the process's high-water mark during the step (reset before it,
/proc/self/clear_refs), imports included. Printed: a table per step (CPU s, wall s, peak RSS, database and
mirror size, documents per CPU-second) and the ratios the targets are about: no-op / first (target ≤ 10%),
inc→full / inc→empty CPU (target ≤ 1.3×) and peak RSS (memory independent of the stored document count).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REAL_SIZES = {"oyez": 3300, "hudoc": 25000, "cn": 50000}
QUICK_SIZES = {"oyez": 20, "hudoc": 2, "cn": 50}
STEPS = ("first", "no-op", "inc→full", "inc→empty")
TARGET_NOOP = 0.10
TARGET_INCREMENT = 1.3
CN_PER_FILE = 1000
HUDOC_PER_PAGE = 500


def samples_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(default)))


# ---- synthetic corpora ------------------------------------------------------------------------------------

def oyez_corpus(samples: Path, folder: Path, first: int, count: int) -> None:
    """Case-detail files: the real ones in turn, each with its own id, docket and name."""
    sources = sorted((samples / "oyez" / "cases").glob("*.json"))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        data = json.loads(sources[i % len(sources)].read_text(encoding="utf-8"))
        term = str(data.get("term") or 2000)
        docket = f"syn-{i}"
        data.update(ID=9_000_000 + i, docket_number=docket, href=f"https://api.oyez.org/cases/{term}/{docket}",
                    name=f"{data.get('name') or 'Case'} (synthetic {i})")
        for field in ("facts_of_the_case", "question", "conclusion"):
            if isinstance(data.get(field), str):
                data[field] = data[field].replace("the ", f"the{i % 997} ", 3)
        (folder / f"{term}.{docket}.json").write_text(json.dumps(data), encoding="utf-8")


def hudoc_corpus(samples: Path, folder: Path, first: int, count: int) -> None:
    """ITEMID.html bodies (the real HTML judgment, its words made the document's own) and metadata pages of
    English judgments naming them."""
    body = (samples / "hudoc" / "html" / "001-192223.html").read_text(encoding="utf-8")
    page = json.loads((samples / "hudoc" / "metadata" / "RECONSTRUCTED_query_results_page_from_echrod_columns.json")
                      .read_text(encoding="utf-8"))
    record = dict(page["results"][0]["columns"])
    (folder / "html").mkdir(parents=True, exist_ok=True)
    (folder / "metadata").mkdir(parents=True, exist_ok=True)
    ids = [f"001-{700000 + i}" for i in range(first, first + count)]
    for i, itemid in zip(range(first, first + count), ids):
        text = re.sub(r"\b(applicant|Court|Government)\b", lambda m: f"{m.group(1)}{i}", body)
        (folder / "html" / f"{itemid}.html").write_text(text, encoding="utf-8")
    for start in range(0, len(ids), HUDOC_PER_PAGE):
        chunk = ids[start:start + HUDOC_PER_PAGE]
        results = [{"columns": {**record, "itemid": itemid, "doctype": "HEJUD", "languageisocode": "ENG",
                                "docname": f"CASE OF SYNTHETIC {itemid} v. STATE", "isplaceholder": "False"}}
                   for itemid in chunk]
        name = f"page-{first + start:08d}.json"
        (folder / "metadata" / name).write_text(json.dumps({"resultcount": len(results), "results": results}),
                                                encoding="utf-8")


def _cn_texts(samples: Path) -> list[str]:
    from caseforge.tasks.cn.records import read_dump, record_from_dict

    texts = []
    for path in sorted((samples / "cn").glob("*.jsonl")):
        for row in read_dump(path.name, path.read_bytes()):
            try:
                text = record_from_dict(row).full_text
            except Exception:  # noqa: BLE001 - a sample record without a full text is not a template
                continue
            if text and len(text) > 200:
                texts.append(text)
    return texts


def cn_corpus(samples: Path, folder: Path, first: int, count: int) -> None:
    """JSONL dumps of CN_PER_FILE judgments: the real full texts in turn, each with its own id and case number."""
    texts = _cn_texts(samples)
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(first, first + count, CN_PER_FILE):
        lines = []
        for i in range(start, min(start + CN_PER_FILE, first + count)):
            text = re.sub(r"(\d+)号", lambda m: f"{m.group(1)}{i}号", texts[i % len(texts)], count=1)
            text = text.replace("被告", f"被告{i % 9973}", 1)
            lines.append(json.dumps({"doc_id": f"syn-{i:08d}", "full_text": text}, ensure_ascii=False))
        (folder / f"dump-{start:08d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


CORPORA = {"oyez": oyez_corpus, "hudoc": hudoc_corpus, "cn": cn_corpus}


# ---- one step ---------------------------------------------------------------------------------------------

def _peak_kb() -> int:
    match = re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text())
    return int(match.group(1)) if match else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6 if path.is_dir() else 0.0


def run_step(source: str, db: Path, folder: Path) -> dict:
    """One refresh in this process: CPU and wall seconds of the work alone, peak RSS, what it counted."""
    from caseforge import gate
    from caseforge.settings import load_settings
    from caseforge.tasks.cn import ingest as cn
    from caseforge.tasks.hudoc import ingest as hudoc
    from caseforge.tasks.oyez import ingest as oyez

    gate._context()                          # great-expectations' import and context: start-up, not work
    refresh = {"oyez": oyez.refresh, "hudoc": hudoc.refresh, "cn": cn.refresh}[source]
    settings = load_settings(db)
    reset = _reset_peak()
    cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    report = refresh(settings, from_dir=str(folder))
    after = resource.getrusage(resource.RUSAGE_SELF)
    mirror = settings.parquet_dir.resolve()
    return {"cpu_s": (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime),
            "wall_s": time.perf_counter() - wall, "peak_mb": _peak_kb() / 1024, "peak_reset": reset,
            "db_mb": _size_mb(db) + _size_mb(db.with_name(db.name + ".wal")), "mirror_mb": _size_mb(mirror),
            "archive_mb": _size_mb(settings.archive_dir),
            "status": report.status, "counts": report.counts}


def step_in_child(source: str, db: Path, folder: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--step", source, str(db), str(folder)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench: {source} step on {folder.name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the run ----------------------------------------------------------------------------------------------

def bench_source(source: str, size: int, increment: float, work: Path, samples: Path, isolate: bool) -> list[dict]:
    base = work / source
    shutil.rmtree(base, ignore_errors=True)
    full, extra = base / "corpus", base / "increment"
    added = max(1, math.ceil(size * increment))
    started = time.perf_counter()
    CORPORA[source](samples, full, 0, size)
    CORPORA[source](samples, extra, size, added)
    print(f"{source}: corpus of {size:,} and an increment of {added:,} made in {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)
    run = step_in_child if isolate else run_step
    plan = [("first", base / "full.duckdb", full), ("no-op", base / "full.duckdb", full),
            ("inc→full", base / "full.duckdb", extra), ("inc→empty", base / "empty.duckdb", extra)]
    rows = []
    for step, db, folder in plan:
        result = run(source, db, folder)
        docs = size if step in ("first", "no-op") else added
        rows.append({"source": source, "step": step, "docs": docs, **result})
        print(f"{source} {step}: {result['cpu_s']:.1f} CPU-s, status {result['status']}", file=sys.stderr, flush=True)
    return rows


def print_table(rows: list[dict]) -> None:
    print("| source | step | documents | CPU s | wall s | peak RSS MB | database MB | archive MB | mirror MB |"
          " docs per CPU-s | status |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['source']} | {r['step']} | {r['docs']:,} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | "
              f"{r['peak_mb']:.0f} | {r['db_mb']:.1f} | {r['archive_mb']:.1f} | {r['mirror_mb']:.1f} | "
              f"{r['docs'] / r['cpu_s'] if r['cpu_s'] else float('inf'):,.1f} | {r['status']} |")


def print_ratios(rows: list[dict]) -> bool:
    print()
    print("| source | no-op / first CPU | target ≤ 10% | inc→full / inc→empty CPU | target ≤ 1.3× |"
          " inc→full / inc→empty peak RSS | no-op / first peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ok = True
    for source in dict.fromkeys(r["source"] for r in rows):
        step = {r["step"]: r for r in rows if r["source"] == source}
        noop = step["no-op"]["cpu_s"] / step["first"]["cpu_s"]
        inc = step["inc→full"]["cpu_s"] / step["inc→empty"]["cpu_s"]
        rss = step["inc→full"]["peak_mb"] / step["inc→empty"]["peak_mb"]
        rss_noop = step["no-op"]["peak_mb"] / step["first"]["peak_mb"]
        good = (noop <= TARGET_NOOP, inc <= TARGET_INCREMENT)
        ok &= all(good)
        print(f"| {source} | {noop:.1%} | {'met' if good[0] else 'MISSED'} | {inc:.2f}× | "
              f"{'met' if good[1] else 'MISSED'} | {rss:.2f}× | {rss_noop:.2f}× |")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized corpora, every step in this process")
    for source in REAL_SIZES:
        parser.add_argument(f"--{source}", type=int, help=f"{source} documents (default {REAL_SIZES[source]:,}, "
                                                          f"quick {QUICK_SIZES[source]})")
    parser.add_argument("--sources", default=",".join(REAL_SIZES), help="comma-separated subset (default: all)")
    parser.add_argument("--increment", type=float, default=0.01, help="the increment's share of the corpus")
    parser.add_argument("--work", type=Path, help="folder for corpora and warehouses (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--step", nargs=3, metavar=("SOURCE", "DB", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        source, db, folder = args.step
        print(json.dumps(run_step(source, Path(db), Path(folder))))
        return
    samples = samples_dir()
    if not samples.is_dir():
        raise SystemExit(f"bench: no samples at {samples} (set CASEFORGE_SAMPLES)")
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = sorted(set(sources) - set(REAL_SIZES))
    if unknown:
        raise SystemExit(f"bench: unknown source(s) {', '.join(unknown)}; known: {', '.join(REAL_SIZES)}")
    sizes = {s: getattr(args, s) or (QUICK_SIZES if args.quick else REAL_SIZES)[s] for s in sources}
    work = args.work or Path(tempfile.mkdtemp(prefix="caseforge-scale-"))
    os.environ.setdefault("CASEFORGE_PROGRESS", "plain")
    try:
        rows = []
        for source in sources:
            rows += bench_source(source, sizes[source], args.increment, work, samples, isolate=not args.quick)
        print(f"bench/scale.py: sizes {', '.join(f'{s} {n:,}' for s, n in sizes.items())}, increment "
              f"{args.increment:.0%}, {'one process' if args.quick else 'a fresh process per step'}, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print_table(rows)
        print_ratios(rows)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
