"""Content checks on text a language model wrote: is it prose, or degenerate output?

Small models fail in a few recognisable ways: too few words ("statement123456789"), mostly digits or
punctuation ("1967-01-04, 1967-01-14, …"), one token or one phrase over and over (";, and, and, and, …", a
draft that repeats its instruction until max_tokens), a long run of one character (" 1000000000…"), the
prompt's own instructions written back, a question that carries its answer. Each check here is a pure
function of the text (and its parameters) that returns True when the text passes; the quality gate runs them
as expectations (caseforge.text_expectations, rules in expectations/*.json), and anything else may call them.

Tokens: a word of an alphabetic script (letters and digits), or one CJK character, since Chinese is written
without spaces. A word counts as a word only when it holds a letter (a CJK character is a letter).
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


def mostly_letters(text: str, min_share: float) -> bool:
    """Letters are at least `min_share` of the characters that are not spaces (digits, punctuation and
    symbols are the rest)."""
    visible = [c for c in text if not c.isspace()]
    return not visible or sum(c.isalpha() for c in visible) >= min_share * len(visible)


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
