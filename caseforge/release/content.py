"""ReleaseContent: what the writer hands to the card, the Croissant metadata and release.json."""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from caseforge.release.fresh import FreshCutoff
from caseforge.release.layout import FRESH


@dataclass
class ReleaseContent:
    """What the card, the Croissant file and release.json are written from."""
    card: dict
    columns: dict[str, str]
    date_column: str
    tables: dict[str, pa.Table]            # split → rows as written (fresh last)
    files: dict[str, str]                  # relative path → sha256 of the files written so far
    data_digest: str
    data_date: str | None
    version: str
    fresh: FreshCutoff
    payload_digest: str | None = None
    payload_count: int = 0
    judge: object | None = None            # caseforge.review.card.JudgeCard of a benchmark an LLM judge filtered
    harness: object | None = None           # the release's harness tasks: a caseforge.release.harness.HarnessSpec

    def split_names(self) -> list[str]:
        return sorted(n for n in self.tables if n != FRESH) + [FRESH]

    def main_rows(self) -> int:
        return sum(t.num_rows for n, t in self.tables.items() if n != FRESH)

    def schema_groups(self) -> list[tuple[list[str], pa.Schema]]:
        groups: list[tuple[list[str], pa.Schema]] = []
        for name in self.split_names():
            schema = self.tables[name].schema
            for names, known in groups:
                if known.equals(schema):
                    names.append(name)
                    break
            else:
                groups.append(([name], schema))
        return groups
