"""Section accuracy of the Chinese judgment parser against the gold sections in the samples.

Usage: python bench/cn_section_accuracy.py [SAMPLES_DIR]   (default: $CASEFORGE_SAMPLES or ../shared/samples)
"""
from __future__ import annotations

import sys
from pathlib import Path

from caseforge.config import settings
from caseforge.tasks.cn.accuracy import THRESHOLD, format_table, measure


def main() -> None:
    samples = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(settings().samples_dir)
    rows = measure(samples / "cn")
    print(f"share of documents whose section matches gold with similarity >= {THRESHOLD}")
    print(format_table(rows))


if __name__ == "__main__":
    main()
