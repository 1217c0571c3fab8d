"""Test doubles and hand-made ECHR input tables for the AQuAECHR tests (not a guide parser)."""
from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from caseforge.llm.types import Completion

CONTRACT_DDL = """
CREATE TABLE IF NOT EXISTS curated.guide_paragraphs (guide_id VARCHAR, para_no VARCHAR, heading_path VARCHAR,
    text VARCHAR, guide_version_date DATE);
CREATE TABLE IF NOT EXISTS curated.guide_citations (guide_id VARCHAR, para_no VARCHAR, ordinal INTEGER,
    case_name VARCHAR, year INTEGER, grand_chamber BOOLEAN, is_decision BOOLEAN, pinpoints VARCHAR[],
    signal VARCHAR, is_ibid BOOLEAN, itemid VARCHAR, raw VARCHAR);
CREATE TABLE IF NOT EXISTS curated.echr_paragraphs (itemid VARCHAR, para_no VARCHAR, part VARCHAR,
    section VARCHAR, heading_path VARCHAR, text VARCHAR, ordinal INTEGER);
CREATE TABLE IF NOT EXISTS curated.echr_judgments (itemid VARCHAR, docname VARCHAR, language VARCHAR);
"""


def create_contract_tables(con, paragraphs, citations, judgments=(), passages=()):
    """paragraphs: (guide_id, para_no, heading, text); citations: (guide_id, para_no, ordinal, case_name,
    year, pinpoints, itemid, raw); judgments: (itemid, docname, language); passages: (itemid, para_no, text)."""
    con.execute(CONTRACT_DDL)
    con.executemany("INSERT INTO curated.guide_paragraphs VALUES (?, ?, ?, ?, DATE '2023-08-31')", list(paragraphs))
    con.executemany("INSERT INTO curated.guide_citations VALUES (?, ?, ?, ?, ?, false, false, ?, NULL, false, ?, ?)",
                    [list(c) for c in citations])
    con.executemany("INSERT INTO curated.echr_judgments VALUES (?, ?, ?)", list(judgments))
    con.executemany("INSERT INTO curated.echr_paragraphs VALUES (?, ?, NULL, NULL, NULL, ?, 0)", list(passages))


class BagOfWordsEmbedderDouble:
    """Test double for the sentence-transformer: hashed bag of lower-cased words, L2-normalised."""

    def encode(self, texts):
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]{3,}", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def _user(request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


def _system(request) -> str:
    return next((m["content"] for m in request.messages if m["role"] == "system"), "")


def _topic(text: str) -> str:
    words = [w for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in {"the", "and", "of", "in", "to", "a"}]
    return " ".join(w.lower() for w in words[2:9])


class ScriptedLegalBackendDouble:
    """Test double for an LLM: plausible JSON answers computed from the prompt, and a log of what it was asked.

    - questions are built from words of the source text, phrased by reasoning path;
    - extraction picks the numbered sentences sharing most words with the question (up to 3);
    - the judge scores 5/5/5, except `low_when(question)` → comprehensiveness 2;
    - `invalid_ids_for` (a word): an extraction whose question contains it answers sentence 999.
    """

    name = "scripted-legal-double"
    batch_size = 16

    def __init__(self, model="double-generator", low_when=lambda q: False, invalid_ids_for=None):
        self.model = model
        self.low_when = low_when
        self.invalid_ids_for = invalid_ids_for
        self.asked: list[str] = []

    def complete_batch(self, requests):
        out = []
        for request in requests:
            self.asked.append(request.template_id)
            out.append(Completion(text=json.dumps(self.answer(request)), prompt_tokens=100, completion_tokens=20))
        return out

    def answer(self, request) -> dict:
        template, user, system = request.template_id, _user(request), _system(request)
        numbered = re.findall(r"^\[(\d+)\] (.*)$", user, flags=re.MULTILINE)
        if template.endswith("question_single.j2"):
            return {"question": f"What does the Convention require regarding {_topic(user.split('Paragraph:')[-1])}?"}
        if template.endswith("question_paragraphs.j2"):
            return {"question": f"Which principles apply to {_topic(user.split('Paragraph 1:')[-1])}?",
                    "paragraphs": [1, 2]}
        if template.endswith("question_sentences.j2"):
            return {"question": f"How is {_topic(numbered[0][1])} assessed?", "sentences": [1, 2, 3]}
        if template.endswith("question_search.j2"):
            topic = _topic(user.split("Passage:")[-1])
            if "analyses a complaint step by step" in system:
                return {"question": f"Which criteria decide whether the right applies when {topic}?"}
            if "room for manoeuvre" in system:
                return {"question": f"How wide is the margin of appreciation of the State where {topic}?"}
            return {"question": f"What does the case law say about {topic}?"}
        if template.endswith("extract_answer.j2"):
            question = user.split("\n")[0]
            if self.invalid_ids_for and self.invalid_ids_for in question:
                return {"sentences": [999]}
            q_words = set(re.findall(r"[a-z]{4,}", question.lower()))
            scored = sorted(numbered, key=lambda n: (-len(q_words & set(re.findall(r"[a-z]{4,}", n[1].lower()))),
                                                      int(n[0])))
            return {"sentences": sorted(int(n) for n, _ in scored[:3])}
        if template.endswith("judge.j2"):
            question = user.split("\n")[0].removeprefix("Question: ")
            low = self.low_when(question)
            return {"analysis": "The answer addresses the question." if not low else "Part of the question is unanswered.",
                    "comprehensiveness": 2 if low else 5, "conciseness": 4, "answer_fluency": 5}
        raise AssertionError(f"the double has no script for {template}")
