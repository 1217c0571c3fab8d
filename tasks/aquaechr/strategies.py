"""The six question-generation strategies: windows of guide paragraphs → prompts → candidates.

(i) one paragraph → question, the answer is the paragraph; (ii) five paragraphs → question + the
paragraphs needed; (iii) numbered sentences of five paragraphs → question + chosen sentences;
(iv-a/b/c) three paragraphs → question (b, c with an expert reasoning path), semantic search for more
paragraphs of the same guide, then sentence-level answer extraction. Answers are always source
sentences chosen by number; an unknown number makes the candidate invalid (recorded, not repaired).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from caseforge.llm import LLMRequest, SamplingParams, request_from_template
from caseforge.tasks.aquaechr.sentences import InvalidSentenceIds, Paragraph, Sentence, assemble_answer, \
    number_window, numbered_text, normalize_space, split_paragraph

STRATEGIES = ("i", "ii", "iii", "iv-a", "iv-b", "iv-c")
SEARCH_STRATEGIES = ("iv-c", "iv-b", "iv-a")      # the cascade order
WINDOW_SIZES = {"i": 1, "ii": 5, "iii": 5, "iv-a": 3, "iv-b": 3, "iv-c": 3}
REASONING_PATHS = {"iv-a": "none", "iv-b": "legal-1", "iv-c": "legal-2"}
QUESTION_TEMPLATES = {
    "i": "aquaechr/question_single.j2", "ii": "aquaechr/question_paragraphs.j2",
    "iii": "aquaechr/question_sentences.j2", "iv-a": "aquaechr/question_search.j2",
    "iv-b": "aquaechr/question_search.j2", "iv-c": "aquaechr/question_search.j2",
}
EXTRACT_TEMPLATE = "aquaechr/extract_answer.j2"
QUESTION_PARAMS = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=500, seed=7)
EXTRACT_PARAMS = SamplingParams(temperature=0.0, max_tokens=200)
SEARCH_EXTRA_PARAGRAPHS = 5


def parse_strategies(text: str | None) -> list[str]:
    chosen = [s.strip().lower() for s in (text or ",".join(SEARCH_STRATEGIES)).split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown or not chosen:
        raise ValueError(f"unknown strategy {unknown or text!r}; choose from {', '.join(STRATEGIES)}")
    return list(dict.fromkeys(chosen))


@dataclass
class Window:
    guide_id: str
    guide_title: str
    paragraphs: list[Paragraph]

    @property
    def window_id(self) -> str:
        return f"{self.guide_id}:{self.paragraphs[0].para_no}-{self.paragraphs[-1].para_no}"


def make_windows(guide_id: str, guide_title: str, paragraphs: list[Paragraph], size: int,
                 limit: int | None = None) -> list[Window]:
    """Consecutive, non-overlapping windows of `size` paragraphs (a shorter tail is dropped)."""
    out = [Window(guide_id, guide_title, paragraphs[i:i + size]) for i in range(0, len(paragraphs) - size + 1, size)]
    return out[:limit] if limit else out


@dataclass
class Candidate:
    strategy: str
    window: Window
    question: str | None = None
    answer: list[Sentence] | None = None
    context_para_nos: list[str] = field(default_factory=list)
    error: str | None = None
    comprehensiveness: int | None = None
    conciseness: int | None = None
    fluency: int | None = None
    analysis: str | None = None
    kept: bool = False
    removal_reason: str | None = None

    @property
    def qa_id(self) -> str:
        return hashlib.sha256(f"{self.strategy}|{self.window.window_id}".encode()).hexdigest()[:20]

    @property
    def valid(self) -> bool:
        return self.error is None and bool(self.question) and bool(self.answer)


def _paragraph_sentences(window: Window) -> list[list[Sentence]]:
    out, number = [], 1
    for paragraph in window.paragraphs:
        sentences, _ = split_paragraph(paragraph.guide_id, paragraph.para_no, paragraph.text, paragraph.citations,
                                       first_number=number)
        number += len(sentences)
        out.append(sentences)
    return out


def question_request(strategy: str, window: Window, key: str) -> LLMRequest:
    common = {"guide_title": window.guide_title}
    template = QUESTION_TEMPLATES[strategy]
    if strategy == "i":
        paragraph = window.paragraphs[0]
        return request_from_template(key, template, QUESTION_PARAMS, paragraph=normalize_space(paragraph.text),
                                     heading_path=paragraph.heading_path or "", **common)
    if strategy == "ii":
        return request_from_template(key, template, QUESTION_PARAMS,
                                     paragraphs=[normalize_space(p.text) for p in window.paragraphs], **common)
    if strategy == "iii":
        sentences, _ = number_window(window.paragraphs)
        return request_from_template(key, template, QUESTION_PARAMS, numbered_sentences=numbered_text(sentences),
                                     **common)
    passage = " ".join(normalize_space(p.text) for p in window.paragraphs)
    return request_from_template(key, template, QUESTION_PARAMS, passage=passage,
                                 reasoning_path=REASONING_PATHS[strategy], **common)


def apply_question(candidate: Candidate, output) -> None:
    """Fill a candidate from the question step's parsed output ((i)–(iii) get their answer here too)."""
    candidate.question = normalize_space(output.question)
    window = candidate.window
    try:
        if candidate.strategy == "i":
            candidate.answer = _paragraph_sentences(window)[0]
            candidate.context_para_nos = [window.paragraphs[0].para_no]
        elif candidate.strategy == "ii":
            per_paragraph = _paragraph_sentences(window)
            unknown = sorted({n for n in output.paragraphs if not 1 <= n <= len(per_paragraph)})
            if unknown or not output.paragraphs:
                raise InvalidSentenceIds(f"paragraph number(s) {unknown or '(none)'} not in 1..{len(per_paragraph)}")
            candidate.answer = [s for n in sorted(set(output.paragraphs)) for s in per_paragraph[n - 1]]
            candidate.context_para_nos = [p.para_no for p in window.paragraphs]
        elif candidate.strategy == "iii":
            sentences, _ = number_window(window.paragraphs)
            candidate.answer = assemble_answer(sentences, output.sentences)
            candidate.context_para_nos = [p.para_no for p in window.paragraphs]
    except InvalidSentenceIds as exc:
        candidate.error = f"invalid_ids: {exc}"


def search_context(candidate: Candidate, guide_paragraphs: list[Paragraph], question_vector, paragraph_vectors,
                   extra: int = SEARCH_EXTRA_PARAGRAPHS) -> list[Paragraph]:
    """The seed paragraphs plus the `extra` most similar other paragraphs of the same guide, in guide order."""
    from caseforge.tasks.aquaechr.search import top_k

    seed = {p.para_no for p in candidate.window.paragraphs}
    seed_index = {i for i, p in enumerate(guide_paragraphs) if p.para_no in seed}
    found = set(top_k(question_vector, paragraph_vectors, extra, exclude=seed_index))
    context = [p for i, p in enumerate(guide_paragraphs) if i in found or i in seed_index]
    candidate.context_para_nos = [p.para_no for p in context]
    return context


def extraction_request(candidate: Candidate, context: list[Paragraph]) -> tuple[LLMRequest, list[Sentence]]:
    sentences, _ = number_window(context)
    request = request_from_template(candidate.qa_id, EXTRACT_TEMPLATE, EXTRACT_PARAMS, question=candidate.question,
                                    numbered_sentences=numbered_text(sentences))
    return request, sentences


def apply_extraction(candidate: Candidate, sentences: list[Sentence], output) -> None:
    try:
        candidate.answer = assemble_answer(sentences, output.sentences)
    except InvalidSentenceIds as exc:
        candidate.error = f"invalid_ids: {exc}"
