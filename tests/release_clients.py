"""A release as its users open it: every data file with the clients people use (Hugging Face `datasets` on the JSONL
and on the Parquet files, `polars.read_ndjson`, `pyarrow.json.read_json`) and `croissant.json` with mlcroissant,
reading every record. `client_problems(folder)` is one line per failure (empty: every client loads everything)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from caseforge.release import validate_croissant
from caseforge.release.writer import null_typed


def client_problems(release: Path, cache_dir: Path) -> list[str]:
    import datasets
    import polars as pl
    from pyarrow import json as pa_json

    datasets.disable_progress_bars()
    problems = []
    data = release / "data"
    for parquet in sorted(data.glob("*.parquet")):
        jsonl = parquet.with_suffix(".jsonl")
        name = f"{release.name}/{parquet.stem}"
        rows = pq.read_metadata(parquet).num_rows
        for field in pq.read_schema(parquet):
            if null_typed(field.type):
                problems.append(f"{name}.parquet: column {field.name} is typed {field.type}")
        attempts = {
            "datasets json": lambda: datasets.load_dataset("json", data_files=str(jsonl), split="train",
                                                           cache_dir=str(cache_dir)).num_rows,
            "datasets parquet": lambda: datasets.load_dataset("parquet", data_files=str(parquet), split="train",
                                                              cache_dir=str(cache_dir)).num_rows,
            "polars.read_ndjson": lambda: pl.read_ndjson(jsonl).height,
            "pyarrow.json.read_json": lambda: pa_json.read_json(jsonl).num_rows,
        }
        for client, load in attempts.items():
            try:
                loaded = load()
            except Exception as exc:           # noqa: BLE001 - any failure to load is the finding
                problems.append(f"{name}.jsonl/parquet with {client}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            if loaded != rows:
                problems.append(f"{name} with {client}: {loaded} rows, the Parquet file has {rows}")
        for number, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), start=1):
            placeholders = {"<NA>", "NaT", "NaN", "nan", "None"} & set(_strings(json.loads(line)))
            if placeholders:
                problems.append(f"{name}.jsonl line {number}: placeholder value(s) {sorted(placeholders)}")
                break
    problems += [f"{release.name}/croissant.json: {p}" for p in validate_croissant(release)]
    return problems


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
