"""Split a model answer into sentences and parse its inline citations to paragraph ids.

Passages are shown to a model as numbered [Doc 1..k]; an answer cites them inline. Tolerated forms:
"[Doc 1]", "[Doc 1, Doc 3]", "[Docs 1, 2]", "[1]", "[1, 3]", "(Doc 2)", "[Doc 1][Doc 2]", stray
whitespace and case ("[ doc  1 ]"). A number outside 1..k is kept as an invalid citation.

Which sentence a marker belongs to: markers at the end of a sentence (before or after its final
period) belong to that sentence; markers that open a line belong to the sentence they open; a line holding only markers belongs to the
sentence before it. The markers, the sentences and the marker-free text are caseforge.scoring_rules' (a release's
harness reads answers by the same rules).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from caseforge.scoring_rules import CITATION_RE, split_sentences, strip_citations

_NUMBER_RE = re.compile(r"\d+")


@dataclass(frozen=True)
class Citation:
    doc: int                    # the number the model wrote
    passage_id: str | None      # "<itemid>#<para_no>" of [Doc doc]; None when the number names no shown passage

    @property
    def valid(self) -> bool:
        return self.passage_id is not None


@dataclass
class Sentence:
    text: str                                   # without citation markers
    citations: list[Citation] = field(default_factory=list)

    @property
    def valid_passages(self) -> list[str]:
        seen: list[str] = []
        for c in self.citations:
            if c.valid and c.passage_id not in seen:
                seen.append(c.passage_id)
        return seen


def marker_numbers(marker: str) -> list[int]:
    return [int(n) for n in _NUMBER_RE.findall(marker)]


def parse_answer(text: str, shown: list[str]) -> list[Sentence]:
    """Sentences of `text` with their citations resolved against the shown passage ids (Doc i = shown[i-1])."""
    sentences = []
    for raw in split_sentences(text):
        citations: list[Citation] = []
        for marker in CITATION_RE.finditer(raw):
            for number in marker_numbers(marker.group()):
                pid = shown[number - 1] if 1 <= number <= len(shown) else None
                citation = Citation(number, pid)
                if citation not in citations:
                    citations.append(citation)
        body = strip_citations(raw)
        if not re.search(r"\w", body):
            if sentences and citations:             # a line holding only markers cites the sentence before it
                sentences[-1].citations.extend(c for c in citations if c not in sentences[-1].citations)
            continue
        sentences.append(Sentence(body, citations))
    return sentences


def cited_passages(sentences: list[Sentence]) -> list[str]:
    """Distinct valid passage ids cited anywhere in the answer, in first-cited order."""
    seen: list[str] = []
    for sentence in sentences:
        for pid in sentence.valid_passages:
            if pid not in seen:
                seen.append(pid)
    return seen


def invalid_citations(sentences: list[Sentence]) -> list[int]:
    return [c.doc for s in sentences for c in s.citations if not c.valid]


def format_citations(passage_numbers: list[int]) -> str:
    return "".join(f"[Doc {n}]" for n in passage_numbers)
