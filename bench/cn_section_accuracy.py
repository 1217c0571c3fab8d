"""Section accuracy of the Chinese judgment parser against the gold sections in the samples.

Usage: python bench/cn_section_accuracy.py [SAMPLES_DIR] [--quick]   (default: $CASEFORGE_SAMPLES or ../shared/samples)
--quick is the same run: the whole measure takes a second or two.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from caseforge.settings import load_settings
from caseforge.tasks.cn.accuracy import THRESHOLD, format_table, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="?", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="the same run (it takes seconds)")
    args = parser.parse_args()
    rows = measure((args.samples or Path(load_settings().samples_dir)) / "cn")
    print(f"share of documents whose section matches gold with similarity >= {THRESHOLD}")
    print(format_table(rows))


if __name__ == "__main__":
    main()
