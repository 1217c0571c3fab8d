"""Real sentences that carry legal citations, read from the samples through the project's own parsers, for
measuring the content rules on them (tests/samples/test_content_rules_on_citations.py): ECHR guide paragraphs
(the guide parser), HUDOC judgment paragraphs (the HUDOC HTML and DOCX readers), the AQuAECHR experts' answers,
U.S. case text (the Bar Exam passages, Oyez summaries through the Oyez parser) and Chinese judgments (the dump
reader and section parser).

English text is cut into sentences by the splitter AQuAECHR numbers guide sentences with. A sentence that is only
a citation (U.S. "citation sentences" such as "Id. at 621." or "Hadlock v. Dir. of Revenue, 860 S.W.2d 335, 337
(Mo. banc 1993).", a guide's "(Kurt v. Austria [GC], 2021, § 160)." after a full stop) cites for the sentence
before it and is kept with it: alone it is no statement, question or reason, and would be refused for too few
words or for being mostly digits whatever its marks. Chinese text is cut at 。；！？.

The citation marks below pick the sentences; they are the measurement's, independent of the content rules.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from caseforge.tasks.aquaechr.sentences import normalize_space, sentence_spans
from caseforge.tasks.barexam.parse import parse_passages
from caseforge.tasks.cn.records import JudgmentRecord, parse_record, read_dump, record_from_dict
from caseforge.tasks.cn.sections import SECTIONS
from caseforge.tasks.guides.pages import read_pages
from caseforge.tasks.guides.paragraphs import parse_guide
from caseforge.tasks.hudoc.readers import parse_document
from caseforge.tasks.oyez.parse import parse_case

_REPORTER = r"\b\d{1,4}\s+(?:[A-Z][A-Za-z]{0,7}\.\s?){1,4}(?:\d?[a-z]{1,2}\.?\s?)?(?:\d{1,5}|_{3}|–{4})"
ECHR_MARKS = re.compile(r"\[GC\]|\[Committee\]|\(dec\.\)|§|\bnos?\.\s?\d+/\d+|\bECHR\s\d{4}|\bSeries A no\.|\bv\.\s")
US_MARKS = re.compile(_REPORTER + r"|\bU\.S\.C\.|\bId\.|\bIbid\.?|\bsupra\b|\bv\.\s|§")
CN_MARKS = re.compile(r"[（(〔]\s*\d{4}\s*[）)〕][^（）()〔〕。，；：、\s]{0,20}?\d+号"
                      r"|《[^》]*?(?:法|条例|规定|解释|决定|办法|规则|意见|批复|公约)[^》]{0,6}》")
# words a citation sentence holds besides names and numbers ("(internal quotation marks omitted)", "See also")
CITATION_WORDS = {"see", "also", "quoting", "citing", "cited", "omitted", "internal", "quotation", "quotations",
                  "marks", "emphasis", "added", "citation", "citations", "alteration", "alterations", "original",
                  "curiam", "dissenting", "concurring", "supra", "infra", "and", "the", "for", "banc", "denied", "art"}
_PROSE_WORD = re.compile(r"(?<![\w.'’-])[a-z]{3,}(?![\w'’-])")
_CN_END = re.compile(r"(?<=[。；！？])")


@dataclass(frozen=True)
class Unit:
    source: str
    text: str


def is_citation_sentence(sentence: str, marks: re.Pattern) -> bool:
    """A sentence that carries a citation and fewer than three words of prose (lower-case words other than a
    citation's own): it is only a citation."""
    prose = [w for w in _PROSE_WORD.findall(sentence) if w not in CITATION_WORDS]
    return bool(marks.search(sentence)) and len(prose) < 3


def english_units(source: str, paragraph: str) -> tuple[list[Unit], int]:
    """The sentences of one paragraph that carry a citation, each with the citation sentences that follow it, and
    how many citation sentences were joined to the sentence before them. A citation sentence with no sentence
    before it (an excerpt that opens with one) is left out."""
    marks = ECHR_MARKS if source in ("guide", "hudoc", "aquaechr") else US_MARKS
    grouped: list[str] = []
    joined = 0
    for start, end in sentence_spans(paragraph):
        sentence = normalize_space(paragraph[start:end])
        if grouped and is_citation_sentence(sentence, marks):
            grouped[-1] += " " + sentence
            joined += 1
        else:
            grouped.append(sentence)
    return [Unit(source, s) for s in grouped if marks.search(s) and not is_citation_sentence(s, marks)], joined


def chinese_units(section: str) -> list[Unit]:
    return [Unit("cn", s.strip()) for s in _CN_END.split(section) if CN_MARKS.search(s)]


def guide_paragraphs(samples: Path) -> list[str]:
    path = samples / "echr_guides" / "guide_art_2_pages_first.csv"
    parsed = parse_guide("guide_art_2", read_pages(path.read_bytes(), path.name), "0" * 64)
    return [row["text"] for row in parsed.rows]


def hudoc_paragraphs(samples: Path) -> list[str]:
    paths = sorted((samples / "hudoc" / "html").glob("*.html")) + sorted((samples / "hudoc" / "docx").glob("*.docx"))
    return [row["text"] for path in paths
            for row in parse_document(path.stem, path.read_bytes(), "0" * 64).rows if row["text"]]


def aquaechr_answers(samples: Path) -> list[str]:
    records = json.loads((samples / "aquaechr" / "expert_annotations_rag.json").read_text(encoding="utf-8"))
    return [record["answer"] for record in records]


def barexam_passages(samples: Path) -> list[str]:
    frame, _ = parse_passages((samples / "barexam" / "passages_mbe_gold.jsonl").read_bytes(), "0" * 64)
    return [text for text in frame["text"] if text]


def oyez_texts(samples: Path) -> list[str]:
    texts = []
    for path in sorted((samples / "oyez" / "cases").glob("*.json")):
        row = parse_case(path.read_bytes())
        texts += [row[field] for field in ("facts", "question", "conclusion", "description") if row.get(field)]
    return texts


def chinese_sections(samples: Path) -> list[str]:
    sections = []
    for path in sorted((samples / "cn").glob("*.jsonl")):
        for record in read_dump(path.name, path.read_bytes()):
            row = parse_record(record if isinstance(record, JudgmentRecord) else record_from_dict(record))
            sections += [row[name] for name in SECTIONS if row.get(name)]
    return sections


ENGLISH_SOURCES = {"guide": guide_paragraphs, "hudoc": hudoc_paragraphs, "aquaechr": aquaechr_answers,
                   "barexam": barexam_passages, "oyez": oyez_texts}


def english_corpus(samples: Path) -> tuple[list[Unit], list[tuple[str, str]], dict[str, int]]:
    """Distinct citation-carrying sentence units, distinct citation-carrying paragraphs (source, text), and how
    many citation sentences each source had joined to the sentence before them."""
    units, paragraphs, joined = {}, {}, {}
    for source, read in ENGLISH_SOURCES.items():
        joined[source] = 0
        for paragraph in read(samples):
            found, count = english_units(source, paragraph)
            joined[source] += count
            for unit in found:
                units.setdefault(unit.text, unit)
            if found:
                paragraphs.setdefault(normalize_space(paragraph), source)
    return list(units.values()), [(source, text) for text, source in paragraphs.items()], joined


def chinese_corpus(samples: Path) -> tuple[list[Unit], list[str]]:
    """Distinct citation-carrying sentences and distinct sections that carry a citation."""
    sections = [s for s in dict.fromkeys(chinese_sections(samples)) if CN_MARKS.search(s)]
    units = {}
    for section in sections:
        for unit in chinese_units(section):
            units.setdefault(unit.text, unit)
    return list(units.values()), sections
