"""Decoding and normalising Chinese judgment text (encodings, full-width spaces, HTML)."""
from __future__ import annotations

import codecs
import difflib
import re
import unicodedata
from collections import Counter

from caseforge.text import html_to_text

_CJK = "\u4e00-\u9fff"
# "民 事 判 决 书", "审　判　长　　罗国成": single characters spaced out for layout
_SPACED_TITLE = re.compile(rf"(?:(?<![{_CJK}])[{_CJK}][ \u3000\u00a0]+){{2,}}[{_CJK}]")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_TAG = re.compile(r"<(?:div|p|br|a|span|html|body|table|td|tr)\b", re.IGNORECASE)


class DecodeError(ValueError):
    """The bytes are neither UTF-8 nor GB18030 text."""


def decode_bytes(raw: bytes) -> str:
    """Text from bytes: UTF-8 (BOM or not), UTF-16 with BOM, else GB18030 (a superset of GBK/GB2312)."""
    if raw.startswith(codecs.BOM_UTF8):
        return raw[len(codecs.BOM_UTF8):].decode("utf-8")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("gb18030")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"neither UTF-8 nor GB18030 at byte {exc.start}") from exc


def _join_spaced(match: re.Match) -> str:
    return _SPACES.sub("", match.group(0))


def normalise_text(text: str | None) -> str:
    """One layout for every source: no BOM, HTML stripped, spaced-out titles joined, one space or newline."""
    if not text:
        return ""
    text = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n")
    if _TAG.search(text):
        text = html_to_text(text) or ""
    text = _SPACED_TITLE.sub(_join_spaced, text)
    text = _SPACES.sub(" ", text)
    text = _NEWLINES.sub("\n", text)
    return text.strip()


# Comparing a parsed section with a gold one: NFKC, then every whitespace character and every
# punctuation or symbol character (Unicode categories P* and S*) removed; similarity is
# difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() on the normalised strings
# (2·matches / (len a + len b)), on at most the first and last MAX_COMPARE characters of long texts.
# SequenceMatcher visits every pair of equal characters of the two texts at least once (the sum over characters
# of count in a × count in b), which is quadratic in their length for repetitive text: two sections of one
# repeated character cost 36 million pairs at the 2 × 3,000 window (4 s each; a 3 MB record took 75 s). Texts
# costing more than MAX_COMPARE_PAIRS are compared on shorter first-and-last windows, halved until they fit.
# Real gold sections cost at most 0.3 million pairs (the samples), so their scores never change.
MAX_COMPARE = 3000
MAX_COMPARE_PAIRS = 1_000_000

_DROP = {code: None for code in range(0x30000)
         if chr(code).isspace() or unicodedata.category(chr(code))[0] in "PS"}


def normalise_for_compare(text: str | None) -> str:
    if not text:
        return ""
    return unicodedata.normalize("NFKC", text).translate(_DROP)


def similarity(found: str | None, gold: str | None) -> float:
    a, b = normalise_for_compare(found), normalise_for_compare(gold)
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if len(a) > 2 * MAX_COMPARE or len(b) > 2 * MAX_COMPARE:
        a = a[:MAX_COMPARE] + a[-MAX_COMPARE:]
        b = b[:MAX_COMPARE] + b[-MAX_COMPARE:]
    window = MAX_COMPARE
    while window > 1 and _equal_pairs(a, b) > MAX_COMPARE_PAIRS:
        window //= 2
        a, b = _ends(a, window), _ends(b, window)
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _equal_pairs(a: str, b: str) -> int:
    counts = Counter(b)
    return sum(n * counts[ch] for ch, n in Counter(a).items())


def _ends(text: str, size: int) -> str:
    return text if len(text) <= 2 * size else text[:size] + text[-size:]
