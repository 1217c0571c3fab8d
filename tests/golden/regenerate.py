"""Rewrite the golden compare files from the current parsers, for every source or the ones named.

    .venv/bin/python tests/golden/regenerate.py                 # oyez hudoc guides cn barexam
    .venv/bin/python tests/golden/regenerate.py hudoc cn        # only these
    git diff tests/golden                                       # then review every change by eye

Reads the real samples from CASEFORGE_SAMPLES (default ../shared/samples). The examples are the
EXAMPLES of each source's golden test module (tests/samples/test_<source>_golden.py), so this writes
exactly what those tests compare against. A compare file that no example produces any more is listed,
not deleted.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
PROJECT = TESTS.parent
for folder in (TESTS / "samples", TESTS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from golden.golden import GOLDEN_DIR, SLOW_SECONDS, timed, write  # noqa: E402

SOURCES = ("oyez", "hudoc", "guides", "cn", "barexam")


def samples_folder() -> Path:
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(PROJECT.parent / "shared" / "samples")))


def regenerate(source: str, samples: Path) -> dict[str, int]:
    module = importlib.import_module(f"test_{source}_golden")
    assert module.SOURCE == source, f"test_{source}_golden.SOURCE is {module.SOURCE!r}"
    counts = {"new": 0, "changed": 0, "unchanged": 0}
    for example, produce in module.EXAMPLES.items():
        output, seconds = timed(produce, samples)
        path, state = write(source, example, output)
        counts[state] += 1
        slow = f"  (slow: {seconds:.2f} s)" if seconds > SLOW_SECONDS else ""
        print(f"{state:9} {path.relative_to(PROJECT)}  {seconds:.2f} s{slow}")
    expected = {f"{example}.compare.json" for example in module.EXAMPLES}
    for path in sorted((GOLDEN_DIR / source).glob("*.compare.json")):
        if path.name not in expected:
            print(f"stale     {path.relative_to(PROJECT)}  (no example produces it; delete it if that is intended)")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help=f"any of {', '.join(SOURCES)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.sources if name not in SOURCES]
    if unknown:
        parser.error(f"unknown source {', '.join(unknown)}; choose from {', '.join(SOURCES)}")
    samples = samples_folder()
    if not samples.is_dir():
        print(f"real samples not found at {samples} (set CASEFORGE_SAMPLES)", file=sys.stderr)
        return 2
    totals = {"new": 0, "changed": 0, "unchanged": 0}
    for source in args.sources or SOURCES:
        for state, count in regenerate(source, samples).items():
            totals[state] += count
    print(f"{totals['new']} new, {totals['changed']} changed, {totals['unchanged']} unchanged; "
          f"review with: git diff -- tests/golden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
