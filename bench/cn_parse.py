"""Throughput of the Chinese judgment parser (documents parsed per second, one core).

Usage: python bench/cn_parse.py [SAMPLES_DIR] [--repeat N] [--quick]
Parses every full-text document in samples/cn (JuDGE, CaseFormer, CAIL2020) N times with
parse_record (normalisation, sections, metadata, gold agreement) and with parse_sections alone.
--quick: the first 60 documents once (CI checks that the bench still runs).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from caseforge.settings import load_settings
from caseforge.tasks.cn.records import parse_record, read_dump, record_from_dict
from caseforge.tasks.cn.sections import parse_sections
from caseforge.tasks.cn.text import normalise_text

FULL_TEXT_FILES = ("judge_criminal.jsonl", "caseformer_criminal.jsonl", "cail2020_civil_fulltext.jsonl")
TARGET_DOCS_PER_S = 500


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("samples", nargs="?", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="the first 60 documents, once")
    args = parser.parse_args()
    samples = Path(args.samples or load_settings().samples_dir) / "cn"
    records = []
    for name in FULL_TEXT_FILES:
        records += [record_from_dict(row) for row in read_dump(name, (samples / name).read_bytes())]
    if args.quick:
        records, args.repeat = records[:60], 1
    chars = sum(len(r.full_text) for r in records)
    texts = [normalise_text(r.full_text) for r in records]
    sections_wall, sections_cpu = _timed(lambda: [parse_sections(t) for t in texts], args.repeat)
    full_wall, full_cpu = _timed(lambda: [parse_record(r) for r in records], args.repeat)
    done = len(records) * args.repeat
    print(f"{len(records)} documents, mean {chars / len(records):.0f} characters, x{args.repeat}, one process")
    print("stage | docs/s (wall) | docs per CPU-second (per core)")
    print(f"parse_sections (normalised text -> sections) | {done / sections_wall:,.0f} | {done / sections_cpu:,.0f}")
    print(f"parse_record (normalise + sections + metadata + gold agreement) | {done / full_wall:,.0f} | {done / full_cpu:,.0f}")
    print(f"target {TARGET_DOCS_PER_S} docs/s per core: ratio {done / full_cpu / TARGET_DOCS_PER_S:.2f}x (parse_record, CPU time)")


def _timed(work, repeat: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for `repeat` runs; CPU time is fair on a busy machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        work()
    return time.perf_counter() - wall, time.process_time() - cpu


if __name__ == "__main__":
    main()
