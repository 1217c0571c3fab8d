"""Throughput of the ECHR parsers on the real samples: paragraphs/s for HUDOC HTML and DOCX bodies,
citations/s for guide paragraphs. One run, printed as rates (no timing assertions anywhere).

    .venv/bin/python bench/echr_parse.py [--samples DIR] [--seconds 3]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from caseforge.config import settings
from caseforge.tasks.guides.citations import citation_rows
from caseforge.tasks.guides.pages import read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from caseforge.tasks.hudoc.readers import parse_document


def measure(label: str, work, seconds: float) -> None:
    """Repeat `work` (returning the number of items it produced) for about `seconds`; print items/s."""
    items, rounds, start = 0, 0, time.perf_counter()
    while True:
        items += work()
        rounds += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    print(f"{label:<34} {items / elapsed:>10,.0f} /s   ({items:,} in {rounds} rounds, {elapsed:.2f}s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, default=settings().samples_dir)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    hudoc = args.samples / "hudoc"
    html = [(p.stem, p.read_bytes()) for p in sorted((hudoc / "html").glob("*.html"))]
    docx = [(p.stem[:9] if p.stem.startswith("001-83979") else p.stem, p.read_bytes())
            for p in sorted((hudoc / "docx").glob("*.docx"))]
    guide_csv = args.samples / "echr_guides" / "guide_art_2_pages_first.csv"
    paragraphs = parse_guide("guide_art_2", read_pages(guide_csv.read_bytes(), guide_csv.name), "0" * 64).rows

    measure("HUDOC HTML paragraphs", lambda: sum(len(parse_document(i, b, "x").rows) for i, b in html), args.seconds)
    measure("HUDOC DOCX paragraphs", lambda: sum(len(parse_document(i, b, "x").rows) for i, b in docx), args.seconds)
    measure("guide paragraphs (page CSV)",
            lambda: len(parse_guide("g", read_pages(guide_csv.read_bytes(), guide_csv.name), "x").rows), args.seconds)
    measure("guide citations", lambda: len(citation_rows("g", paragraphs)), args.seconds)


if __name__ == "__main__":
    main()
