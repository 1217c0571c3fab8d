"""Release snapshots: Parquet + JSONL per table, a dataset card, Croissant metadata and a manifest, byte-identical
on re-runs.

`write_release(folder, dataset, tables, card, columns=..., date_column=...)` writes the release into `folder`
(replacing an older one there as a whole):

    README.md                 the dataset card: Hugging Face front matter (licence, languages, tasks, size, configs
                              with one data file per split), columns with their types and meanings, the fresh split
                              and its cutoff, intended use and limitations, how it was built (models, prompt hashes,
                              quality gates, payload provenance), source licences, the method's citation, version
    croissant.json            Croissant 1.1 metadata: one FileObject per data file, one RecordSet per table
    release.json              what the next release needs: version, data digest, data date, fresh cutoff
    data/<table>.parquet      rows sorted canonically, fixed writer settings
    data/<table>.jsonl        the same rows, one JSON object a line
    data/fresh.parquet|.jsonl the rows of every table whose source document is dated after the fresh cutoff
    provenance/source_payloads.tsv   source, key, sha256 of every upstream payload behind the rows
    MANIFEST.sha256           sha256 of every other file, sorted by path

Nothing depends on when, where or by how many threads it was written: the release's date is its data date (the
newest source-document date in it), its version comes from that date and the digest of its rows, and the fresh
cutoff is chosen from the data, the settings and the previous release in the same folder. Same input, same bytes.
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
CROISSANT = "croissant.json"
METADATA = "release.json"
PAYLOADS = "provenance/source_payloads.tsv"
FRESH = "fresh"
CROISSANT_SPEC = "http://mlcommons.org/croissant/1.1"

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

# The SPDX-style licence id (as Hugging Face cards spell it) of each LICENCES entry a release can carry.
LICENCE_IDS: dict[str, str] = {
    "oyez": "cc-by-nc-4.0",
    "casefacts": "cc-by-nc-4.0",
    "aquaechr": "mit",
    "casegen": "cc-by-nc-sa-4.0",
    "barexam": "cc-by-sa-4.0",
}
LICENCE_URLS: dict[str, str] = {
    "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
    "cc-by-nc-sa-4.0": "https://creativecommons.org/licenses/by-nc-sa/4.0/",
    "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
    "mit": "https://opensource.org/license/mit",
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


def _arrow(frame: pd.DataFrame) -> pa.Table:
    # pandas metadata names the library version only; drop it so the file depends on rows and schema
    return pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)


def _write_jsonl(records: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, default=str))
            out.write("\n")


def card_rows(con, statement: str, params=None) -> list[dict]:
    """The rows of one statement under sql/ as dicts (for the card: stages, quality results, windows)."""
    from caseforge.warehouse import run_sql

    cursor = run_sql(con, statement, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def md_table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_card(dataset: str, release: "ReleaseContent") -> str:
    """The dataset card as Markdown with Hugging Face front matter.

    `release.card` keys (all optional unless said): title, description, licence (the LICENCES entry whose terms
    the release carries; required for the front matter's licence), language [codes], task_categories, tags,
    sources (names of LICENCES), distributions {name: {value: count}}, quality [rows], stages [{stage, model,
    template_id, template_sha}], build (how it was built, Markdown), intended_use, limitations, citation
    (BibTeX of the method the release follows), notes."""
    card = release.card
    parts = ["---", *front_matter(dataset, release), "---", "", f"# {card.get('title', dataset)}", ""]
    if card.get("description"):
        parts += [card["description"].strip(), ""]
    parts += [f"Version `{release.version}`; data date {release.data_date or 'unknown (no dated row)'} (the newest "
              "source-document date in the release, not the day it was written).", ""]
    parts += ["## Splits", "", md_table(
        ["split", "rows", "file"],
        [[name, release.tables[name].num_rows, f"data/{name}.parquet"] for name in release.split_names()]), ""]
    parts += ["## Columns", ""]
    for names, schema in release.schema_groups():
        parts += [f"Split{'s' if len(names) > 1 else ''} {', '.join(names)}:", "", md_table(
            ["column", "type", "meaning"],
            [[field.name, str(field.type), release.columns[field.name]] for field in schema]), ""]
    parts += ["## Fresh split", "", release.fresh.describe(release.date_column, release.tables[FRESH].num_rows), ""]
    if card.get("intended_use") or card.get("limitations"):
        parts += ["## Intended use and limitations", ""]
        if card.get("intended_use"):
            parts += [card["intended_use"].strip(), ""]
        if card.get("limitations"):
            parts += [card["limitations"].strip(), ""]
    parts += ["## How it was built", ""]
    if card.get("build"):
        parts += [card["build"].strip(), ""]
    if card.get("stages"):
        keys = ["stage", "model", "template_id", "template_sha"]
        rows = [[s.get(k) for k in keys] for s in sorted(card["stages"], key=lambda s: json.dumps(s, sort_keys=True))]
        parts += ["### Models and prompts per stage", "", md_table(keys, rows), ""]
    if card.get("quality"):
        keys = ["table_name", "suite", "success", "rows_checked", "rows_failed", "batch_rejected"]
        rows = [[q.get(k) for k in keys] for q in sorted(card["quality"], key=lambda q: str(q.get("table_name")))]
        parts += ["### Quality gate (latest result per table)", "", md_table(keys, rows), ""]
    for name, distribution in sorted(card.get("distributions", {}).items()):
        total = sum(distribution.values()) or 1
        rows = [[k, v, f"{100 * v / total:.1f}%"] for k, v in sorted(distribution.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        parts += [f"### Distribution: {name}", "", md_table(["value", "count", "share"], rows), ""]
    parts += ["### Provenance", ""]
    if release.payload_digest:
        parts += [f"{release.payload_count} upstream payloads are listed with their sha256 in "
                  f"`provenance/source_payloads.tsv`; sha256 of that list: `{release.payload_digest}`.", ""]
    else:
        parts += ["No upstream payload list was given for this release.", ""]
    if card.get("notes"):
        parts += ["### Notes", "", card["notes"].strip(), ""]
    sources = sorted(card.get("sources", []))
    if sources:
        rows = [[s, LICENCES.get(s, "UNKNOWN: add it to caseforge.release.LICENCES")] for s in sources]
        parts += ["## Licences of the sources", "", md_table(["source", "licence"], rows), ""]
    if card.get("citation"):
        parts += ["## Citation", "", "The method this release follows:", "", "```bibtex", card["citation"].strip(),
                  "```", ""]
    parts += ["## Version and date", "",
              f"Version `{release.version}`: the data date, then the first 12 hex digits of the sha256 of the rows "
              f"(`{release.data_digest}`), so the same rows always carry the same version. Data date: "
              f"{release.data_date or 'unknown'}.", "",
              f"`{CROISSANT}` holds the Croissant 1.1 metadata; every file's sha256 is in `{MANIFEST}`.", ""]
    return "\n".join(parts)


def _yaml(value) -> str:
    """A YAML scalar: JSON strings are YAML strings, whatever characters they hold."""
    return json.dumps(value, ensure_ascii=False)


def size_category(rows: int) -> str:
    """The Hugging Face size bucket of a row count."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")):
        if rows < limit:
            return name
    return "n>1T" if rows > 1_000_000_000_000 else "1B<n<10B"


def licence_id(card: dict) -> str:
    """The SPDX-style id of the licence the release carries (the card's `licence`, a LICENCES entry)."""
    try:
        return LICENCE_IDS[card["licence"]]
    except KeyError:
        raise ValueError(f"card licence {card.get('licence')!r} has no SPDX id in caseforge.release.LICENCE_IDS") from None


def front_matter(dataset: str, release: "ReleaseContent") -> list[str]:
    card = release.card
    lines = [f"license: {licence_id(card)}", "language:"]
    lines += [f"- {code}" for code in card.get("language", ["en"])]
    lines += ["task_categories:"] + [f"- {t}" for t in card.get("task_categories", ["other"])]
    lines += ["size_categories:", f"- {size_category(release.main_rows())}"]
    lines += [f"pretty_name: {_yaml(card.get('title', dataset))}"]
    if card.get("tags"):
        lines += ["tags:"] + [f"- {_yaml(t)}" for t in card["tags"]]
    lines += ["configs:", "- config_name: default", "  data_files:"]
    for name in release.split_names():
        lines += [f"  - split: {name}", f"    path: data/{name}.parquet"]
    return lines


# --- Croissant ------------------------------------------------------------------------------------------------
CROISSANT_CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "arrayShape": "cr:arrayShape", "containedIn": "cr:containedIn",
    "extract": "cr:extract", "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5",
    "parentField": "cr:parentField", "path": "cr:path", "prov": "http://www.w3.org/ns/prov#",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated",
    "replace": "cr:replace", "samplingRate": "cr:samplingRate", "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}


def croissant_type(arrow_type: pa.DataType) -> str | None:
    """The Croissant dataType of a scalar Arrow type (None for lists and structs)."""
    if pa.types.is_boolean(arrow_type):
        return "sc:Boolean"
    if pa.types.is_integer(arrow_type):
        return "sc:Integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "sc:Float"
    if pa.types.is_date(arrow_type):
        return "sc:Date"
    if pa.types.is_timestamp(arrow_type):
        return "sc:DateTime"
    if pa.types.is_nested(arrow_type):
        return None
    return "sc:Text"       # strings, binary (hex in JSONL), and all-null columns


def _list_item(arrow_type: pa.DataType) -> pa.DataType | None:
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return arrow_type.value_type
    return None


def _croissant_field(field_id: str, name: str, arrow_type: pa.DataType, file_id: str, column: str,
                     json_path: str | None, description: str, depth: int = 0) -> dict:
    """One cr:Field for a column (or, below a struct, one of its members), read from the Parquet file.

    Scalars and lists of scalars are plain fields (`isArray` for lists); a struct, or a list of structs, has one
    subField per member, read with a JSON path from the same column. mlcroissant reads one level of members;
    members nested deeper are named in the description and left to the Parquet and JSONL files."""
    source: dict = {"fileObject": {"@id": file_id}, "extract": {"column": column}}
    if json_path:
        source["transform"] = {"jsonPath": json_path}
    node: dict = {"@type": "cr:Field", "@id": field_id, "name": name, "description": description}
    item = _list_item(arrow_type)
    inner = item if item is not None else arrow_type
    if item is not None:
        node["isArray"] = True
        node["arrayShape"] = "-1"
    if pa.types.is_struct(inner):
        node["dataType"] = "sc:Text"
        members, deeper = [], []
        for member in inner:
            member_item = _list_item(member.type)
            nested = pa.types.is_nested(member.type) and not (member_item is not None
                                                               and not pa.types.is_nested(member_item))
            if depth > 0 or nested:
                deeper.append(member.name)
                continue
            members.append(_croissant_field(f"{field_id}/{member.name}", member.name, member.type, file_id, column,
                                            member.name, f"member {member.name} of {name}", depth + 1))
        if deeper:
            node["description"] += (f" (Croissant describes one level of members here; {', '.join(deeper)}, "
                                    "nested deeper, is read from the Parquet or JSONL file)")
        if members:
            node["subField"] = members
        else:
            node["source"] = source
        return node
    node["dataType"] = croissant_type(inner) or "sc:Text"
    node["source"] = source
    return node


def croissant(dataset: str, release: "ReleaseContent") -> dict:
    card = release.card
    distribution = []
    for rel, sha in sorted(release.files.items()):
        if not rel.startswith("data/"):
            continue
        fmt = "application/x-parquet" if rel.endswith(".parquet") else "application/jsonlines"
        distribution.append({"@type": "cr:FileObject", "@id": rel, "name": rel, "contentUrl": rel,
                             "encodingFormat": fmt, "sha256": sha})
    if release.payload_digest:
        distribution.append({"@type": "cr:FileObject", "@id": PAYLOADS, "name": PAYLOADS, "contentUrl": PAYLOADS,
                             "encodingFormat": "text/tab-separated-values", "sha256": release.files[PAYLOADS],
                             "description": "source, key and sha256 of every upstream payload behind the rows"})
    record_sets = []
    for name in release.split_names():
        file_id = f"data/{name}.parquet"
        fields = [_croissant_field(f"{name}/{f.name}", f.name, f.type, file_id, f.name, None,
                                   release.columns[f.name]) for f in release.tables[name].schema]
        record_sets.append({"@type": "cr:RecordSet", "@id": name, "name": name,
                            "description": f"split {name} of {dataset} ({release.tables[name].num_rows} rows)",
                            "field": fields})
    used = [{"@type": "prov:Entity", "name": s, "description": LICENCES.get(s, "")} for s in sorted(card.get("sources", []))]
    steps = [{"@type": "prov:Activity", "name": str(s.get("stage")), "description":
              f"model {s.get('model')}, prompt {s.get('template_id')} sha256 {s.get('template_sha')}"}
             for s in sorted(card.get("stages", []), key=lambda s: json.dumps(s, sort_keys=True, default=str))]
    doc = {
        "@context": CROISSANT_CONTEXT, "@type": "sc:Dataset", "conformsTo": CROISSANT_SPEC,
        "name": dataset, "description": (card.get("description") or card.get("title") or dataset).strip(),
        "license": LICENCE_URLS[licence_id(card)], "version": release.version,
        "citeAs": (card.get("citation") or "").strip() or dataset,
        "inLanguage": list(card.get("language", ["en"])), "keywords": list(card.get("tags", [])),
        "distribution": distribution, "recordSet": record_sets,
        "prov:wasDerivedFrom": used,
        "prov:wasGeneratedBy": steps or [{"@type": "prov:Activity", "name": "caseforge",
                                          "description": "selected from curated tables by SQL, no model involved"}],
    }
    if release.data_date:
        doc["datePublished"] = release.data_date
    return doc


# --- the fresh split ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FreshCutoff:
    cutoff: str | None     # ISO date; rows dated strictly after it are fresh (None: no row is)
    rule: str              # setting | same_data | previous_release | newest_months | no_dates
    reason: str

    def describe(self, date_column: str, rows: int) -> str:
        if self.cutoff is None:
            return f"The fresh split is empty: {self.reason}."
        return (f"`fresh` holds the {rows} row{'' if rows == 1 else 's'} whose `{date_column}` is after "
                f"{self.cutoff}: {self.reason}. "
                "It repeats rows of the other splits (same columns), for evaluating on documents newer than a "
                "model's training data; set `[release] fresh_after` in the settings to choose the cutoff.")


def _as_date(value) -> dt.date | None:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (pd.Timestamp, dt.datetime)):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def choose_cutoff(newest: dt.date | None, data_digest: str, previous: dict | None, fresh_after: str,
                  fresh_months: int) -> FreshCutoff:
    """The fresh cutoff, from the data and settings alone (never the clock):

    1. `[release] fresh_after` when set;
    2. the previous release in the folder holds the same rows: its cutoff again (a rewrite is the same release);
    3. a previous release with a data date: that date (fresh = what is newer than the last release);
    4. no previous release: `fresh_months` months before the newest date in the data.
    """
    if fresh_after:
        cutoff = _as_date(fresh_after)
        return FreshCutoff(cutoff.isoformat(), "setting", f"cutoff {cutoff} set by `[release] fresh_after`")
    if previous and previous.get("data_digest") == data_digest and previous.get("fresh"):
        kept = previous["fresh"]
        return FreshCutoff(kept.get("cutoff"), kept.get("rule", "same_data"), kept.get("reason", ""))
    if previous and previous.get("data_date"):
        return FreshCutoff(previous["data_date"], "previous_release",
                           f"the newest source-document date of the previous release in this folder "
                           f"(version {previous.get('version')})")
    if newest is None:
        return FreshCutoff(None, "no_dates", "no row has a source-document date")
    cutoff = (pd.Timestamp(newest) - pd.DateOffset(months=fresh_months)).date()
    return FreshCutoff(cutoff.isoformat(), "newest_months",
                       f"no previous release in this folder, so the last {fresh_months} months before the newest "
                       f"source-document date ({newest}) are fresh (`[release] fresh_months`)")


def _previous_release(final: Path) -> dict | None:
    path = final / METADATA
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def release_settings() -> dict:
    from caseforge import settings_file

    found = settings_file.section("release")
    return {"fresh_after": str(found.get("fresh_after") or ""), "fresh_months": int(found.get("fresh_months", 12))}


# --- the writer -----------------------------------------------------------------------------------------------
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


def _write_table(frame: pd.DataFrame, table: pa.Table, folder: Path, name: str) -> dict[str, str]:
    pq.write_table(table, folder / f"{name}.parquet", **PARQUET_OPTIONS)
    _write_jsonl(_records(frame), folder / f"{name}.jsonl")
    return {f"data/{name}.{ext}": _sha256(folder / f"{name}.{ext}") for ext in ("parquet", "jsonl")}


def write_release(folder: str | Path, dataset: str, tables: dict[str, pd.DataFrame], card: dict,
                  source_payloads: pd.DataFrame | None = None, *, columns: dict[str, str], date_column: str,
                  fresh_after: str | None = None, fresh_months: int | None = None) -> Release:
    """Write the release of `dataset` into `folder` (replacing an older one as a whole) and return its manifest.

    `columns`: the meaning of every released column (a column without one is refused). `date_column`: the column,
    in every table, holding the date of the row's source document (decision or judgment date); it dates the
    release and picks the fresh split. `fresh_after` / `fresh_months`: the settings' `[release]` values unless
    given. `source_payloads`: optional frame with columns source, key, sha256 (the payloads behind the rows).
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
    final = Path(folder).resolve()
    if final.exists() and not final.is_dir():
        raise ValueError(f"release folder {final} exists and is not a folder")
    previous = _previous_release(final)
    out_dir = final.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = out_dir / f".{final.name}.{uuid.uuid4().hex}.tmp"
    (staging / "data").mkdir(parents=True)
    try:
        ordered = {name: canonical_order(frame) for name, frame in sorted(tables.items())}
        arrow = {name: _arrow(frame) for name, frame in ordered.items()}
        files: dict[str, str] = {}
        for name, frame in ordered.items():
            files.update(_write_table(frame, arrow[name], staging / "data", name))
        data_digest = hashlib.sha256("".join(f"{files[f'data/{name}.jsonl']}  {name}\n"
                                             for name in ordered).encode()).hexdigest()
        dates = {name: [_as_date(v) for v in frame[date_column]] for name, frame in ordered.items()}
        known = [d for values in dates.values() for d in values if d is not None]
        newest = max(known) if known else None
        fresh = choose_cutoff(newest, data_digest, previous, fresh_after, fresh_months)
        cutoff = _as_date(fresh.cutoff) if fresh.cutoff else None
        picked = [frame[[d is not None and cutoff is not None and d > cutoff for d in dates[name]]]
                  for name, frame in ordered.items()]
        schema = pa.unify_schemas([t.schema for t in arrow.values()], promote_options="permissive")
        fresh_frame = canonical_order(pd.concat(picked, ignore_index=True))
        arrow[FRESH] = pa.Table.from_pandas(fresh_frame, schema=schema, preserve_index=False).replace_schema_metadata(None)
        files.update(_write_table(fresh_frame, arrow[FRESH], staging / "data", FRESH))
        data_date = newest.isoformat() if newest else None
        version = (f"{newest.year}.{newest.month}.{newest.day}" if newest else "0.0.0") + f"+{data_digest[:12]}"
        content = ReleaseContent(card, dict(columns), date_column, arrow, files, data_digest, data_date, version, fresh)
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


def _write_json(value, path: Path) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False) + "\n", encoding="utf-8",
                    newline="\n")


def validate_croissant(release_dir: str | Path, load_records: bool = True) -> list[str]:
    """mlcroissant's verdict on a release's croissant.json: its errors and warnings, one line each (empty when
    clean); with `load_records`, every record set is also read from the local files."""
    import mlcroissant as mlc

    path = Path(release_dir) / CROISSANT
    try:
        found = mlc.Dataset(jsonld=str(path))
    except mlc.ValidationError as exc:
        return [line for line in str(exc).splitlines() if line.strip()]
    except (OSError, ValueError) as exc:       # missing, or not JSON
        return [f"{path}: {exc}"]
    problems = sorted(found.metadata.ctx.issues.warnings)
    if load_records:
        for record_set in found.metadata.record_sets:
            try:
                for _ in found.records(record_set.uuid):
                    pass
            except Exception as exc:          # noqa: BLE001 - any failure to read is the verdict
                problems.append(f"record set {record_set.name}: {type(exc).__name__}: {exc}")
    return problems


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
