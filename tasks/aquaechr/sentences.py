"""Guide paragraphs → numbered sentences that keep the citations they carry; answers from sentence ids.

A sentence ends at . ! ? (optionally followed by a closing quote) outside parentheses and brackets,
when the next character starts a new sentence. Citations in the guides sit in parentheses before the
full stop ("… (Giuliani and Gaggio v. Italy [GC], 2011, § 174)."), so they stay with their sentence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# words whose trailing full stop does not end a sentence
ABBREVIATIONS = {
    "v", "vs", "no", "nos", "dec", "e.g", "i.e", "cf", "art", "arts", "para", "paras", "pp", "p", "ibid",
    "etc", "al", "mr", "mrs", "ms", "dr", "st", "op", "cit", "seq", "inter", "alia", "ltd", "co", "inc",
    "nr", "vol", "ch", "sect", "s", "gc",
}
_CLOSERS = "\"'”’»"
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Citation:
    """One guide citation (one row of curated.guide_citations) as the answer carries it."""

    ordinal: int
    case_name: str
    itemid: str | None
    pinpoints: tuple[str, ...] = ()
    year: int | None = None
    raw: str | None = None
    language: str | None = None


@dataclass
class Sentence:
    number: int                 # 1-based within the window shown to the model
    guide_id: str
    para_no: str
    start: int                  # character span in the paragraph text
    end: int
    text: str
    citations: list[Citation] = field(default_factory=list)


def normalize_space(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    match = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if not match:
        return False
    word = match.group(1).lower().rstrip(".")
    if word in ABBREVIATIONS:
        return True
    return len(word) == 1 and word.isalpha()     # initials: "A. v. B."


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of one paragraph, covering all non-blank text."""
    spans, start, depth, i, n = [], 0, 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch in ".!?" and depth == 0:
            end = i + 1
            while end < n and text[end] in _CLOSERS:
                end += 1
            nxt = end
            while nxt < n and text[nxt].isspace():
                nxt += 1
            boundary = nxt == n or (nxt > end and (text[nxt].isupper() or text[nxt] in "(“\"‘'"))
            if boundary and not (ch == "." and _ends_with_abbreviation(text, i)):
                if text[start:end].strip():
                    spans.append(_trim(text, start, end))
                start = nxt
                i = nxt
                continue
        i += 1
    if text[start:].strip():
        spans.append(_trim(text, start, n))
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def locate_citations(text: str, citations: list[Citation]) -> dict[int, int | None]:
    """Offset of each citation (by ordinal) in the paragraph text, searched in ordinal order.

    The raw citation text is looked for first, then the case name; whitespace differences are
    tolerated. A citation found nowhere maps to None (the caller records it).
    """
    flat, index = [], []
    for pos, ch in enumerate(text):
        if ch.isspace():
            if flat and flat[-1] == " ":
                continue
            flat.append(" ")
        else:
            flat.append(ch.lower())
        index.append(pos)
    haystack = "".join(flat)
    found: dict[int, int | None] = {}
    cursor = 0
    for citation in sorted(citations, key=lambda c: c.ordinal):
        at = -1
        for needle in (citation.raw, citation.case_name):
            if not needle:
                continue
            needle = normalize_space(needle).lower()
            at = haystack.find(needle, cursor)
            if at < 0:
                at = haystack.find(needle)
            if at >= 0:
                break
        if at < 0:
            found[citation.ordinal] = None
            continue
        found[citation.ordinal] = index[at]
        cursor = at + 1
    return found


def split_paragraph(guide_id: str, para_no: str, text: str, citations: list[Citation],
                    first_number: int = 1) -> tuple[list[Sentence], list[Citation]]:
    """Number the sentences of one paragraph and hand each the citations inside its span.

    Returns the sentences and the citations that could not be located in the text.
    """
    sentences = [Sentence(first_number + k, guide_id, str(para_no), s, e, text[s:e])
                 for k, (s, e) in enumerate(sentence_spans(text))]
    unlocated = []
    offsets = locate_citations(text, citations)
    for citation in sorted(citations, key=lambda c: c.ordinal):
        offset = offsets[citation.ordinal]
        owner = None
        if offset is not None:
            owner = next((s for s in sentences if s.start <= offset < s.end), None)
            if owner is None:       # between sentences: belongs to the one before
                owner = next((s for s in reversed(sentences) if s.start <= offset), None)
        if owner is None:
            unlocated.append(citation)
        else:
            owner.citations.append(citation)
    return sentences, unlocated


@dataclass
class Paragraph:
    guide_id: str
    para_no: str
    text: str
    heading_path: str | None = None
    citations: list[Citation] = field(default_factory=list)


def number_window(paragraphs: list[Paragraph]) -> tuple[list[Sentence], list[Citation]]:
    """Sentences of several paragraphs numbered 1..n in reading order."""
    numbered, unlocated = [], []
    for paragraph in paragraphs:
        sentences, lost = split_paragraph(paragraph.guide_id, paragraph.para_no, paragraph.text,
                                          paragraph.citations, first_number=len(numbered) + 1)
        numbered.extend(sentences)
        unlocated.extend(lost)
    return numbered, unlocated


def numbered_text(sentences: list[Sentence]) -> str:
    """What the model sees: one sentence per line, prefixed with its number."""
    return "\n".join(f"[{s.number}] {normalize_space(s.text)}" for s in sentences)


class InvalidSentenceIds(ValueError):
    """The model chose sentence numbers that the window does not have (or none at all)."""


def assemble_answer(sentences: list[Sentence], chosen: list[int]) -> list[Sentence]:
    """The answer: the chosen source sentences, verbatim, in reading order, each once."""
    by_number = {s.number: s for s in sentences}
    unknown = sorted({n for n in chosen if n not in by_number})
    if unknown:
        raise InvalidSentenceIds(f"sentence number(s) {unknown} not in 1..{len(sentences)}")
    if not chosen:
        raise InvalidSentenceIds("no sentence chosen")
    return [by_number[n] for n in sorted(set(chosen))]


def answer_text(answer: list[Sentence]) -> str:
    return " ".join(normalize_space(s.text) for s in answer)
