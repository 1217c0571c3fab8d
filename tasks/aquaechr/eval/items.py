"""Evaluation items and the passage corpus their citations resolve to.

Items come from curated.aquaechr_qa (kept rows) or from a released expert-annotation file (a JSON list
of {question_number, question, answer, citations: [{case_id, case_name, paragraph_numbers,
paragraphs_map}], generations: [...]}). Passage ids are "<itemid>#<para_no>".
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from caseforge.warehouse.statements import run_sql


@dataclass(frozen=True)
class Passage:
    pid: str
    itemid: str
    para_no: str
    case_name: str
    text: str

    def shown(self) -> str:
        """How a passage is shown to a model."""
        return f"{self.case_name}; § {self.para_no}: {self.text}"


@dataclass
class EvalItem:
    item_id: str
    question: str
    answer: str
    gold: list[str]                                     # cited passage ids, in order
    passages: list[Passage] = field(default_factory=list)  # texts the item file itself carries


def passage_id(itemid: str, para_no) -> str:
    return f"{itemid}#{para_no}"


def _clean_paragraph(text: str) -> str:
    return re.sub(r"^[\s.]+", "", text or "").strip()


_SHOWN_PREFIX = re.compile(r"^.*?;\s*§\s*\d+\s*:\s*", re.DOTALL)


def load_annotation_file(path: Path, names_path: Path | None = None) -> tuple[list[EvalItem], list[tuple[str, str]]]:
    """Items from an expert-annotation file, and (item_id, reason) for records that are not usable.

    Besides the gold cited paragraphs, the paragraphs cited by the recorded generations are kept as
    passages too (they enlarge the small corpus with plausible distractors).
    """
    records = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of annotated questions")
    names: dict[str, str] = {}
    if names_path is not None and Path(names_path).exists():
        names = json.loads(Path(names_path).read_text(encoding="utf-8"))
    items, problems = [], []
    for index, record in enumerate(records):
        item_id = f"q{record.get('question_number', index)}"
        question, answer = (record.get("question") or "").strip(), (record.get("answer") or "").strip()
        if not question or not answer:
            problems.append((item_id, "record lacks a question or an answer"))
            continue
        gold, passages = [], []
        for citation in record.get("citations") or []:
            case_id = citation.get("case_id")
            name = names.get(case_id) or citation.get("case_name") or case_id
            texts = citation.get("paragraphs_map") or {}
            for number in citation.get("paragraph_numbers") or []:
                pid = passage_id(case_id, number)
                if pid not in gold:
                    gold.append(pid)
                if str(number) in texts:
                    passages.append(Passage(pid, case_id, str(number), name, _clean_paragraph(texts[str(number)])))
        if not gold:
            problems.append((item_id, "record has no pinpoint citation"))
            continue
        for generation in record.get("generations") or []:
            for sentence in generation.get("sentences_with_citations") or []:
                for cited in sentence.get("citations") or []:
                    case_id, number = cited.get("case_id"), cited.get("paragraph_number")
                    if case_id is None or number is None or not cited.get("paragraph_text"):
                        continue
                    name = names.get(case_id) or cited.get("case_name") or case_id
                    text = _clean_paragraph(_SHOWN_PREFIX.sub("", cited["paragraph_text"], count=1))
                    passages.append(Passage(passage_id(case_id, number), case_id, str(number), name, text))
        items.append(EvalItem(item_id, question, answer, gold, passages))
    return items, problems


def _citation_entries(entries: list) -> list[dict]:
    """Flat citation objects, whether the cell lists them directly or per answer sentence
    ({"sentence": ..., "citations": [...]}, as the AQuAECHR builder stores them)."""
    flat = []
    for entry in entries:
        if isinstance(entry.get("citations"), list):
            flat.extend(entry["citations"])
        else:
            flat.append(entry)
    return flat


def _citation_ids(raw) -> list[str]:
    """Gold passage ids from a curated.aquaechr_qa citations cell (a JSON list of objects)."""
    entries = json.loads(raw) if isinstance(raw, str) else (raw or [])
    ids = []
    for entry in _citation_entries(entries):
        case_id = entry.get("itemid") or entry.get("case_id")
        numbers = entry.get("pinpoints") or entry.get("para_nos") or entry.get("paragraph_numbers") or (
            [entry["para_no"]] if entry.get("para_no") is not None else [])
        for number in numbers:
            pid = passage_id(case_id, number)
            if case_id and pid not in ids:
                ids.append(pid)
    return ids


def load_db_items(con: duckdb.DuckDBPyConnection) -> tuple[list[EvalItem], list[tuple[str, str]]]:
    rows = run_sql(con, "aquaechr/eval/select_items.sql").fetchall()
    items, problems = [], []
    for qa_id, _guide, question, answer, citations, _strategy in rows:
        try:
            gold = _citation_ids(citations)
        except (json.JSONDecodeError, AttributeError, TypeError) as exc:
            problems.append((str(qa_id), f"unreadable citations: {exc}"))
            continue
        if not gold:
            problems.append((str(qa_id), "no pinpoint citation"))
            continue
        items.append(EvalItem(str(qa_id), question, answer, gold))
    return items, problems


def db_paragraphs(con: duckdb.DuckDBPyConnection) -> list[Passage]:
    try:
        rows = run_sql(con, "aquaechr/eval/corpus_paragraphs.sql").fetchall()
    except duckdb.CatalogException:
        return []
    return [Passage(passage_id(i, n), i, str(n), name, text) for i, n, text, name in rows]


@dataclass
class PassageStore:
    passages: dict[str, Passage]
    description: str

    def text(self) -> dict[str, str]:
        return {pid: p.text for pid, p in self.passages.items()}


def build_passages(items: list[EvalItem], paragraphs: list[Passage]) -> PassageStore:
    """Corpus = numbered paragraphs of curated.echr_paragraphs + the passages the items carry (the
    database text wins where both have a paragraph)."""
    passages: dict[str, Passage] = {p.pid: p for p in paragraphs}
    from_db = len(passages)
    added = 0
    for item in items:
        for passage in item.passages:
            if passage.pid not in passages:
                passages[passage.pid] = passage
                added += 1
    gold = {pid for item in items for pid in item.gold}
    missing = len(gold - passages.keys())
    description = (f"{from_db} numbered paragraphs from curated.echr_paragraphs + {added} cited passages carried "
                   f"by the items file; {missing} gold paragraphs without text")
    return PassageStore(passages, description)


def items_sha(items: list[EvalItem]) -> str:
    canonical = json.dumps([[i.item_id, i.question, i.answer, i.gold] for i in items], ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
