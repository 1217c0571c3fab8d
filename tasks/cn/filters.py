"""CaseGen-style document filters as configuration; every exclusion keeps its reasons.

Defaults follow the CaseGen method: drop documents whose facts are shorter than 50 characters,
that went through a simplified procedure (简易程序, 速裁, 小额诉讼), or whose structure is
broken (not `complete`); keep only documents with both the plaintiff's claims and the
defendant's defense. A JSON file with any of the fields below overrides the defaults.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from caseforge.tasks.cn.text import normalise_for_compare


@dataclass(frozen=True)
class FilterConfig:
    name: str = "casegen"
    min_facts_chars: int = 50            # counted on facts without whitespace and punctuation
    exclude_simplified: tuple[str, ...] = ("简易程序", "速裁", "小额诉讼")
    require_complete: bool = True
    require_claims: bool = True
    require_defense: bool = True
    case_types: tuple[str, ...] = ()     # e.g. ("民事",); empty: any
    doc_types: tuple[str, ...] = ()      # e.g. ("判决书",); empty: any
    source_formats: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        """Name plus a hash of the settings, so decisions of different settings never mix."""
        body = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return f"{self.name}:{hashlib.sha256(body.encode()).hexdigest()[:10]}"


def load_filter_config(path: str | Path | None) -> FilterConfig:
    if path is None:
        return FilterConfig()
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    known = {f.name for f in fields(FilterConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"filter config {path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for name in ("exclude_simplified", "case_types", "doc_types", "source_formats"):
        if name in data:
            data[name] = tuple(data[name])
    return FilterConfig(**data)


def filter_reasons(doc: dict, config: FilterConfig) -> list[str]:
    """Why a document is excluded (empty list: kept). `doc` holds the curated columns."""
    reasons = []
    if len(normalise_for_compare(doc.get("facts"))) < config.min_facts_chars:
        reasons.append(f"facts_shorter_than_{config.min_facts_chars}")
    if doc.get("simplified") and doc["simplified"] in config.exclude_simplified:
        reasons.append(f"simplified_procedure:{doc['simplified']}")
    if config.require_complete and not doc.get("complete"):
        reasons.append("broken_structure")
    if config.require_claims and not doc.get("claims"):
        reasons.append("no_claims")
    if config.require_defense and not doc.get("defense"):
        reasons.append("no_defense")
    if config.case_types and doc.get("case_type") not in config.case_types:
        reasons.append(f"case_type:{doc.get('case_type')}")
    if config.doc_types and doc.get("doc_type") not in config.doc_types:
        reasons.append(f"doc_type:{doc.get('doc_type')}")
    if config.source_formats and doc.get("source_format") not in config.source_formats:
        reasons.append(f"source_format:{doc.get('source_format')}")
    return reasons
