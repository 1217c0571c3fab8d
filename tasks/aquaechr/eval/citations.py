"""Split a model answer into sentences and parse its inline citations to paragraph ids.

Passages are shown to a model as numbered [Doc 1..k]; an answer cites them inline. Tolerated forms:
"[Doc 1]", "[Doc 1, Doc 3]", "[Docs 1, 2]", "[1]", "[1, 3]", "(Doc 2)", "[Doc 1][Doc 2]", stray
whitespace and case ("[ doc  1 ]"). A number outside 1..k is kept as an invalid citation.

Which sentence a marker belongs to: markers at the end of a sentence (before or after its final
period) belong to that sentence; markers that open a line belong to the sentence they open; a line holding only markers belongs to the
sentence before it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUMBER_LIST = r"(?:docs?\.?\s*)?\d+(?:\s*(?:,|;|&|and)\s*(?:docs?\.?\s*)?\d+)*"
CITATION_RE = re.compile(
    r"\[\s*" + _NUMBER_LIST + r"\s*\]"          # [Doc 1] [1] [Doc 1, Doc 3] [Docs 1, 2]
    r"|\(\s*docs?\.?\s*\d+(?:\s*(?:,|;|&|and)\s*(?:docs?\.?\s*)?\d+)*\s*\)",  # (Doc 2) — bare (1) is not a citation
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"\d+")
# abbreviations after which a period does not end a sentence
_ABBREVIATIONS = {"v", "vs", "no", "nos", "para", "paras", "art", "arts", "e.g", "i.e", "cf", "etc", "ibid",
                  "mr", "mrs", "ms", "dr", "st", "p", "pp", "op", "cit", "seq", "al", "ltd", "inc", "co", "prot"}


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


def strip_citations(text: str) -> str:
    """The answer text without citation markers and with whitespace tidied."""
    cleaned = CITATION_RE.sub(" ", text)
    cleaned = re.sub(r"[ \t]+", " ", cleaned)
    cleaned = re.sub(r" +([.,;:!?])", r"\1", cleaned)
    return "\n".join(line.strip() for line in cleaned.splitlines()).strip()


def _sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence-ending punctuation (plus any markers glued after it)."""
    ends = []
    for match in re.finditer(r"[.!?]+[\"'”’)]*", text):
        before = text[:match.start()]
        word = re.search(r"([A-Za-z.]+)$", before)
        if match.group().startswith(".") and word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
            continue
        if re.search(r"\d$", before) and match.end() < len(text) and text[match.end()].isdigit():
            continue                                    # decimal number
        rest = text[match.end():]
        if rest and not rest[0].isspace() and not CITATION_RE.match(rest):
            continue
        end = match.end()
        glued = re.match(r"(?:\s*(?:" + CITATION_RE.pattern + r"))+", rest, re.IGNORECASE)
        if glued and "\n" not in glued.group():
            end += glued.end()
        ends.append(end)
    return ends


def split_sentences(text: str) -> list[str]:
    """Raw sentences (markers still inside), split at sentence ends and at line breaks."""
    pieces: list[str] = []
    for line in text.splitlines():
        start = 0
        for end in _sentence_ends(line):
            pieces.append(line[start:end])
            start = end
        pieces.append(line[start:])
    return [p.strip() for p in pieces if p.strip()]


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
