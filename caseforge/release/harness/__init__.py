"""Harness tasks in a benchmark release: an inspect_ai task file and an lm-evaluation-harness task folder that score
a model on the release as `caseforge eval` does, with neither caseforge nor a warehouse.

A benchmark's release writer hands `write_release` a HarnessSpec: one row per sample with the chat messages
caseforge's own templates rendered for it (the fields the release's data holds, such as the claim, left as «field»
marks that the harness fills from data/<split>.parquet; a judge's prompt with a «candidate» mark for the draft), and
per variant what the call asks for (max_tokens, the reply's JSON schema). `write_harness` writes into the release:

    harness/samples.parquet        the samples (variant, split, id, messages, judge, extra)
    harness/pin.json               dataset, version, the columns the tasks read, the variants, and the sha256 of
                                   the Parquet files they read
    harness/caseforge_harness.py   the release check and the samples (no caseforge import)
    harness/caseforge_scoring.py   caseforge eval's scoring rules: caseforge/scoring_rules.py itself
    harness/inspect_task.py        `inspect eval harness/inspect_task.py --model …`
    harness/lm_eval/               `lm-eval run --include_path harness/lm_eval --tasks caseforge_<dataset> …`

The files under shipped/, and caseforge/scoring_rules.py (the rules caseforge's own evaluation code imports, so they
are written once), are copied as they are; the card's section on them (caseforge.release.card.harness_section)
says how to run them and how many items each year holds (`items_per_year`: a cut-off past a model's training data).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from caseforge import scoring_rules
from caseforge.release.content import ReleaseContent
from caseforge.release.layout import FRESH

SHIPPED = Path(__file__).resolve().parent / "shipped"
# harness/<name> ← the file copied there
TASK_FILES = {"caseforge_harness.py": SHIPPED / "caseforge_harness.py",
              "caseforge_scoring.py": Path(scoring_rules.__file__).resolve(),
              "inspect_task.py": SHIPPED / "inspect_task.py"}
FOLDER = "harness"
INSPECT_TASK = f"{FOLDER}/inspect_task.py"
LM_EVAL = f"{FOLDER}/lm_eval"


def mark(name: str) -> str:
    """The place of a sample's field in a rendered prompt, filled by the harness (caseforge_harness.fill)."""
    return f"\x00{name}\x00"


@dataclass(frozen=True)
class HarnessSpec:
    """What a benchmark's harness tasks score. rows: {variant, split, id, messages, judge (messages or None),
    extra (dict)}; variants: name → {max_tokens, schema (of the reply, or None), ...what the task's scorer reads};
    id_column / target_column: the data columns of a sample's id and of what it is scored against; default_split:
    the split scored unless the user names one; notes: what is scored, for the card."""
    rows: list[dict]
    variants: dict[str, dict]
    id_column: str
    target_column: str
    default_split: str
    notes: str
    options: dict[str, str] = field(default_factory=dict)      # task option → what it does, for the card


def _samples_table(rows: list[dict]) -> pa.Table:
    ordered = sorted(rows, key=lambda r: (r["variant"], r["split"], str(r["id"])))
    return pa.table({
        "variant": pa.array([r["variant"] for r in ordered], pa.string()),
        "split": pa.array([r["split"] for r in ordered], pa.string()),
        "id": pa.array([str(r["id"]) for r in ordered], pa.string()),
        "messages": pa.array([json.dumps(r["messages"], ensure_ascii=False) for r in ordered], pa.string()),
        "judge": pa.array([json.dumps(r["judge"], ensure_ascii=False) if r.get("judge") else None for r in ordered],
                          pa.string()),
        "extra": pa.array([json.dumps(r.get("extra") or {}, ensure_ascii=False, sort_keys=True) for r in ordered],
                          pa.string()),
    })


def write_harness(folder: Path, dataset: str, spec: HarnessSpec, release: ReleaseContent,
                  parquet_options: dict) -> None:
    """The harness files of `release` into `folder` (the release being written): samples, pin, task files."""
    target = folder / FOLDER
    (target / "lm_eval").mkdir(parents=True)
    sink = pa.BufferOutputStream()
    pq.write_table(_samples_table(spec.rows), sink, **parquet_options)
    samples = sink.getvalue().to_pybytes()
    (target / "samples.parquet").write_bytes(samples)
    splits = sorted(name for name in release.tables if name != FRESH)
    pin = {"dataset": dataset, "version": release.version, "id_column": spec.id_column,
           "date_column": release.date_column, "target_column": spec.target_column,
           "default_split": spec.default_split, "splits": splits, "variants": spec.variants,
           "sha256": {**{f"data/{name}.parquet": release.files[f"data/{name}.parquet"] for name in splits},
                      f"{FOLDER}/samples.parquet": hashlib.sha256(samples).hexdigest()}}
    (target / "pin.json").write_text(json.dumps(pin, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                                     encoding="utf-8", newline="\n")
    for name, source in TASK_FILES.items():
        (target / name).write_bytes(source.read_bytes())
    (target / "lm_eval" / "utils.py").write_bytes((SHIPPED / "lm_eval" / "utils.py").read_bytes())
    task_file = f"caseforge_{dataset}.yaml"
    tokens = {variant["max_tokens"] for variant in spec.variants.values()}
    if len(tokens) != 1:
        raise ValueError(f"{dataset}: lm-eval's task has one max_gen_toks; the variants ask for {sorted(tokens)}")
    text = (SHIPPED / "lm_eval" / task_file).read_text(encoding="utf-8").replace("@MAX_TOKENS@", str(tokens.pop()))
    (target / "lm_eval" / task_file).write_text(text, encoding="utf-8", newline="\n")


_BYTECODE = re.compile(r"(?P<folder>(?:[^/]+/)*)__pycache__/(?P<stem>[^/.]+)\.[^/]+\.pyc")


def bytecode_of_listed(rel: str, listed: set[str]) -> bool:
    """Whether `rel` is the bytecode Python caches beside a .py file the release lists when it imports it: running
    the harness tasks in place leaves harness/__pycache__/caseforge_harness.cpython-311.pyc, which is the release's
    own file, not one someone else put there (caseforge.release.writer.not_our_release)."""
    found = _BYTECODE.fullmatch(rel)
    return bool(found) and f"{found['folder']}{found['stem']}.py" in listed


def items_per_year(release: ReleaseContent) -> list[tuple[str, str, int]]:
    """(split, year, items) of every split but fresh, by the year of the source-document date ('undated' last)."""
    rows = []
    for name in sorted(n for n in release.tables if n != FRESH):
        years = Counter(str(v)[:4] if v is not None else "undated"
                        for v in release.tables[name][release.date_column].to_pylist())
        rows += [(name, year, years[year]) for year in sorted(years, key=lambda y: (y == "undated", y))]
    return rows
