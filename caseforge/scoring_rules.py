"""The scoring rules of `caseforge eval`, in one place: caseforge's evaluation code imports them from here, and a
benchmark release carries this very file as harness/caseforge_scoring.py (caseforge.release.harness), where its
harness tasks score without caseforge. So it needs only Python's standard library (and nltk for AQuAECHR's
ROUGE-L) and imports no caseforge.

Replies: the JSON value a reply holds and the first way it breaks its schema (caseforge.llm.parsing). CaseFacts:
the verdict a reply states (tasks/case/answers.py, casefacts/eval/systems.py) and the verdict metrics. AQuAECHR:
{"answer": ...}, its sentences and inline citations (aquaechr/eval/citations.py), ROUGE-L over rouge-score's
English tokens and the exact match of the cited paragraphs (aquaechr/eval/metrics.py). CaseGen: ROUGE-L over
characters (casegen/eval/metrics.py) and the scores a judge's reply gives (casegen/eval/judge.py).
"""
from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache

# ---------------------------------------------------------------- replies as caseforge reads them

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _balanced_objects(text: str):
    """Each top-level {...} span, respecting strings and escapes."""
    depth, start, in_string, escaped = 0, None, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start is not None:
                yield text[start:i + 1]
                start = None


def extract_json(text: str | None):
    """The JSON value of a reply: the whole reply, else a fenced block, else the first balanced {...} that parses;
    ValueError when there is none."""
    if text is None or not text.strip():
        raise ValueError("empty output")
    stripped = text.strip()
    # strict=False: a raw control character inside a string is read as itself. llama-cpp-python's grammar
    # lets a model write line breaks unescaped inside a JSON string.
    # besides JSONDecodeError: ValueError for a number over 4,300 digits, RecursionError for deep nesting
    try:
        return json.loads(stripped, strict=False)
    except (ValueError, RecursionError):
        pass
    for candidate in [m.group(1) for m in _FENCE.finditer(stripped)] + list(_balanced_objects(stripped)):
        try:
            return json.loads(candidate.strip(), strict=False)
        except (ValueError, RecursionError):
            continue
    raise ValueError(f"no JSON object found in output: {stripped[:120]!r}")


def schema_problem(value, schema: dict, where: str = "output") -> str | None:
    """The first way `value` breaks the reply schema (objects, strings, arrays, enums: what the schemas of these
    replies use), or None."""
    kind = schema.get("type")
    checks = {"object": dict, "array": list, "string": str, "boolean": bool}
    if kind in checks and not isinstance(value, checks[kind]):
        return f"{where}: not a {kind}"
    if kind in ("integer", "number") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"{where}: not a number"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: not one of {schema['enum']}"
    if kind == "string" and not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
        return f"{where}: length out of bounds"
    if kind == "array":
        if len(value) > schema.get("maxItems", len(value)):
            return f"{where}: too many items"
        for i, item in enumerate(value):
            problem = schema_problem(item, schema.get("items", {}), f"{where}[{i}]")
            if problem:
                return problem
    if kind == "object":
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"{where}: {missing[0]} missing"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problem = schema_problem(value[key], sub, f"{where}.{key}")
                if problem:
                    return problem
    return None


def reply_object(text: str | None, schema: dict) -> dict | None:
    """The reply's JSON object when it matches `schema`, else None (caseforge records a failed call)."""
    try:
        data = extract_json(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and schema_problem(data, schema) is None else None


# ---------------------------------------------------------------- CaseFacts: the verdict

VERDICTS = ("SUPPORTED", "REFUTED", "OVERRULED")
_VERDICT = re.compile(r"\b(SUPPORTED|REFUTED|OVERRULED)\b", re.IGNORECASE)
_VERDICT_STATED = re.compile(r"(?:verdict|label|answer|conclusion)\s*(?:is|:|=)?\s*\**\"?(SUPPORTED|REFUTED|OVERRULED)\b",
                             re.IGNORECASE)


def json_field(reply: str, fields: tuple[str, ...], read) -> str | None:
    """What `read` makes of the first of `fields` in the reply's JSON object that it makes something of, or None."""
    if "{" not in reply:
        return None
    try:
        data = extract_json(reply)
    except ValueError:
        return None
    if isinstance(data, dict):
        for field in fields:
            found = read(data.get(field))
            if found:
                return found
    return None


def _verdict_of(value) -> str | None:
    return value.strip().upper() if isinstance(value, str) and value.strip().upper() in VERDICTS else None


def parse_verdict(reply: str | None) -> str | None:
    """The verdict a reply states: JSON "verdict"/"label", else "verdict: X", else a reply that is one label."""
    if not reply or not reply.strip():
        return None
    found = json_field(reply, ("verdict", "label", "answer", "vote"), _verdict_of)
    if found:
        return found
    stated = list(_VERDICT_STATED.finditer(reply))
    if stated:
        return stated[-1].group(1).upper()
    words = set(m.group(1).upper() for m in _VERDICT.finditer(reply))
    stripped = reply.strip().strip("*.\"' ").upper()
    if stripped in VERDICTS:
        return stripped
    return words.pop() if len(words) == 1 and len(reply) < 40 else None


def casefacts_verdict(reply: str | None, schema: dict) -> str | None:
    """The closed-book verdict: the reply's {"verdict", "cases"} under its schema, the verdict read as stated."""
    try:
        data = extract_json(reply)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("verdict"), str):
        data = {**data, "verdict": parse_verdict(data["verdict"]) or data["verdict"]}
    return data["verdict"] if schema_problem(data, schema) is None else None


def verdict_metrics(pairs: list[tuple[str, str | None]]) -> dict[str, float | None]:
    """(gold, predicted or None) per claim → verdict_accuracy overall and per gold label, n, and the F1 of each
    label (None for a label neither gold nor predicted) with their mean, verdict_macro_f1."""
    metrics: dict[str, float | None] = {"n": float(len(pairs))}
    metrics["verdict_accuracy"] = sum(g == p for g, p in pairs) / len(pairs) if pairs else None
    for label in sorted({g for g, _ in pairs}):
        of_label = [(g, p) for g, p in pairs if g == label]
        metrics[f"n/{label}"] = float(len(of_label))
        metrics[f"verdict_accuracy/{label}"] = sum(g == p for g, p in of_label) / len(of_label)
    f1s = []
    for label in VERDICTS:
        tp = sum(g == label and p == label for g, p in pairs)
        wrong = sum((g == label) != (p == label) for g, p in pairs)
        f1 = 2 * tp / (2 * tp + wrong) if 2 * tp + wrong else None
        metrics[f"verdict_f1/{label}"] = f1
        if f1 is not None:
            f1s.append(f1)
    metrics["verdict_macro_f1"] = sum(f1s) / len(f1s) if f1s else None
    return metrics


# ---------------------------------------------------------------- overlap


def lcs_length(a: list[str], b: list[str]) -> int:
    """Longest common subsequence length, O(len(a)*len(b)) time, O(len(b)) memory."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def overlap_f1(overlap: int, candidate_len: int, reference_len: int) -> float:
    """The F1 of a candidate and a reference that share `overlap` tokens (0 when any is 0)."""
    if overlap == 0 or candidate_len == 0 or reference_len == 0:
        return 0.0
    p, r = overlap / candidate_len, overlap / reference_len
    return 2 * p * r / (p + r)


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


# ---------------------------------------------------------------- AQuAECHR: the answer and its citations

_NUMBER_LIST = r"(?:docs?\.?\s*)?\d+(?:\s*(?:,|;|&|and)\s*(?:docs?\.?\s*)?\d+)*"
CITATION_RE = re.compile(
    r"\[\s*" + _NUMBER_LIST + r"\s*\]"          # [Doc 1] [1] [Doc 1, Doc 3] [Docs 1, 2]
    r"|\(\s*docs?\.?\s*\d+(?:\s*(?:,|;|&|and)\s*(?:docs?\.?\s*)?\d+)*\s*\)",
    re.IGNORECASE,
)
# abbreviations after which a period does not end a sentence
_ABBREVIATIONS = {"v", "vs", "no", "nos", "para", "paras", "art", "arts", "e.g", "i.e", "cf", "etc", "ibid",
                  "mr", "mrs", "ms", "dr", "st", "p", "pp", "op", "cit", "seq", "al", "ltd", "inc", "co", "prot"}


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


def cited_passages(answer: str, shown: list[str]) -> list[str]:
    """The shown passages the answer cites ([Doc n] = shown[n-1]), in first-cited order; a marker that opens the
    answer on a line of its own cites no sentence and counts for nothing, as in caseforge."""
    sentences: list[list[str]] = []
    for raw in split_sentences(answer):
        numbers = [int(n) for m in CITATION_RE.finditer(raw) for n in re.findall(r"\d+", m.group())]
        cited = [shown[n - 1] for n in numbers if 1 <= n <= len(shown)]
        if not re.search(r"\w", strip_citations(raw)):
            if sentences and numbers:
                sentences[-1] += cited
            continue
        sentences.append(cited)
    return list(dict.fromkeys(pid for cited in sentences for pid in cited))


@lru_cache(maxsize=1)
def _porter():
    try:
        from nltk.stem import porter
    except ImportError:
        # only where nltk can be missing: in a release's harness/, beside caseforge_harness (caseforge needs nltk)
        from caseforge_harness import ReleaseRefused
        raise ReleaseRefused("AQuAECHR's ROUGE-L stems words with nltk's Porter stemmer: pip install nltk") from None
    return porter.PorterStemmer("ORIGINAL_ALGORITHM")


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default English tokens: lower case, non-alphanumerics as spaces, words over 3 letters stemmed
    (re-implemented: importing rouge-score pulls in absl, whose logging set-up captures the process's stderr at
    import time)."""
    stem = _porter().stem
    return [stem(w) if len(w) > 3 else w for w in re.sub(r"[^a-z0-9]+", " ", text.lower()).split()]


def aquaechr_scores(answer: str, reference: str, gold: list[str], shown: list[str] | None) -> dict[str, float]:
    """ROUGE-L F1 of the marker-free answer against the reference, and with passages shown, the precision, recall
    and F1 of the cited paragraphs against the gold ones (exact ids)."""
    pred, ref = rouge_tokens(strip_citations(answer)), rouge_tokens(reference)
    scores = {"rouge_l": overlap_f1(lcs_length(pred, ref), len(pred), len(ref))}
    if shown is not None:
        predicted, gold_ids = set(cited_passages(answer, shown)), set(gold)
        hits = len(predicted & gold_ids)
        precision = hits / len(predicted) if predicted else 0.0
        recall = hits / len(gold_ids) if gold_ids else 0.0
        scores.update(citation_precision=precision, citation_recall=recall,
                      citation_f1=0.0 if hits == 0 else 2 * precision * recall / (precision + recall))
    return scores


# ---------------------------------------------------------------- CaseGen: characters and the judge

_ASCII_RUN = re.compile(r"[A-Za-z0-9]+(?:\.[0-9]+)?")


def dropped(token: str) -> bool:
    """Whether a token is only spaces, punctuation and symbols (no token of the Chinese metrics)."""
    return all(ch.isspace() or unicodedata.category(ch).startswith(("P", "S")) for ch in token)


def char_tokens(text: str) -> list[str]:
    """Each CJK character alone, ASCII letters and digits in runs, after NFKC; spaces and punctuation dropped."""
    text = unicodedata.normalize("NFKC", text or "")
    tokens, i = [], 0
    while i < len(text):
        match = _ASCII_RUN.match(text, i)
        if match:
            tokens.append(match.group(0).lower())
            i = match.end()
            continue
        if not dropped(text[i]):
            tokens.append(text[i])
        i += 1
    return tokens


def rouge_l_chars(reference: str, candidate: str) -> float:
    ref, cand = char_tokens(reference), char_tokens(candidate)
    return overlap_f1(lcs_length(ref, cand), len(cand), len(ref))


_NUMBER = r"(-?\d+(?:\.\d+)?)"
_VALUE = re.compile(r"^\s*" + _NUMBER + r"\s*(?:分)?\s*(?:/\s*(\d+(?:\.\d+)?))?\s*(?:分)?\s*$")
SCORE_MIN, SCORE_MAX = 1.0, 10.0


def score_value(value) -> tuple[float | None, str | None]:
    """(score, None), or (None, why `value` is not a score from 1 to 10)."""
    if isinstance(value, dict):
        for key in ("score", "分数", "得分", "评分", "value"):
            if key in value:
                return score_value(value[key])
        return None, f"no score inside {json.dumps(value, ensure_ascii=False)[:60]}"
    if isinstance(value, bool) or value is None:
        return None, f"not a number: {value!r}"
    if isinstance(value, (int, float)):
        number, scale = float(value), None
    else:
        match = _VALUE.match(unicodedata.normalize("NFKC", str(value)))
        if not match:
            return None, f"not a number: {str(value)[:40]!r}"
        number, scale = float(match.group(1)), match.group(2)
    if scale is not None and float(scale) != SCORE_MAX:
        return None, f"score on another scale: {number:g}/{scale}"
    if not SCORE_MIN <= number <= SCORE_MAX:
        return None, f"out of range 1-10: {number:g}"
    return number, None


def json_value(data: dict, names: list[str]) -> tuple[bool, object]:
    """(True, the value) of the first of `names` (any case) in a judge's JSON reply, its scores table first;
    (False, None) when the reply names none of them."""
    containers = [data]
    for key in ("scores", "评分", "各维度评分", "维度评分", "dimensions"):
        if isinstance(data.get(key), dict):
            containers.insert(0, data[key])
    for container in containers:
        lowered = {str(k).strip().lower(): v for k, v in container.items()}
        for name in names:
            if name.lower() in lowered:
                return True, lowered[name.lower()]
    return False, None


def _line_pattern(name: str) -> re.Pattern:
    # "名称：8", "名称 得分: 8分", "**名称**：8/10", "名称（…）：8"
    return re.compile(re.escape(name) + r"[*\s]*(?:\([^)\n]{0,30}\))?[*\s]*(?:得分|评分|分数)?[*\s]*[:=]\s*[*\s]*"
                      r"([^\s,;。，；*]+(?:\s*/\s*\d+)?)", re.IGNORECASE)


def line_score(text: str, names: list[str]) -> tuple[bool, float | None, str | None]:
    """(found, score, why not) from the lines of a prose reply, for the first of `names` it mentions: scores
    follow the analysis, so the last mention that reads as a score wins."""
    for name in names:
        found = list(_line_pattern(name).finditer(text))
        score, why = None, None
        for match in reversed(found):
            score, why = score_value(match.group(1))
            if score is not None:
                break
        if found:
            return True, score, why
    return False, None, None


def judge_score(reply: str | None, names: list[str]) -> float | None:
    """The score a judge's reply gives the dimension known by `names` (its Chinese name, other names, its id):
    from the JSON object (or its scores table) when the reply is one and names it, else the last line that reads
    as a score; None when missing or not a score from 1 to 10."""
    text = unicodedata.normalize("NFKC", reply or "")
    try:
        data = extract_json(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        found, value = json_value(data, names)
        if found:
            return score_value(value)[0]
    return line_score(text, names)[1]
