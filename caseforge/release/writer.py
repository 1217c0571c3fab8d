"""The release writer: `write_release` (canonical row order, Parquet and JSONL per split with fixed settings, the
fresh split, release.json, the card, croissant.json, the payload list and the manifest, swapped into place as a
whole), and `read_manifest` / `verify_release` to check a written release against its manifest."""
from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from caseforge.outputs import prepare_folder, staged_folder
from caseforge.release.card import render_card
from caseforge.release.content import ReleaseContent
from caseforge.release.croissant import croissant
from caseforge.release.fresh import _as_date, _previous_release, choose_cutoff, release_settings
from caseforge.release.harness import HarnessSpec, bytecode_of_listed, write_harness
from caseforge.release.layout import CROISSANT, FRESH, JUDGE_PICTURE, MANIFEST, METADATA, PAYLOADS
from caseforge.release.stored import (is_store_url, local_folder, prepare_store_release, release_folder_name,
                                      uploaded_when_done)

# Fixed Parquet writer settings: the file depends on the rows alone.
PARQUET_OPTIONS = dict(compression="zstd", compression_level=3, version="2.6", use_dictionary=True,
                       write_statistics=True, data_page_version="1.0", row_group_size=100_000)


class NothingToRelease(RuntimeError):
    """The release's table has no row to release (not built yet, or every item removed by its checks)."""


class ReleaseHeld(RuntimeError):
    """The release policy holds the release back ([review.policy] below = "hold"): the reason in one line."""


@dataclass(frozen=True)
class Release:
    path: Path | str               # the release folder, or on a store the URL of the release's own folder
    files: dict[str, str]          # relative path -> sha256
    manifest_sha256: str
    unchanged: bool = False        # the same release was already there (a store: nothing was uploaded)


def _cell(value):
    """A pandas cell as the Python value Arrow takes: a missing value (None, NaN, pd.NA, NaT) is None, numpy values
    and arrays plain Python, a Timestamp a datetime."""
    if isinstance(value, np.ndarray):
        return [_cell(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_cell(v) for v in value]
    if isinstance(value, dict):
        return {k: _cell(v) for k, v in value.items()}
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value


def _plain(value):
    """A JSON value for one Arrow value: dates and times in ISO 8601, decimals as text, bytes as hex."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _records(table: pa.Table) -> list[dict]:
    return [{name: _plain(value) for name, value in row.items()} for row in table.to_pylist()]


def null_typed(arrow_type: pa.DataType) -> bool:
    """Whether `arrow_type` is null anywhere inside it (a list of null, a struct member of type null)."""
    if pa.types.is_null(arrow_type):
        return True
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return null_typed(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return any(null_typed(member.type) for member in arrow_type)
    return False


def _unknown_keys(value, arrow_type: pa.DataType, where: str) -> list[str]:
    """Dict keys in `value` that `arrow_type` has no member for (Arrow would drop them without a word)."""
    if isinstance(value, dict) and pa.types.is_struct(arrow_type):
        members = {m.name: m.type for m in arrow_type}
        found = [f"{where}.{k}" for k in value if k not in members]
        return found + [p for k, v in value.items() if k in members for p in _unknown_keys(v, members[k], f"{where}.{k}")]
    if isinstance(value, list) and (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        return [p for v in value for p in _unknown_keys(v, arrow_type.value_type, f"{where}[]")]
    return []


def typed_table(dataset: str, name: str, frame: pd.DataFrame, types: dict[str, pa.DataType]) -> pa.Table:
    """The rows of one split as Arrow, every column typed: by `types` (the warehouse's own types, and those of the
    columns a release builds from JSON), else as Arrow infers it. A column whose type would still be null somewhere
    (null in every row, a list empty in every row: readers such as `datasets` then type it Value('null')), and a
    value with a member its struct type lacks, are refused with their names."""
    arrays = []
    for column in frame.columns:
        values = [_cell(v) for v in frame[column]]
        arrow_type = types.get(column)
        if arrow_type is not None:
            lost = sorted({p for v in values for p in _unknown_keys(v, arrow_type, column)})
            if lost:
                raise ValueError(f"{dataset}: {name}: {', '.join(lost)} has no place in the type of {column} "
                                 f"({arrow_type}): add it to the release's types")
        arrays.append(pa.array(values, type=arrow_type))
    table = pa.Table.from_arrays(arrays, names=[str(c) for c in frame.columns])
    untyped = [f"{f.name} ({f.type})" for f in table.schema if null_typed(f.type)]
    if untyped:
        raise ValueError(f"{dataset}: {name}: no type for column(s) {', '.join(untyped)}: give each its Arrow "
                         "type (the release's `types`)")
    return table


def canonical_order(table: pa.Table) -> pa.Table:
    """Rows sorted by their canonical JSON form: the order rows arrived in does not matter."""
    keys = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in _records(table)]
    return table.take(pa.array(sorted(range(len(keys)), key=keys.__getitem__), pa.int64()))


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _write_jsonl(records: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, default=str))
            out.write("\n")



def _write_table(table: pa.Table, folder: Path, name: str) -> dict[str, str]:
    pq.write_table(table, folder / f"{name}.parquet", **PARQUET_OPTIONS)
    _write_jsonl(_records(table), folder / f"{name}.jsonl")
    return {f"data/{name}.{ext}": _sha256(folder / f"{name}.{ext}") for ext in ("parquet", "jsonl")}


def write_release(folder: str | Path, dataset: str, tables: dict[str, pd.DataFrame], card: dict,
                  source_payloads: pd.DataFrame | None = None, *, columns: dict[str, str], date_column: str,
                  types: dict[str, pa.DataType] | None = None, fresh_after: str | None = None,
                  fresh_months: int | None = None, judge=None, harness: HarnessSpec | None = None) -> Release:
    """Write the release of `dataset` into `folder` (replacing an older one as a whole) and return its manifest.
    `folder` may be a store URL (s3://bucket/prefix, gs://…): the release is written to a temporary folder, then
    uploaded to a folder of its own there and pointed to (caseforge.release.stored).

    `columns`: the meaning of every released column (a column without one is refused). `types`: the Arrow type of
    columns whose type the rows alone cannot tell (typed_table; a column left untyped is refused). The JSONL holds
    JSON nulls for missing values and ISO 8601 dates. `date_column`: the column,
    in every table, holding the date of the row's source document (decision or judgment date); it dates the
    release and picks the fresh split. `fresh_after` / `fresh_months`: the settings' `[release]` values unless
    given. `source_payloads`: optional frame with columns source, key, sha256 (the payloads behind the rows).
    `judge`: the judge card (caseforge.review.card.JudgeCard) of a benchmark an LLM judge filtered: a section of
    the card, Croissant's Responsible-AI fields, its confusion matrices as a picture.
    `harness`: the benchmark's harness tasks, written into harness/ (caseforge.release.harness).
    """
    if not dataset or "/" in dataset or dataset.startswith("."):
        raise ValueError(f"bad dataset name {dataset!r}")
    if FRESH in tables:
        raise ValueError(f"table name {FRESH!r} is the release's own fresh split")
    missing = sorted({str(c) for frame in tables.values() for c in frame.columns} - set(columns))
    if missing:
        raise ValueError(f"{dataset}: no meaning for released column(s) {', '.join(missing)}: add them to the "
                         "dataset's column dictionary (tasks/<dataset>/release_columns.py)")
    undated = sorted(name for name, frame in tables.items() if date_column not in frame.columns)
    if undated:
        raise ValueError(f"{dataset}: table(s) {', '.join(undated)} lack the date column {date_column!r}")
    if fresh_after is None or fresh_months is None:
        configured = release_settings()
        fresh_after = configured["fresh_after"] if fresh_after is None else fresh_after
        fresh_months = configured["fresh_months"] if fresh_months is None else fresh_months
    if is_store_url(folder):            # an object store: uploaded when written, then pointed to (stored.py)
        final, target = None, prepare_store_release(str(folder), dataset)
        previous = target.previous_metadata()
    else:
        final, target = prepare_release_folder(local_folder(folder), dataset), None
        previous = _previous_release(final)
    before = (target.current or {}).get("manifest_sha256") if target is not None else \
        (_sha256(final / MANIFEST) if (final / MANIFEST).is_file() else None)
    with staged_folder(final) if target is None else uploaded_when_done(target) as staging:
        (staging / "data").mkdir()
        arrow = {name: canonical_order(typed_table(dataset, name, frame, types or {}))
                 for name, frame in sorted(tables.items())}
        files: dict[str, str] = {}
        for name, table in arrow.items():
            files.update(_write_table(table, staging / "data", name))
        data_digest = hashlib.sha256("".join(f"{files[f'data/{name}.jsonl']}  {name}\n"
                                             for name in arrow).encode()).hexdigest()
        dates = {name: [_as_date(v) for v in table[date_column].to_pylist()] for name, table in arrow.items()}
        known = [d for values in dates.values() for d in values if d is not None]
        newest = max(known) if known else None
        fresh = choose_cutoff(newest, data_digest, previous, fresh_after, fresh_months)
        cutoff = _as_date(fresh.cutoff) if fresh.cutoff else None
        picked = [table.filter(pa.array([d is not None and cutoff is not None and d > cutoff for d in dates[name]],
                                        pa.bool_()))
                  for name, table in arrow.items()]
        arrow[FRESH] = canonical_order(pa.concat_tables(picked, promote_options="permissive"))
        files.update(_write_table(arrow[FRESH], staging / "data", FRESH))
        data_date = newest.isoformat() if newest else None
        version = (f"{newest.year}.{newest.month}.{newest.day}" if newest else "0.0.0") + f"+{data_digest[:12]}"
        content = ReleaseContent(card, dict(columns), date_column, arrow, files, data_digest, data_date, version, fresh,
                                 judge=judge, harness=harness)
        if judge is not None and judge.picture:
            picture = staging / JUDGE_PICTURE
            picture.parent.mkdir()
            picture.write_bytes(judge.picture)
        if harness is not None:
            write_harness(staging, dataset, harness, content, PARQUET_OPTIONS)
        if source_payloads is not None:
            (staging / "provenance").mkdir()
            listed = source_payloads[["source", "key", "sha256"]].drop_duplicates()
            listed = listed.sort_values(["source", "key", "sha256"]).astype(str)
            text = "source\tkey\tsha256\n" + "".join(f"{s}\t{k}\t{h}\n" for s, k, h in listed.itertuples(index=False))
            (staging / PAYLOADS).write_text(text, encoding="utf-8", newline="\n")
            content.payload_digest, content.payload_count = hashlib.sha256(text.encode()).hexdigest(), len(listed)
            files[PAYLOADS] = _sha256(staging / PAYLOADS)
        metadata = {"dataset": dataset, "version": version, "data_digest": data_digest, "data_date": data_date,
                    "date_column": date_column,
                    "fresh": {"cutoff": fresh.cutoff, "rule": fresh.rule, "reason": fresh.reason,
                              "rows": arrow[FRESH].num_rows},
                    "splits": {name: arrow[name].num_rows for name in content.split_names()}}
        _write_json(metadata, staging / METADATA)
        _write_json(croissant(dataset, content), staging / CROISSANT)
        (staging / "README.md").write_text(render_card(dataset, content), encoding="utf-8", newline="\n")
        files = {p.relative_to(staging).as_posix(): _sha256(p) for p in sorted(staging.rglob("*")) if p.is_file()}
        manifest = "".join(f"{sha}  {rel}\n" for rel, sha in sorted(files.items()))
        (staging / MANIFEST).write_text(manifest, encoding="utf-8", newline="\n")
    where = final if target is None else f"{target.store.url}/{release_folder_name(version)}"
    manifest_sha256 = hashlib.sha256(manifest.encode()).hexdigest()
    same_folder = target is None or (target.current or {}).get("folder") == release_folder_name(version)
    return Release(where, files, manifest_sha256, unchanged=same_folder and before == manifest_sha256)


def not_our_release(folder: Path, dataset: str) -> str | None:
    """Why `folder` is not a caseforge release of `dataset` that write_release may replace (None: it is one):
    its release.json names the dataset, and it holds nothing its manifest does not list (but the bytecode Python
    caches for the release's own harness files when they run in place)."""
    try:
        metadata = json.loads((folder / METADATA).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"is not a caseforge release (no {METADATA})"
    except (OSError, ValueError):
        return f"is not a caseforge release (its {METADATA} is not one caseforge wrote)"
    if not isinstance(metadata, dict) or not {"dataset", "version", "data_digest"} <= set(metadata):
        return f"is not a caseforge release (its {METADATA} is not one caseforge wrote)"
    if metadata["dataset"] != dataset:
        return f"is the {metadata['dataset']!r} release, not {dataset!r}"
    try:
        listed = set(read_manifest(folder)) | {MANIFEST}
    except ValueError:
        return f"has a {MANIFEST} caseforge did not write"
    found = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    extra = sorted(rel for rel in found if rel not in listed and not bytecode_of_listed(rel, listed))
    if extra:
        more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
        return f"is a {dataset} release with file(s) it did not write ({', '.join(extra[:3])}{more})"
    return None


def prepare_release_folder(folder: str | Path, dataset: str) -> Path:
    """The folder the `dataset` release may be written to (caseforge.outputs.prepare_folder: missing, empty, or
    a release of the same dataset with nothing added); OutputRefused (one line) otherwise."""
    return prepare_folder(folder, lambda found: not_our_release(found, dataset), f"the {dataset} release")


def _write_json(value, path: Path) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False) + "\n", encoding="utf-8",
                    newline="\n")



def read_manifest(release_dir: str | Path) -> dict[str, str]:
    """relative path -> sha256 from a release's manifest ({} when there is none)."""
    path = Path(release_dir) / MANIFEST
    if not path.exists():
        return {}
    entries = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        sha, separator, rel = line.partition("  ")
        if not separator or not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ValueError(f"{path}:{number}: not a '<sha256>  <path>' line")
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
