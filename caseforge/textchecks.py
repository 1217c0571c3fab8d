"""Content checks on text a language model wrote: is it prose, or degenerate output?

Small models fail in a few recognisable ways: too few words ("statement123456789"), mostly digits or
punctuation ("1967-01-04, 1967-01-14, …"), one token or one phrase over and over (";, and, and, and, …", a
draft that repeats its instruction until max_tokens), a long run of one character (" 1000000000…"), the
prompt's own instructions written back, a question that carries its answer. Each check here is a pure
function of the text (and its parameters) that returns True when the text passes; the quality gate runs them
as expectations (caseforge.text_expectations, rules in expectations/*.json), and anything else may call them.

Tokens: a word of an alphabetic script (letters and digits), or one CJK character, since Chinese is written
without spaces. A word counts as a word only when it holds a letter (a CJK character is a letter).

Legal text cites, and citations are digits and punctuation in forms each jurisdiction fixes: "(Giuliani and Gaggio
v. Italy [GC], no. 23458/02, §§ 174-75, ECHR 2011)", "Roe v. Wade, 410 U.S. 113, 153 (1973)", "Id. at 5",
"（2019）京01民终1234号". The letters check leaves recognised citations out beside prose (CITATION), and
square brackets are markup only in forms citations and quotations do not use (`no_bracket_markup`).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from caseforge.settings import PROMPTS_DIR

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_JINJA = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", re.DOTALL)


def tokens(text: str) -> list[str]:
    """Word tokens, lower-cased: words of alphabetic scripts, and single CJK characters."""
    return [t.lower() for t in _TOKEN.findall(unicodedata.normalize("NFKC", text or ""))]


def _has_letter(token: str) -> bool:
    return any(c.isalpha() for c in token)


def enough_words(text: str, min_words: int) -> bool:
    """At least `min_words` tokens that hold a letter."""
    return sum(_has_letter(t) for t in tokens(text)) >= min_words


# The numbered parts of citations, as the courts write them. A reporter's pinpoints and year belong to it;
# a pinpoint stops before the next reporter ("348 N.C. 510, 524, 501 S.E.2d 57" is two). A date ("4 December
# 1995", which ECHR citations carry) reads as a reporter, and counts as one citation too.
_YEAR_NOTE = r"\([^()]{0,40}?\d{4}\)"                                     # (1973), (2d Cir. 1990), (Mo. banc 1993)
_PINPOINT = r"(?:at\s+)?(?:pp?\.\s*)?[*¶§]*\s*\d{1,5}(?:[-–]\d{1,5})?(?:\s*n\.\s*\d+)?(?![\d.]|\s+[A-Z])"
_REPORTER_NAME = r"(?:[A-Z][A-Za-z]{0,7}\.?\s?){1,4}"                         # U.S., S. Ct., F.3d, N.Y.S.2d, All ER
CITATION = re.compile("|".join(f"(?:{part})" for part in (
    # a reporter: volume, name, (series), page, pinpoints, year: 410 U.S. 113, 153 (1973); 5 F.3d 789; 2010 WL 42726
    rf"\b\d{{1,4}}\s+{_REPORTER_NAME}(?:\d?[a-z]{{1,2}}\.?\s?)?(?:,\s*)?(?:at\s+(?:pp?\.\s*)?\*?)?"
    rf"(?:\d{{1,7}}|_{{3,}}|–{{4}})\b(?:\s*,\s*{_PINPOINT})*(?:\s*{_YEAR_NOTE})?",
    rf"\[\d{{4}}\]\s+(?:\d{{1,4}}\s+)?{_REPORTER_NAME}\d{{1,5}}(?:\s*,\s*{_PINPOINT})*",   # [1970] 2 All ER 664
    rf"\b(?:Id|id|Ibid|ibid)\.,?\s+at\s+{_PINPOINT}(?:\s*,\s*{_PINPOINT})*",                # Id. at 5
    r"\b(?:[A-Z][A-Za-z]{0,6}\.){2,}\s+\d[\w:()–-]*",                                      # N.J.S.A. 2A:84A–20
    r"\bnos?\.\s?\d+/\d+(?:(?:\s*,\s*|\s+and\s+)\d+/\d+)*",                              # no. 12345/06
    r"(?:§§?|¶¶?)\s*\d+[\w.()]*(?:\s*(?:[-–]|,|and|&)\s*\d+[\w.()]*)*",                      # § 146, §§ 45-47
    r"\bpp?\.\s*\d+(?:[-–]\d+)?|\bparas?\.\s*\d+(?:[-–]\d+)?",                              # p. 5, pp. 302–03
    r"\bECHR\s+\d{4}(?:-[IVXL]+)?|\b\d{4}-[IVXL]+\b|\bSeries\s+A\s+no\.\s*\d+",            # ECHR 2005-VII
    _YEAR_NOTE,
    r"[（(〔]\d{4}[）)〕][^\s，。；、（）()]{0,20}?\d+号",                                       # （2019）京01民终1234号
)))


def _letter_share(text: str) -> float | None:
    visible = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in visible) / len(visible) if visible else None


def mostly_letters(text: str, min_share: float) -> bool:
    """Letters are at least `min_share` of the characters that are not spaces (digits, punctuation and symbols
    are the rest), either of all of them or of those outside the text's citations (CITATION) when the
    citations stand beside prose: more words outside them than citations. A list of citations is judged whole,
    as digits ("The applicant, no. 1/06, no. 2/06, …" is no prose with a citation)."""
    share = _letter_share(text)
    if share is None or share >= min_share:
        return True
    outside, cited = CITATION.subn(" ", text)
    if not cited or sum(_has_letter(t) for t in tokens(outside)) <= cited:
        return False
    rest = _letter_share(outside)
    return rest is not None and rest >= min_share


# Square brackets in legal writing: a formation of the Court ("[GC]", "[Committee]"), an editor's change to a
# quotation ("[T]he", "caus[e]", "[the applicant]", "[NGOs]", "claim[ ]", "[...]", "[sic]"), a footnote, a page or an
# English report's year ("[4]", "[1970] Ch 654", "S.C. [327] at 330 [(1982)]"). What a model leaves behind has
# other forms: tokens of a chat template or a tokenizer ("[INST]", "[/INST]", "[TOOL_CALLS]", "[SEP]"), lists and
# JSON ("[]", "[1, 2]", "['a', 'b']", '["a"]'), the numbered lines and passage markers of a prompt ("[3] It will
# be …", "[Doc 1]"), markdown ("[text](url)", "[^1]"), brackets nested or left open.
_BRACKETED = re.compile(r"\[([^\[\]]*)\](\()?")
_CONTROL_TOKENS = frozenset({
    "inst", "sys", "cls", "sep", "mask", "pad", "unk", "bos", "eos", "eot", "img", "img_break", "img_end",
    "system_prompt", "tool_calls", "available_tools", "tool_results", "tool_content", "prefix", "middle", "suffix"})
_NOT_IN_EDITS = re.compile(r"[\"_=|#^@\\`~{}<>]")
_PASSAGE_MARKER = re.compile(r"(?i)\s*docs?\.?\s*\d")


def _editorial(content: str) -> bool:
    """Whether `content`, between square brackets, is one of the forms legal writing gives them."""
    if re.fullmatch(r"\d{1,4}|\(\d{4}\)", content):             # a footnote, a page, a (report's) year
        return True
    if re.fullmatch(r"[\s.…,;:!?'’-]+", content):                # an elision or a changed stop: [ ], [...], [,]
        return True
    return (any(c.isalpha() for c in content) and not _NOT_IN_EDITS.search(content)
            and content[:1] not in "/'" and content.strip().lower() not in _CONTROL_TOKENS
            and not _PASSAGE_MARKER.match(content))


def no_bracket_markup(text: str) -> bool:
    """Every square bracket pairs up and holds what citations and quotations put there (a formation of the Court,
    an editor's change, a footnote number within a line); nothing of a chat template, a list, JSON, markdown or a
    prompt's numbered lines."""
    for match in _BRACKETED.finditer(text):
        content, link = match.groups()
        opens_line = not text[text.rfind("\n", 0, match.start()) + 1:match.start()].strip()
        if link or not _editorial(content) or (opens_line and re.fullmatch(r"\d{1,3}", content)):
            return False
    return not re.search(r"[\[\]]", _BRACKETED.sub("", text))


def no_dominant_token(text: str, max_share: float, min_tokens: int) -> bool:
    """No single token is more than `max_share` of the tokens (checked from `min_tokens` tokens on)."""
    found = tokens(text)
    if len(found) < min_tokens:
        return True
    return Counter(found).most_common(1)[0][1] <= max_share * len(found)


def repeated_ngram_share(text: str, n: int) -> float:
    """The share of the text's n-grams of tokens that repeat an n-gram seen earlier in it (0 for a text whose
    every phrase is new, close to 1 for a loop)."""
    found = tokens(text)
    grams = [tuple(found[i:i + n]) for i in range(len(found) - n + 1)]
    if not grams:
        return 0.0
    return 1 - len(set(grams)) / len(grams)


def no_repeated_ngrams(text: str, n: int, max_share: float, min_ngrams: int) -> bool:
    """At most `max_share` of the n-grams repeat an earlier one (checked from `min_ngrams` n-grams on)."""
    if len(tokens(text)) - n + 1 < min_ngrams:
        return True
    return repeated_ngram_share(text, n) <= max_share


def longest_character_run(text: str) -> int:
    """The longest run of one character other than a space."""
    longest, run, previous = 0, 0, None
    for c in text:
        run = run + 1 if c == previous and not c.isspace() else 1
        previous = c
        longest = max(longest, run)
    return longest


def no_character_run(text: str, max_run: int) -> bool:
    """No character other than a space repeats more than `max_run` times in a row."""
    return longest_character_run(text) <= max_run


@lru_cache(maxsize=64)
def prompt_stretches(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The tokens of the fixed text of the prompt templates matching `patterns` (globs under prompts/): the
    instructions, not what a template fills in (each stretch between two template tags is its own text)."""
    paths = sorted({path for pattern in patterns for path in PROMPTS_DIR.glob(pattern)})
    if not paths:
        raise FileNotFoundError(f"no prompt template matches {', '.join(patterns)} under {PROMPTS_DIR}")
    return tuple(tuple(tokens(stretch)) for path in paths
                 for stretch in _JINJA.split(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=64)
def prompt_ngrams(patterns: tuple[str, ...], n: int) -> frozenset[tuple[str, ...]]:
    """Every run of `n` tokens of the prompts' instructions (prompt_stretches)."""
    return frozenset(tuple(stretch[i:i + n]) for stretch in prompt_stretches(patterns)
                     for i in range(len(stretch) - n + 1))


def no_prompt_echo(text: str, templates: tuple[str, ...] | list[str], n: int) -> bool:
    """The text shares no run of `n` tokens with the instructions of the prompt templates `templates`, and is not,
    shorter than that, a piece of them (a reason that reads "one sentence", the placeholder the prompt's answer
    format gave)."""
    found = tokens(text)
    patterns = tuple(templates)
    if 2 <= len(found) < n:
        return not any(tuple(stretch[i:i + len(found)]) == tuple(found) for stretch in prompt_stretches(patterns)
                       for i in range(len(stretch) - len(found) + 1))
    instructions = prompt_ngrams(patterns, n)
    return not any(tuple(found[i:i + n]) in instructions for i in range(len(found) - n + 1))

def longest_shared_run(first: str, second: str) -> int:
    """The longest run of tokens that appears in both texts."""
    a, b = tokens(first), tokens(second)
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


_QUESTION_MARK = re.compile(r"[?？]")


def no_answer_leak(question: str, answer: str, max_words_after: int, max_shared_tokens: int) -> bool:
    """The question does not carry its answer. A question ends at its (last) question mark: more than
    `max_words_after` words after it are an answer written into the question ("…? } The answer is: …"). A
    "question" without a question mark is a statement, and leaks when it repeats a run of more than
    `max_shared_tokens` tokens of the answer (questions may reuse the answer's wording, so the overlap of a
    real question with its answer is not the test)."""
    marks = list(_QUESTION_MARK.finditer(question))
    if marks:
        tail = question[marks[-1].end():]
        return sum(_has_letter(t) for t in tokens(tail)) <= max_words_after
    return longest_shared_run(question, answer) <= max_shared_tokens
