"""Release snapshots: Parquet + JSONL per table, a dataset card and a manifest, byte-identical on re-runs.

`write_release(folder, dataset, tables, card)` writes the release into `folder` (replacing an older one
there as a whole):

    README.md                 the dataset card (counts, distributions, quality, models, prompts, provenance, licences)
    data/<table>.parquet      rows sorted canonically, fixed writer settings
    data/<table>.jsonl        the same rows, one JSON object a line
    provenance/source_payloads.tsv   source, key, sha256 of every upstream payload behind the rows
    MANIFEST.sha256           sha256 of every other file, sorted by path

Nothing in the content depends on when it was written: same input, same bytes.
"""
from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

MANIFEST = "MANIFEST.sha256"

# Licence of each source as its publisher or the archive we took it from states it (shared/README.md).
LICENCES: dict[str, str] = {
    "oyez": "CC BY-NC 4.0 (Oyez, oyez.org); non-commercial use with attribution",
    "scotus_legacy": "no licence stated (Oyez-derived 'justice.csv' table); Oyez content is CC BY-NC",
    "hudoc": "ECHR HUDOC: free reuse for non-commercial purposes with the source named (Court's terms of use)",
    "echr_guides": "ECHR Case-Law Guides: free reuse for non-commercial purposes with the source named",
    "cn": "China Judgments Online documents (public court judgments); research copies carry no licence",
    "casefacts": "CC BY-NC 4.0 (CaseFacts, idirlab/supreme-court-dataset)",
    "aquaechr": "MIT (AQuAECHR, santoshTYSS/AQuAECHR)",
    "casegen": "CC BY-NC-SA 4.0 (CaseGen, CSHaitao/CaseGen)",
    "barexam": "CC BY-SA 4.0 (reglab/barexam_qa per its dataset card)",
}

# Fixed Parquet writer settings: the file depends on the rows alone.
PARQUET_OPTIONS = dict(compression="zstd", compression_level=3, version="2.6", use_dictionary=True,
                       write_statistics=True, data_page_version="1.0", row_group_size=100_000)


class NothingToRelease(RuntimeError):
    """The release's table has no row to release (not built yet, or every item removed by its checks)."""


@dataclass(frozen=True)
class Release:
    path: Path
    files: dict[str, str]          # relative path -> sha256
    manifest_sha256: str


def _plain(value):
    """A JSON-ready Python value for one cell (numpy, dates, decimals, bytes, NaN)."""
    if value is None:
        return None
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, (pd.Timestamp, dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is pd.NaT:
        return None
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    columns = list(frame.columns)
    return [{c: _plain(v) for c, v in zip(columns, row)} for row in frame.itertuples(index=False, name=None)]


def canonical_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by their canonical JSON form: the order rows arrived in does not matter."""
    if frame.empty:
        return frame.reset_index(drop=True)
    keys = [json.dumps(r, sort_keys=True, ensure_ascii=False, default=str) for r in _records(frame)]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return frame.iloc[order].reset_index(drop=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # pandas metadata names the library version only; drop it so the file depends on rows and schema
    table = table.replace_schema_metadata(None)
    pq.write_table(table, path, **PARQUET_OPTIONS)


def _write_jsonl(records: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, default=str))
            out.write("\n")


def md_table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_card(dataset: str, tables: dict[str, pd.DataFrame], card: dict, payload_digest: str | None,
                payload_count: int) -> str:
    """The dataset card as Markdown. `card` keys (all optional): title, description, sources (names of
    LICENCES), distributions {name: {value: count}}, quality [rows], stages [{stage, model, template_id,
    template_sha}], notes."""
    parts = [f"# {card.get('title', dataset)}", ""]
    if card.get("description"):
        parts += [card["description"].strip(), ""]
    parts += ["## Tables", "", md_table(
        ["table", "rows", "columns"],
        [[name, len(frame), ", ".join(map(str, frame.columns))] for name, frame in sorted(tables.items())]), ""]
    for name, distribution in sorted(card.get("distributions", {}).items()):
        total = sum(distribution.values()) or 1
        rows = [[k, v, f"{100 * v / total:.1f}%"] for k, v in sorted(distribution.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        parts += [f"## Distribution: {name}", "", md_table(["value", "count", "share"], rows), ""]
    if card.get("quality"):
        keys = ["table_name", "suite", "success", "rows_checked", "rows_failed", "batch_rejected", "batches"]
        rows = [[q.get(k) for k in keys] for q in sorted(card["quality"], key=lambda q: str(q.get("table_name")))]
        parts += ["## Quality gate (per table, over all batches of its current data)", "", md_table(keys, rows), ""]
    if card.get("stages"):
        keys = ["stage", "model", "template_id", "template_sha"]
        rows = [[s.get(k) for k in keys] for s in sorted(card["stages"], key=lambda s: json.dumps(s, sort_keys=True))]
        parts += ["## Models and prompts per stage", "", md_table(keys, rows), ""]
    parts += ["## Provenance", ""]
    if payload_digest:
        parts += [f"{payload_count} upstream payloads are listed with their sha256 in "
                  f"`provenance/source_payloads.tsv`; sha256 of that list: `{payload_digest}`.", ""]
    else:
        parts += ["No upstream payload list was given for this release.", ""]
    sources = sorted(card.get("sources", []))
    if sources:
        rows = [[s, LICENCES.get(s, "UNKNOWN: add it to caseforge.release.LICENCES")] for s in sources]
        parts += ["## Licences of the sources", "", md_table(["source", "licence"], rows), ""]
    if card.get("notes"):
        parts += ["## Notes", "", card["notes"].strip(), ""]
    parts += [f"Every file's sha256 is in `{MANIFEST}`.", ""]
    return "\n".join(parts)


def write_release(folder: str | Path, dataset: str, tables: dict[str, pd.DataFrame], card: dict,
                  source_payloads: pd.DataFrame | None = None) -> Release:
    """Write the release of `dataset` into `folder` (replacing an older one as a whole) and return its manifest.

    `source_payloads`: optional frame with columns source, key, sha256 (the payloads behind the rows).
    """
    if not dataset or "/" in dataset or dataset.startswith("."):
        raise ValueError(f"bad dataset name {dataset!r}")
    final = Path(folder).resolve()
    if final.exists() and not final.is_dir():
        raise ValueError(f"release folder {final} exists and is not a folder")
    out_dir = final.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = out_dir / f".{final.name}.{uuid.uuid4().hex}.tmp"
    (staging / "data").mkdir(parents=True)
    try:
        ordered = {name: canonical_order(frame) for name, frame in tables.items()}
        for name, frame in sorted(ordered.items()):
            _write_parquet(frame, staging / "data" / f"{name}.parquet")
            _write_jsonl(_records(frame), staging / "data" / f"{name}.jsonl")
        payload_digest, payload_count = None, 0
        if source_payloads is not None:
            (staging / "provenance").mkdir()
            listed = source_payloads[["source", "key", "sha256"]].drop_duplicates()
            listed = listed.sort_values(["source", "key", "sha256"]).astype(str)
            text = "source\tkey\tsha256\n" + "".join(f"{s}\t{k}\t{h}\n" for s, k, h in listed.itertuples(index=False))
            (staging / "provenance" / "source_payloads.tsv").write_text(text, encoding="utf-8", newline="\n")
            payload_digest, payload_count = hashlib.sha256(text.encode()).hexdigest(), len(listed)
        card_text = render_card(dataset, ordered, card, payload_digest, payload_count)
        (staging / "README.md").write_text(card_text, encoding="utf-8", newline="\n")
        files = {p.relative_to(staging).as_posix(): _sha256(p) for p in sorted(staging.rglob("*")) if p.is_file()}
        manifest = "".join(f"{sha}  {rel}\n" for rel, sha in sorted(files.items()))
        (staging / MANIFEST).write_text(manifest, encoding="utf-8", newline="\n")
        if final.exists():
            retired = out_dir / f".{final.name}.{uuid.uuid4().hex}.old"
            final.rename(retired)
            staging.rename(final)
            shutil.rmtree(retired)
        else:
            staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Release(final, files, hashlib.sha256(manifest.encode()).hexdigest())


def read_manifest(release_dir: str | Path) -> dict[str, str]:
    """relative path -> sha256 from a release's manifest ({} when there is none)."""
    path = Path(release_dir) / MANIFEST
    if not path.exists():
        return {}
    entries = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sha, rel = line.split("  ", 1)
        entries[rel] = sha
    return entries


def verify_release(release_dir: str | Path) -> list[str]:
    """One line per file whose bytes no longer match the manifest (empty when the release is intact)."""
    release_dir = Path(release_dir)
    problems = []
    manifest = read_manifest(release_dir)
    if not manifest:
        return [f"{release_dir}: no {MANIFEST}"]
    for rel, sha in manifest.items():
        path = release_dir / rel
        if not path.exists():
            problems.append(f"{rel}: missing")
        elif _sha256(path) != sha:
            problems.append(f"{rel}: sha256 differs from the manifest")
    return problems
