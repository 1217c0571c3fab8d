"""Decoding and normalising Chinese judgment text (encodings, full-width spaces, HTML)."""
from __future__ import annotations

import codecs
import re

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
