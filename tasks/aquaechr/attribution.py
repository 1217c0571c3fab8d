"""Each answer sentence keeps its guide citations, resolved to judgment paragraphs a reader can open."""
from __future__ import annotations

import re

from caseforge.tasks.aquaechr.sentences import Citation, Sentence, normalize_space

ENGLISH = {"eng", "en", "english"}


def pinpoint_numbers(pinpoints) -> tuple[str, ...]:
    """Pinpoints as paragraph-number strings; ranges like '52-57' are expanded."""
    out: list[str] = []
    for item in pinpoints or ():
        text = str(item).strip()
        match = re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", text)
        if match and int(match.group(2)) >= int(match.group(1)) and int(match.group(2)) - int(match.group(1)) < 50:
            out.extend(str(n) for n in range(int(match.group(1)), int(match.group(2)) + 1))
        elif text:
            out.append(text)
    return tuple(dict.fromkeys(out))


def sentence_records(answer: list[Sentence], passages: dict[tuple[str, str], str]) -> list[dict]:
    """The `citations` JSON of a QA pair: per answer sentence, its citations with the cited passages."""
    records = []
    for sentence in answer:
        cited = []
        for citation in sentence.citations:
            cited.append({
                "case_name": citation.case_name,
                "year": citation.year,
                "itemid": citation.itemid,
                "pinpoints": list(citation.pinpoints),
                "language": citation.language,
                "passages": [{"para_no": p, "text": passages.get((citation.itemid, p))}
                             for p in citation.pinpoints] if citation.itemid else [],
            })
        records.append({"sentence": normalize_space(sentence.text), "guide_para_no": sentence.para_no,
                        "citations": cited})
    return records


def all_citations(records: list[dict]) -> list[dict]:
    return [c for record in records for c in record["citations"]]


def cited_paragraph_count(records: list[dict]) -> int:
    """Distinct (judgment, paragraph) pairs cited by the answer."""
    return len({(c["itemid"], p) for c in all_citations(records) if c["itemid"] for p in c["pinpoints"]})


def attribution_problem(records: list[dict]) -> str | None:
    """Why a pair cannot be kept on attribution grounds, or None. Order: the paper's filters first."""
    citations = all_citations(records)
    if any(c["language"] and c["language"].strip().lower() not in ENGLISH for c in citations):
        return "non_english_citation"
    if any(not c["pinpoints"] for c in citations):
        return "whole_case_citation"
    if any(c["itemid"] is None for c in citations):
        return "unresolved_citation"
    if not any(c["itemid"] and c["pinpoints"] for c in citations):
        return "no_resolved_pinpoint"
    return None


def citation_from_row(row: dict) -> Citation:
    return Citation(ordinal=int(row["ordinal"]), case_name=row["case_name"] or "", itemid=row.get("itemid"),
                    pinpoints=pinpoint_numbers(row.get("pinpoints")), year=row.get("year"), raw=row.get("raw"),
                    language=row.get("language"))
