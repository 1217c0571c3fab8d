"""The quality filter (G-Eval style judge), the strategy cascade, and the removal filters."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Callable

from caseforge.llm import LLMRequest, SamplingParams, request_from_template
from caseforge.tasks.aquaechr.attribution import attribution_problem, sentence_records
from caseforge.tasks.aquaechr.sentences import answer_text
from caseforge.tasks.aquaechr.strategies import Candidate, Window

JUDGE_TEMPLATE = "aquaechr/judge.j2"
JUDGE_PARAMS = SamplingParams(temperature=0.0, max_tokens=600)
DEFAULT_LOW_QUALITY_AT = 3          # a score ≤ this marks the pair low quality
DIMENSIONS = ("comprehensiveness", "conciseness", "answer_fluency")
COUNTRIES_FILE = Path(__file__).resolve().parent / "data" / "coe_member_states.txt"


def judge_request(key: str, question: str, answer: str) -> LLMRequest:
    return request_from_template(key, JUDGE_TEMPLATE, JUDGE_PARAMS, question=question, answer=answer)


def apply_verdict(candidate: Candidate, verdict) -> None:
    candidate.comprehensiveness = verdict.comprehensiveness
    candidate.conciseness = verdict.conciseness
    candidate.fluency = verdict.answer_fluency
    candidate.analysis = verdict.analysis


def low_quality(scores: dict[str, int | None], threshold: int = DEFAULT_LOW_QUALITY_AT) -> bool:
    """Low quality when any dimension is at or below the threshold (or was not scored)."""
    return any(scores.get(d) is None or scores[d] <= threshold for d in DIMENSIONS)


def candidate_scores(candidate: Candidate) -> dict[str, int | None]:
    return {"comprehensiveness": candidate.comprehensiveness, "conciseness": candidate.conciseness,
            "answer_fluency": candidate.fluency}


def quality_verdict(candidate: Candidate, threshold: int) -> str | None:
    """Why the candidate fails generation/quality, or None when it passes."""
    if candidate.error:
        return candidate.error
    if not candidate.answer:
        return "empty_answer"
    if candidate.comprehensiveness is None:
        return "not_judged"
    if low_quality(candidate_scores(candidate), threshold):
        return "low_quality"
    return None


def run_cascade(windows: list[Window], levels: list[str], generate_and_judge: Callable[[str, list[Window]], list[Candidate]],
                threshold: int = DEFAULT_LOW_QUALITY_AT) -> list[Candidate]:
    """Per source window: try each level in order; the first that passes is kept, the rest are not asked.

    Every tried candidate is returned; a failed one says why and what the cascade did next.
    """
    pending = list(windows)
    tried: list[Candidate] = []
    for position, level in enumerate(levels):
        if not pending:
            break
        candidates = generate_and_judge(level, pending)
        passed = set()
        for candidate in candidates:
            reason = quality_verdict(candidate, threshold)
            if reason is None:
                candidate.kept = True
                passed.add(candidate.window.window_id)
            else:
                after = f"fell back to {levels[position + 1]}" if position + 1 < len(levels) else "window dropped"
                candidate.kept, candidate.removal_reason = False, f"{reason} (cascade: {after})"
        tried.extend(candidates)
        pending = [w for w in pending if w.window_id not in passed]
    return tried


def apply_quality(candidates: list[Candidate], threshold: int = DEFAULT_LOW_QUALITY_AT) -> None:
    """For strategies outside the cascade: keep what passes, give the others their reason."""
    for candidate in candidates:
        reason = quality_verdict(candidate, threshold)
        candidate.kept, candidate.removal_reason = reason is None, reason


@lru_cache(maxsize=1)
def country_names() -> tuple[str, ...]:
    names = []
    for line in COUNTRIES_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            names.extend(n.strip() for n in line.split("|") if n.strip())
    return tuple(names)


# words of applicant names too common to mark a question as naming the case
GENERIC_NAME_WORDS = {"others", "and", "association", "party", "company", "limited", "church", "union",
                      "foundation", "society", "republic", "group", "national", "people", "state", "states"}


def _applicant_part(case_name: str) -> str:
    name = re.sub(r"^(?:case of|affaire)\s+", "", case_name.strip(), flags=re.IGNORECASE)
    name = re.split(r"\s+v\.?\s+", name, maxsplit=1)[0]
    return re.sub(r"\s*\((?:no\.?|dec\.?)[^)]*\)\s*$", "", name, flags=re.IGNORECASE).strip()


def names_in_question(question: str, case_names: list[str]) -> list[str]:
    """Country names and case (applicant) names that appear in the question."""
    found = []
    for name in country_names():
        if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, flags=re.IGNORECASE if len(name) > 3 else 0):
            found.append(name)
    for case_name in case_names:
        applicant = _applicant_part(case_name)
        tokens = [t for t in re.findall(r"[^\W\d_][\w'’-]{3,}", applicant) if t.lower() not in GENERIC_NAME_WORDS]
        for token in tokens:
            if re.search(rf"(?<!\w){re.escape(token)}(?!\w)", question, re.IGNORECASE):
                found.append(token)
    if re.search(r"\b[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*)* v\. [A-Z]", question):
        found.append("a 'X v. Y' case name")
    return found


def window_case_names(window: Window) -> list[str]:
    return [c.case_name for p in window.paragraphs for c in p.citations if c.case_name]


def removal_filters(candidates: list[Candidate], passages: dict[tuple[str, str], str], embedder,
                    dedupe_threshold: float = 0.8, extra_case_names: Callable[[Candidate], list[str]] | None = None) -> None:
    """On kept candidates: attribution filters, names in questions, then duplicate questions."""
    from caseforge.tasks.aquaechr.search import duplicates

    for candidate in candidates:
        if not candidate.kept:
            continue
        problem = attribution_problem(sentence_records(candidate.answer, passages))
        if problem is None:
            case_names = window_case_names(candidate.window) + [
                c.case_name for s in candidate.answer for c in s.citations] + (
                extra_case_names(candidate) if extra_case_names else [])
            named = names_in_question(candidate.question, case_names)
            if named:
                problem = f"names_case_or_country: {', '.join(sorted(set(named)))}"
        if problem:
            candidate.kept, candidate.removal_reason = False, problem
    kept = [c for c in candidates if c.kept]
    if not kept:
        return
    vectors = embedder.encode([c.question for c in kept])
    for index, original in duplicates(vectors, dedupe_threshold).items():
        kept[index].kept = False
        kept[index].removal_reason = f"duplicate_question_of: {kept[original].qa_id}"


def answer_of(candidate: Candidate) -> str | None:
    return answer_text(candidate.answer) if candidate.answer else None
