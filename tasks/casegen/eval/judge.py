"""The LLM judge: per-task dimensions, family check, and robust score parsing of the judge's reply.

A reply may be JSON or lines such as "事实准确性：8分", "逻辑连贯性: 7/10", with full-width digits.
Every dimension ends as a number in 1..10, or as NULL with a reason: missing (the reply never gave
it) or invalid (a number outside 1..10, another scale, or something that is not a number). How a score is
read is caseforge.scoring_rules' (a release's harness reads a judge's reply by the same rules).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from caseforge.families import check_families
from caseforge.llm.parsing import InvalidOutput, extract_json
from caseforge.scoring_rules import SCORE_MAX, SCORE_MIN, json_value, line_score, score_value

# task -> ordered (dimension id, Chinese name, other names the judge may use)
DIMENSIONS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "defense": (
        ("factuality", "事实准确性", ("事实性",)),
        ("legal_accuracy", "法律准确性", ("法律适用准确性",)),
        ("logical_coherence", "逻辑连贯性", ("逻辑性",)),
        ("completeness", "完整性", ("全面性",)),
    ),
    "facts": (
        ("factuality", "事实准确性", ("事实性",)),
        ("relevance", "相关性", ("关联性",)),
        ("logical_coherence", "逻辑连贯性", ("逻辑性",)),
        ("completeness", "完整性", ("全面性",)),
    ),
    "reasoning": (
        ("issue_accuracy", "争议焦点准确性", ("争议焦点",)),
        ("legal_accuracy", "法律准确性", ("法律适用准确性",)),
        ("logical_coherence", "逻辑连贯性", ("逻辑性",)),
        ("completeness", "完整性", ("全面性",)),
        ("ethics", "伦理合规性", ("伦理性", "伦理")),
    ),
    "judgment": (
        ("judgment_accuracy", "判决结果准确性", ("裁判结果准确性", "判决准确性")),
        ("provision_accuracy", "法条引用准确性", ("法律条文引用准确性", "法条准确性")),
    ),
}
OVERALL = ("overall", "总体评分", ("综合评分", "总分", "整体评分", "总体得分", "最终评分"))


def dimensions_for(task: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return [*DIMENSIONS[task], OVERALL]


ANALYSIS_KEY, ANALYSIS_MAX_CHARS = "分析", 600


def reply_schema(task: str) -> dict:
    """The JSON a judge reply must be where the backend decodes under a schema: a short analysis, then every
    dimension of `task` and the overall score, each an integer 1..10 under its Chinese name (the names the
    prompt uses), all required. A small judge then cannot ramble past max_tokens or leave a score out."""
    # an enum, not minimum/maximum: llama.cpp's schema grammar ignores bounds (Gemma 3 270M wrote 1000000000000000)
    scores = {chinese: {"type": "integer", "enum": list(range(int(SCORE_MIN), int(SCORE_MAX) + 1))}
              for _, chinese, _ in dimensions_for(task)}
    properties = {ANALYSIS_KEY: {"type": "string", "maxLength": ANALYSIS_MAX_CHARS}, **scores}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


@dataclass
class DimensionScore:
    dimension: str
    score: float | None
    status: str                 # ok | missing | invalid
    reason: str | None = None


@dataclass
class JudgeReading:
    scores: list[DimensionScore] = field(default_factory=list)
    fmt: str = "none"           # json | lines | none
    analysis: str | None = None  # the judge's free-text reasoning: the JSON's 分析, or a prose reply as a whole

    def by_dimension(self) -> dict[str, DimensionScore]:
        return {s.dimension: s for s in self.scores}


def dimension_names(dimension: tuple[str, str, tuple[str, ...]]) -> list[str]:
    """The names a reply may give a dimension, in the order they are looked for."""
    ident, chinese, others = dimension
    return [chinese, *others, ident, ident.replace("_", " ")]


def read_judge_reply(text: str | None, task: str) -> JudgeReading:
    """Scores for every dimension of `task` plus the overall score, each ok, missing or invalid."""
    reading = JudgeReading()
    text = unicodedata.normalize("NFKC", text or "")
    data = None
    try:
        parsed = extract_json(text)
        if isinstance(parsed, dict):
            data = parsed
    except InvalidOutput:
        data = None
    reading.fmt = "json" if data is not None else "lines"
    if data is not None:
        analysis = data.get(ANALYSIS_KEY)
        reading.analysis = analysis if isinstance(analysis, str) else None
    else:
        reading.analysis = text.strip() or None
    for dimension in dimensions_for(task):
        ident = dimension[0]
        names = dimension_names(dimension)
        found, raw = json_value(data, names) if data is not None else (False, None)
        if found:
            score, why = score_value(raw)
        else:
            found, score, why = line_score(text, names)
        if not found:
            reading.scores.append(DimensionScore(ident, None, "missing", "dimension not found in judge reply"))
            continue
        if score is None:
            reading.scores.append(DimensionScore(ident, None, "invalid", why))
        else:
            reading.scores.append(DimensionScore(ident, score, "ok"))
    if all(s.status == "missing" for s in reading.scores):
        reading.fmt = "none"
    return reading


# ---------------------------------------------------------------- model families

def check_judge_family(judged_models: list[str], judge_model: str, allow_same_family: bool = False) -> list[str]:
    """Refuse a judge from the same family as a judged model (unless allowed, SameFamily); return warnings."""
    warnings = [check_families(model, judge_model, allow_same_family, roles=("judged model", "judge"))
                for model in judged_models]
    return [w for w in warnings if w]