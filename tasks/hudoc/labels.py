"""Numbering labels shared by judgments and guides: '12.', 'IV.', 'B.', '(a)', '(ii)', 'α)'."""
from __future__ import annotations

import re

ROMAN_RE = re.compile(r"^(?=[IVXLC])M{0,3}(?:C[MD]|D?C{0,3})(?:X[CL]|L?X{0,3})(?:I[XV]|V?I{0,3})$")
QUOTE_OPENERS = "“\"‘'«„"

# label, then the rest; the label is a number, a Roman numeral, a letter, or a bracketed item
LABEL_RE = re.compile(
    r"^(?P<label>\(?(?:\d{1,3}|[IVXLC]{1,7}|[A-Za-z]|[ivx]{1,5}|[α-ω])\s?[.)])[\s\u00a0]+(?P<rest>\S.*)$", re.S
)
NUMBER_RE = re.compile(r"^(?P<n>\d{1,4})\s*\.[\s\u00a0]+(?P<rest>\S.*)$", re.S)


def split_label(text: str) -> tuple[str | None, str]:
    match = LABEL_RE.match(text)
    if not match:
        return None, text
    return match["label"].replace(" ", ""), match["rest"]


def label_level(label: str, rest: str) -> int:
    """Depth of a heading by its label: I. > A. > 1. > (a) > (i) > (α)."""
    core = label.strip("().")
    bracketed = label.startswith("(") or label.endswith(")")
    if core.isdigit():
        return 3
    if re.fullmatch(r"[α-ω]", core):
        return 6
    if bracketed:
        return 5 if re.fullmatch(r"[ivx]+", core) and core != "x" or len(core) > 1 else 4
    if ROMAN_RE.match(core) and (len(core) > 1 or rest[:12].isupper()):
        return 1
    if re.fullmatch(r"[A-Z]", core):
        return 2
    if re.fullmatch(r"[ivx]+", core):
        return 5
    return 4


def paragraph_number(text: str) -> tuple[int | None, str]:
    """The printed paragraph number at the start of a block ('63.  Text' → 63) and the rest."""
    match = NUMBER_RE.match(text)
    if not match:
        return None, text
    return int(match["n"]), match["rest"]


def starts_with_quote(text: str) -> bool:
    return bool(text) and text[0] in QUOTE_OPENERS
