"""Export the kept pairs as JSONL with a dataset card (counts and the distributions the paper reports)."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import duckdb

from caseforge.warehouse import run_sql

_TOKEN = re.compile(r"\w+|[^\w\s]")


def token_count(text: str) -> int:
    """Word and punctuation tokens (a tokenizer-free approximation of model tokens)."""
    return len(_TOKEN.findall(text or ""))


def _summary(values: list[int]) -> str:
    if not values:
        return "n=0"
    return (f"n={len(values)} mean={statistics.mean(values):.1f} median={statistics.median(values):g} "
            f"min={min(values)} max={max(values)}")


def _histogram(values: list[int], bins: int = 8) -> list[str]:
    if not values:
        return []
    low, high = min(values), max(values)
    width = max(1, -(-(high - low + 1) // bins))
    lines = []
    for start in range(low, high + 1, width):
        count = sum(start <= v < start + width for v in values)
        lines.append(f"    {start:>5}–{start + width - 1:<5} {'#' * count} {count}")
    return lines


def export_dataset(con: duckdb.DuckDBPyConnection, out_dir: Path) -> dict:
    """Write aquaechr_qa.jsonl (kept pairs) and CARD.md; return the numbers the card reports."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = con.execute(
        "SELECT qa_id, guide_id, strategy, question, answer, citations, comprehensiveness, conciseness, fluency, "
        "n_answer_sentences, n_cited_paragraphs FROM curated.aquaechr_qa WHERE kept ORDER BY guide_id, qa_id"
    ).fetchall()
    with (out_dir / "aquaechr_qa.jsonl").open("w", encoding="utf-8") as handle:
        for qa_id, guide, strategy, question, answer, citations, comp, conc, flu, _, _ in rows:
            handle.write(json.dumps({"qa_id": qa_id, "guide_id": guide, "strategy": strategy, "question": question,
                                     "answer": answer, "citations": json.loads(citations),
                                     "scores": {"comprehensiveness": comp, "conciseness": conc,
                                                "answer_fluency": flu}}, ensure_ascii=False) + "\n")
    stats = {
        "tokens_per_question": [token_count(r[3]) for r in rows],
        "tokens_per_answer": [token_count(r[4]) for r in rows],
        "sentences_per_answer": [int(r[9] or 0) for r in rows],
        "cited_paragraphs_per_answer": [int(r[10] or 0) for r in rows],
    }
    per_guide = run_sql(con, "aquaechr/counts_by_guide_strategy.sql").fetchall()
    reasons = con.execute(
        "SELECT split_part(split_part(removal_reason, ':', 1), ' (', 1) AS reason, count(*) FROM curated.aquaechr_qa "
        "WHERE NOT kept GROUP BY ALL ORDER BY 2 DESC, 1").fetchall()
    lines = ["# AQuAECHR (caseforge build)", "",
             "Question–answer pairs from the ECHR case-law guides. Answers are guide sentences copied verbatim; "
             "each sentence carries its guide citations resolved to HUDOC judgments and pinpoint paragraphs.", "",
             f"Kept pairs: {len(rows)}", "", "## Pairs per guide and strategy", "",
             "| guide | strategy | kept | removed |", "|---|---|---|---|"]
    lines += [f"| {g} | {s} | {k} | {r} |" for g, s, k, r in per_guide]
    lines += ["", "## Removals", ""] + [f"- {reason}: {n}" for reason, n in reasons]
    lines += ["", "## Distributions (kept pairs; tokens = words and punctuation marks)", ""]
    for name, values in stats.items():
        lines += [f"- {name.replace('_', ' ')}: {_summary(values)}", *_histogram(values)]
    (out_dir / "CARD.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"kept": len(rows), "per_guide_strategy": per_guide, "removals": reasons,
            **{k: (statistics.mean(v) if v else 0.0) for k, v in stats.items()}}
