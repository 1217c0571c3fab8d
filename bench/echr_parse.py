"""Throughput of the ECHR parsers on the real samples, in one run: CPU-seconds per HUDOC judgment for today's
HTML reader (lxml) against the BeautifulSoup reader it replaced, paragraphs/s for HTML and DOCX bodies, and
citations/s for guide paragraphs. Printed as figures and ratios (no timing assertions anywhere).

    .venv/bin/python bench/echr_parse.py [--samples DIR] [--seconds 3] [--rounds 20] [--quick]

The old reader is the frozen copy in bench/reference/hudoc_html_bs4.py (a file, not a commit to check out, so
the comparison runs in any checkout, and the same copy backs tests/samples/test_hudoc_html_reader.py). Both
readers feed the same paragraph builder, so the ratio is that of the whole parse of a judgment body; the old and
new parses alternate round by round, so a busy machine slows both alike. CPU time is this process's.
--quick: a few rounds and fractions of a second per figure (CI checks that the bench still runs).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from caseforge.settings import load_settings
from caseforge.tasks.guides.citations import citation_rows
from caseforge.tasks.guides.pages import read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from caseforge.tasks.hudoc.paragraphs import build_rows
from caseforge.tasks.hudoc.readers import parse_document

sys.path.insert(0, str(Path(__file__).resolve().parent / "reference"))
from hudoc_html_bs4 import html_blocks_bs4  # noqa: E402 - the frozen old reader, next to this script

TARGET_RATIO = 4.0


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


def parse_with_bs4(itemid: str, body: bytes):
    blocks, footnotes = html_blocks_bs4(body)
    return build_rows(itemid, blocks, footnotes, "html", "x")


def compare_html_readers(html: list[tuple[str, bytes]], rounds: int) -> float:
    """CPU-seconds per judgment of the old and the new reader, alternating round by round; returns the ratio."""
    for itemid, body in html:
        assert parse_with_bs4(itemid, body).rows == parse_document(itemid, body, "x").rows, f"{itemid}: readers differ"
    cpu = {"old": 0.0, "new": 0.0}
    for _ in range(rounds):
        for name, parse in (("old", parse_with_bs4), ("new", lambda i, b: parse_document(i, b, "x"))):
            started = time.process_time()
            for itemid, body in html:
                parse(itemid, body)
            cpu[name] += time.process_time() - started
    judgments = rounds * len(html)
    old, new = cpu["old"] / judgments, cpu["new"] / judgments
    ratio = old / new
    print(f"HUDOC HTML judgment ({len(html)} sample(s) x {rounds} rounds), CPU-seconds per judgment:")
    print(f"  BeautifulSoup reader (before)  {old:.4f}   ({1 / old:,.1f} judgments per CPU-second)")
    print(f"  lxml reader (now)              {new:.4f}   ({1 / new:,.1f} judgments per CPU-second)")
    print(f"  ratio before/now               {ratio:.1f}x   (target {TARGET_RATIO:.0f}x: "
          f"{'met' if ratio >= TARGET_RATIO else 'NOT met'})")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, default=load_settings().samples_dir)
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per throughput figure")
    parser.add_argument("--rounds", type=int, default=20, help="rounds of the old/new reader comparison")
    parser.add_argument("--quick", action="store_true", help="2 rounds, 0.2 s per figure")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.2, 2
    hudoc = args.samples / "hudoc"
    html = [(p.stem, p.read_bytes()) for p in sorted((hudoc / "html").glob("*.html"))]
    docx = [(p.stem[:9] if p.stem.startswith("001-83979") else p.stem, p.read_bytes())
            for p in sorted((hudoc / "docx").glob("*.docx"))]
    if not html or not docx:
        raise SystemExit(f"no HUDOC samples under {hudoc} (set CASEFORGE_SAMPLES or --samples)")
    guide_csv = args.samples / "echr_guides" / "guide_art_2_pages_first.csv"
    paragraphs = parse_guide("guide_art_2", read_pages(guide_csv.read_bytes(), guide_csv.name), "0" * 64).rows

    compare_html_readers(html, args.rounds)
    measure("HUDOC HTML paragraphs", lambda: sum(len(parse_document(i, b, "x").rows) for i, b in html), args.seconds)
    measure("HUDOC DOCX paragraphs", lambda: sum(len(parse_document(i, b, "x").rows) for i, b in docx), args.seconds)
    measure("guide paragraphs (page CSV)",
            lambda: len(parse_guide("g", read_pages(guide_csv.read_bytes(), guide_csv.name), "x").rows), args.seconds)
    measure("guide citations", lambda: len(citation_rows("g", paragraphs)), args.seconds)


if __name__ == "__main__":
    main()
