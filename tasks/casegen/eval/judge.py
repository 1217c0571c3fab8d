"""The LLM judge: per-task dimensions, family check, and robust score parsing of the judge's reply.

A reply may be JSON or lines such as "事实准确性：8分", "逻辑连贯性: 7/10", with full-width digits.
Every dimension ends as a number in 1..10, or as NULL with a reason: missing (the reply never gave
it) or invalid (a number outside 1..10, another scale, or something that is not a number).
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field

from caseforge.families import check_families
from caseforge.llm.parsing import InvalidOutput, extract_json

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
SCORE_MIN, SCORE_MAX = 1.0, 10.0


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


_NUMBER = r"(-?\d+(?:\.\d+)?)"
_VALUE = re.compile(r"^\s*" + _NUMBER + r"\s*(?:分)?\s*(?:/\s*(\d+(?:\.\d+)?))?\s*(?:分)?\s*$")


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "")


def _read_value(value) -> tuple[float | None, str | None]:
    """(score, None) or (None, why it is not a score)."""
    if isinstance(value, dict):
        for key in ("score", "分数", "得分", "评分", "value"):
            if key in value:
                return _read_value(value[key])
        return None, f"no score inside {json.dumps(value, ensure_ascii=False)[:60]}"
    if isinstance(value, bool) or value is None:
        return None, f"not a number: {value!r}"
    if isinstance(value, (int, float)):
        number, scale = float(value), None
    else:
        match = _VALUE.match(_normalise(str(value)))
        if not match:
            return None, f"not a number: {str(value)[:40]!r}"
        number, scale = float(match.group(1)), match.group(2)
    if scale is not None and float(scale) != SCORE_MAX:
        return None, f"score on another scale: {number:g}/{scale}"
    if not SCORE_MIN <= number <= SCORE_MAX:
        return None, f"out of range 1-10: {number:g}"
    return number, None


def dimension_names(dimension: tuple[str, str, tuple[str, ...]]) -> list[str]:
    """The names a reply may give a dimension, in the order they are looked for."""
    ident, chinese, others = dimension
    return [chinese, *others, ident, ident.replace("_", " ")]


def _find_in_json(data: dict, dimension) -> tuple[bool, object]:
    containers = [data]
    for key in ("scores", "评分", "各维度评分", "维度评分", "dimensions"):
        if isinstance(data.get(key), dict):
            containers.insert(0, data[key])
    for container in containers:
        lowered = {str(k).strip().lower(): v for k, v in container.items()}
        for name in dimension_names(dimension):
            if name.lower() in lowered:
                return True, lowered[name.lower()]
    return False, None


def _line_pattern(name: str) -> re.Pattern:
    # "名称：8", "名称 得分: 8分", "**名称**：8/10", "名称（…）：8"
    return re.compile(re.escape(name) + r"[*\s]*(?:\([^)\n]{0,30}\))?[*\s]*(?:得分|评分|分数)?[*\s]*[:=]\s*[*\s]*"
                      r"([^\s,;。，；*]+(?:\s*/\s*\d+)?)", re.IGNORECASE)


def read_judge_reply(text: str | None, task: str) -> JudgeReading:
    """Scores for every dimension of `task` plus the overall score, each ok, missing or invalid."""
    reading = JudgeReading()
    text = _normalise(text or "")
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
        found, raw = (_find_in_json(data, dimension) if data is not None else (False, None))
        if found:
            score, why = _read_value(raw)
        else:
            score, why = None, None
            for name in dimension_names(dimension):
                # scores follow the analysis: the last mention that reads as a score wins
                for match in reversed(list(_line_pattern(name).finditer(text))):
                    found = True
                    score, why = _read_value(match.group(1))
                    if score is not None:
                        break
                if found:
                    break
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