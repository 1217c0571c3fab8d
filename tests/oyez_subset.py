"""A small samples tree for runs that go through the gate several times: links to the first real
Oyez case files and a copy of the first real rows of the legacy table (all 2,999 would be slow)."""
import csv
import itertools
from pathlib import Path


def link_oyez_subset(samples_dir: Path, root: Path, cases: int, legacy_rows: int) -> Path:
    case_dir = root / "oyez" / "cases"
    case_dir.mkdir(parents=True)
    for path in sorted((samples_dir / "oyez" / "cases").glob("*.json"))[:cases]:
        (case_dir / path.name).symlink_to(path)
    with (samples_dir / "oyez" / "legacy_justice_table.csv").open(newline="", encoding="utf-8") as source:
        records = list(itertools.islice(csv.reader(source), legacy_rows + 1))
    with (root / "oyez" / "legacy_justice_table.csv").open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows(records)
    return root
