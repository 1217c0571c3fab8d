"""The Croissant 1.1 metadata of a release (croissant.json: one FileObject per data file, one RecordSet per split)
and mlcroissant's verdict on it."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from caseforge.release.content import ReleaseContent
from caseforge.release.layout import CROISSANT, PAYLOADS
from caseforge.release.licences import LICENCE_URLS, LICENCES, licence_id

CROISSANT_SPEC = "http://mlcommons.org/croissant/1.1"

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


def croissant(dataset: str, release: ReleaseContent) -> dict:
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
    if release.judge is not None:
        doc.update(release.judge.rai())
    return doc


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
