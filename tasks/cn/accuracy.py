"""Section accuracy against gold sections in the samples.

A section counts as matched when caseforge.tasks.cn.text.similarity (see there) with the gold
section is at least THRESHOLD.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from caseforge.tasks.cn.sections import ParsedJudgment, parse_sections
from caseforge.tasks.cn.text import normalise_for_compare, normalise_text, similarity

THRESHOLD = 0.9


@dataclass(frozen=True)
class GoldCheck:
    """How one gold field of a sample set maps onto what the parser finds."""
    dataset: str
    gold_field: str
    section: str                       # name in the report
    extract: Callable[[ParsedJudgment], str | None]
    target: float


def _section(name: str) -> Callable[[ParsedJudgment], str | None]:
    return lambda parsed: parsed.sections.get(name)


CHECKS = [
    GoldCheck("caseformer", "claim", "claims", _section("claims"), 0.90),
    GoldCheck("caseformer", "fact", "facts (findings, else accusation)", lambda p: p.findings_part, 0.95),
    GoldCheck("caseformer", "reason", "reasoning", _section("reasoning"), 0.95),
    GoldCheck("caseformer", "result", "judgment (operative items)", lambda p: p.judgment_items, 0.95),
    GoldCheck("judge", "text", "facts (fact part)", lambda p: p.fact_part, 0.95),
    GoldCheck("cail2021", "诉称段", "claims", _section("claims"), 0.90),
    GoldCheck("cail2021", "辩称段", "defense", _section("defense"), 0.90),
    GoldCheck("casegen", "fact", "facts", _section("facts"), 0.95),
    GoldCheck("casegen", "reasoning", "reasoning", _section("reasoning"), 0.95),
    GoldCheck("casegen", "judgement", "judgment", _section("judgment"), 0.95),
    GoldCheck("casegen", "judgement", "judgment + tail (CaseGen keeps the appeal notice)",
              lambda p: p.judgment_to_end, 0.95),
]

# Gold files: dataset -> (file, how to get the full text). CAIL2021 and the CaseGen references
# carry sections only, no full text: their documents are rebuilt by joining the gold sections in
# document order, so for them the check measures where the parser puts the boundaries.
DATASETS = {
    "caseformer": ("caseformer_criminal.jsonl", lambda r: r["content"]),
    "judge": ("judge_criminal.jsonl", lambda r: r["fd"]),
    "cail2021": ("cail2021_civil_sections.jsonl",
                 lambda r: "\n".join(r.get(k) or "" for k in ("诉称段", "辩称段", "裁判分析过程段"))),
    "casegen": ("casegen_reference_sections.jsonl",
                lambda r: "\n".join(r.get(k) or "" for k in ("fact", "reasoning", "judgement"))),
}
RECONSTRUCTED = {"cail2021", "casegen"}


def iter_gold(samples_cn: Path, dataset: str) -> Iterator[tuple[dict, ParsedJudgment]]:
    name, full_text = DATASETS[dataset]
    with open(samples_cn / name, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                yield record, parse_sections(normalise_text(full_text(record)))


@dataclass
class AccuracyRow:
    dataset: str
    gold_field: str
    section: str
    documents: int
    matched: int
    mean_similarity: float
    target: float

    @property
    def share(self) -> float:
        return self.matched / self.documents if self.documents else 0.0


def measure(samples_cn: Path) -> list[AccuracyRow]:
    rows = []
    for dataset in DATASETS:
        checks = [c for c in CHECKS if c.dataset == dataset]
        sims: dict[tuple[str, str], list[float]] = {(c.gold_field, c.section): [] for c in checks}
        for record, parsed in iter_gold(samples_cn, dataset):
            for check in checks:
                gold = record.get(check.gold_field)
                if not normalise_for_compare(gold):
                    continue  # no gold for this section in this document
                sims[(check.gold_field, check.section)].append(similarity(check.extract(parsed), gold))
        for check in checks:
            values = sims[(check.gold_field, check.section)]
            rows.append(AccuracyRow(dataset, check.gold_field, check.section, len(values),
                                    sum(v >= THRESHOLD for v in values),
                                    sum(values) / len(values) if values else 0.0, check.target))
    return rows


def format_table(rows: list[AccuracyRow]) -> str:
    lines = ["| dataset | gold field | our section | docs | share ≥0.9 | mean sim | target |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        note = " (rebuilt from gold sections)" if row.dataset in RECONSTRUCTED else ""
        lines.append(f"| {row.dataset}{note} | {row.gold_field} | {row.section} | {row.documents} | "
                     f"{row.share:.1%} | {row.mean_similarity:.3f} | {row.target:.0%} |")
    return "\n".join(lines)
