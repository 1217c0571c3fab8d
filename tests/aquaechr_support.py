"""Test doubles and hand-made ECHR input tables for the AQuAECHR tests (not a guide parser)."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from caseforge.llm.types import Completion

def _expand(pinpoints) -> list[int]:
    """'186-187' → [186, 187], as the guide parser stores pinpoints."""
    numbers = []
    for item in pinpoints or []:
        low, _, high = str(item).partition("-")
        numbers.extend(range(int(low), int(high or low) + 1))
    return numbers


def create_contract_tables(con, paragraphs, citations, judgments=(), passages=()):
    """Fill the ECHR source tables (created by the migrations) with hand-made rows.

    paragraphs: (guide_id, para_no, heading, text); citations: (guide_id, para_no, ordinal, case_name,
    year, pinpoints, itemid, raw); judgments: (itemid, docname, language); passages: (itemid, para_no, text).
    """
    con.executemany(
        "INSERT INTO curated.guide_paragraphs (guide_id, para_no, heading_path, text, guide_version_date, ordinal, "
        "raw_sha256, updated_at) VALUES (?, ?, ?, ?, DATE '2023-08-31', ?, 'test', now())",
        [list(p) + [i] for i, p in enumerate(paragraphs)])
    con.executemany(
        "INSERT INTO curated.guide_citations (guide_id, para_no, ordinal, case_name, year, grand_chamber, is_decision, "
        "pinpoints, whole_case, signal, is_ibid, itemid, raw_citation, raw_sha256, updated_at) "
        "VALUES (?, ?, ?, ?, ?, false, false, ?, ?, NULL, false, ?, ?, 'test', now())",
        [[g, p, o, name, year, _expand(pins), not pins, itemid, raw]
         for g, p, o, name, year, pins, itemid, raw in citations])
    con.executemany(
        "INSERT INTO curated.echr_judgments (itemid, docname, language, judgment_date, raw_sha256, updated_at) "
        "VALUES (?, ?, ?, DATE '2000-01-01', 'test', now())", list(judgments))
    con.executemany(
        "INSERT INTO curated.echr_paragraphs (itemid, para_no, part, text, ordinal, raw_sha256, updated_at) "
        "VALUES (?, ?, 'judgment', ?, ?, 'test', now())", [list(p) + [i] for i, p in enumerate(passages)])


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


# --- a minimal reader of the real sample inputs, for tests only (the guide parser lives elsewhere) ---

_HEADER = re.compile(r"Guide on Article[^\n]*\n|European Court of Human Rights\s+\d+/\d+\s+Last update:\s*[\d.]+\s*")
_HEADING_LINE = re.compile(r"^\s*(?:[A-Z]|[IVX]+|\d)\.\s{1,3}[^\n]{0,90}$", re.MULTILINE)
_PARA_START = re.compile(r"^(\d{1,4})\.\s{1,3}(?=[A-Z“\"(])", re.MULTILINE)
_CITE = re.compile(r"(?P<name>[^,;()]*?\bv\.\s*[^,;\[()]+?)\s*(?:\[GC\]\s*)?(?:\(dec\.\)\s*)?,\s*(?P<year>\d{4})"
                   r"(?:\s*,\s*§§?\s*(?P<pins>\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*))?")


def _norm_name(name: str) -> str:
    name = re.sub(r"^(?:case of|see also|see|and|a contrario|mutatis mutandis)\s+", "", name.strip(), flags=re.I)
    return re.sub(r"\s+", "", name.lower())


def _paren_groups(text: str):
    depth, start = 0, None
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                yield text[start:i]


def read_sample_guide(csv_path, guide_id="guide_art_2", max_pages=3):
    """(paragraphs, citations) tuples for create_contract_tables from the raw guide page text."""
    import csv

    csv.field_size_limit(10 ** 8)
    with open(csv_path, encoding="utf-8") as handle:
        pages = list(csv.DictReader(handle))[:max_pages]
    names = {}
    text = ""
    for page in pages:
        names.update({_norm_name(v): k for k, v in json.loads(page["citations"]).items()})
        text += _HEADER.sub("", page["page_text"]) + "\n"
    text = _HEADING_LINE.sub("", text)
    starts, expected = [], 1
    for match in _PARA_START.finditer(text):      # numbered guide paragraphs run 1, 2, 3…; the quoted Article does not
        if int(match.group(1)) == expected:
            starts.append(match)
            expected += 1
    paragraphs, citations = [], []
    for k, match in enumerate(starts):
        body = re.sub(r"\s+", " ", text[match.end(): starts[k + 1].start() if k + 1 < len(starts) else len(text)]).strip()
        para_no = match.group(1)
        paragraphs.append((guide_id, para_no, "", body))
        ordinal = 0
        for group in _paren_groups(body):
            for part in group.split(";"):
                cite = _CITE.search(part)
                if not cite:
                    continue
                ordinal += 1
                name = re.sub(r"^(?:see also|see|and|a contrario|mutatis mutandis)\s+", "", cite.group("name").strip(),
                              flags=re.I)
                pins = [p.strip() for p in (cite.group("pins") or "").split(",") if p.strip()]
                citations.append((guide_id, para_no, ordinal, name, int(cite.group("year")), pins,
                                  names.get(_norm_name(name)), cite.group(0).strip()))
    return paragraphs, citations


def read_expert_records(json_path, guide_id="expert_rag"):
    """The expert-annotated answers as guide paragraphs, with their resolved citations and judgment passages."""
    records = json.loads(open(json_path, encoding="utf-8").read())
    paragraphs, citations, judgments, passages = [], [], {}, []
    for number, record in enumerate(records, start=1):
        paragraphs.append((guide_id, str(number), record.get("axis") or "", record["answer"]))
        for ordinal, cite in enumerate(record["citations"], start=1):
            citations.append((guide_id, str(number), ordinal, cite["case_name"], None,
                              [str(p) for p in cite["paragraph_numbers"]], cite["case_id"], None))
            judgments[cite["case_id"]] = (cite["case_id"], cite["case_name"], "ENG")
            passages.extend((cite["case_id"], str(p), t) for p, t in cite.get("paragraphs_map", {}).items())
    return paragraphs, citations, list(judgments.values()), list(dict.fromkeys(passages))


GENERATOR_MODEL = "double-qwen-generator"
JUDGE_MODEL = "double-llama-judge"
SAMPLE_STRATEGIES = "i,ii,iii,iv-c,iv-b,iv-a"
SAMPLE_LIMIT = 2


def seed_sample_tables(con, samples_dir):
    paragraphs, citations = read_sample_guide(samples_dir / "echr_guides" / "guide_art_2_pages_first.csv")
    e_paragraphs, e_citations, judgments, passages = read_expert_records(
        samples_dir / "aquaechr" / "expert_annotations_rag.json")
    create_contract_tables(con, paragraphs + e_paragraphs, citations + e_citations, judgments, passages)


def sample_low_when(question: str) -> bool:
    """The recording judge's script: some (iv-c) questions are judged incomplete, so the cascade falls back."""
    return question.startswith("Which criteria") and len(question) % 2 == 0


def record_replay(samples_dir, db_path, replay_path):
    """Build on the samples with the scripted doubles and the real embedding model (so the CLI and the
    flow can replay it too) and write the cache as a replay file. Plain steps, no Prefect: the
    requests are the ones the flow makes with the same options."""
    from caseforge.llm.backends.replay import export_replay
    from caseforge.run_record import start_run
    from caseforge.stage_report import StageReport
    from caseforge.tasks.aquaechr import build as steps
    from caseforge.embeddings import SentenceTransformerEmbedder
    from caseforge.tasks.aquaechr.strategies import parse_strategies
    from caseforge.warehouse.connection import connect

    con = connect(db_path)
    seed_sample_tables(con, samples_dir)
    report = StageReport("aquaechr (recording)")
    config = steps.BuildConfig(strategies=parse_strategies(SAMPLE_STRATEGIES), limit=SAMPLE_LIMIT)
    steps.build(con, start_run(con, "build", "aquaechr"), report,
                steps.make_backends(backend=ScriptedLegalBackendDouble(GENERATOR_MODEL, low_when=sample_low_when),
                                    judge_backend=ScriptedLegalBackendDouble(JUDGE_MODEL, low_when=sample_low_when)),
                SentenceTransformerEmbedder(None), config)
    written = export_replay(con, replay_path)
    con.close()
    return report, written


# --- the judge–expert agreement tests (a hand-made gold CSV and a scripted judge) ---

GOLD = Path(__file__).resolve().parent / "fixtures" / "aquaechr" / "filter_gold.csv"

# what the scripted judge answers per question (first words), chosen so the expected F1 is known:
JUDGE_SCORES = {
    "What makes": (5, 5, 5),      # gold high,high,high            → TN,TN,TN ; overall TN
    "Which duties": (2, 4, 5),    # gold comp low                  → comp TP ; overall TP
    "When must": (4, 4, 4),       # gold conc low, judge misses    → conc FN ; overall FN
    "How strictly": (2, 3, 3),    # gold 3,3,2 all low             → TP,TP,TP ; overall TP
    "What role": (3, 5, 5),       # gold all high, judge comp low  → comp FP ; overall FP
    "Which criteria": (4, 4, 4),  # all high                       → TN ; overall TN
}


class ScriptedJudgeDouble:
    name = "scripted-judge-double"
    model = "double-judge"
    batch_size = 8

    def complete_batch(self, requests):
        out = []
        for request in requests:
            user = next(m["content"] for m in request.messages if m["role"] == "user")
            question = user.split("\n")[0].removeprefix("Question: ")
            c, k, f = next(v for prefix, v in JUDGE_SCORES.items() if question.startswith(prefix))
            out.append(Completion(text=json.dumps({"analysis": "checked", "comprehensiveness": c,
                                                   "conciseness": k, "answer_fluency": f})))
        return out
