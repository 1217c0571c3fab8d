"""Throughput of the Chinese judgment parser (documents parsed per second, one core).

Usage: python bench/cn_parse.py [SAMPLES_DIR] [--repeat N]
Parses every full-text document in samples/cn (JuDGE, CaseFormer, CAIL2020) N times with
parse_record (normalisation, sections, metadata, gold agreement) and with parse_sections alone.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from caseforge.config import settings
from caseforge.tasks.cn.records import parse_record, read_dump, record_from_dict
from caseforge.tasks.cn.sections import parse_sections
from caseforge.tasks.cn.text import normalise_text

FULL_TEXT_FILES = ("judge_criminal.jsonl", "caseformer_criminal.jsonl", "cail2020_civil_fulltext.jsonl")
TARGET_DOCS_PER_S = 500


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("samples", nargs="?", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    samples = Path(args.samples or settings().samples_dir) / "cn"
    records = []
    for name in FULL_TEXT_FILES:
        records += [record_from_dict(row) for row in read_dump(name, (samples / name).read_bytes())]
    chars = sum(len(r.full_text) for r in records)
    texts = [normalise_text(r.full_text) for r in records]
    start = time.perf_counter()
    for _ in range(args.repeat):
        for text in texts:
            parse_sections(text)
    sections_rate = len(texts) * args.repeat / (time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(args.repeat):
        for record in records:
            parse_record(record)
    full_rate = len(records) * args.repeat / (time.perf_counter() - start)
    print(f"{len(records)} documents, mean {chars / len(records):.0f} characters, x{args.repeat}")
    print(f"parse_sections (normalised text -> sections): {sections_rate:,.0f} docs/s")
    print(f"parse_record (normalise + sections + metadata + gold agreement): {full_rate:,.0f} docs/s")
    print(f"target {TARGET_DOCS_PER_S} docs/s per core: ratio {full_rate / TARGET_DOCS_PER_S:.2f}x")


if __name__ == "__main__":
    main()
