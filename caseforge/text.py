"""Text cleaning shared by the parsers."""
from __future__ import annotations

import html
import io
import re
import unicodedata

from bs4 import BeautifulSoup

_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")
_LITERAL_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?>")
_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")
_SPACE_BEFORE_PUNCT = re.compile(r" ([,.;:!?)\]])")
_SPACE_AFTER_OPEN = re.compile(r"([(\[]) ")
_BLOCKS = ["p", "li", "div", "h1", "h2", "h3", "h4", "h5", "blockquote", "tr"]


def _strip_markup(value: str) -> str:
    """One pass of HTML → text; block elements become lines, inline elements keep a space."""
    soup = BeautifulSoup(value, "lxml")
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for block in soup.find_all(_BLOCKS):
        block.insert_before("\n")
        block.insert_after("\n")
    return soup.get_text(" ")


def html_to_text(value: str | None) -> str | None:
    """Plain text from an HTML fragment, without glued words.

    Words stay apart where tags met (the released CaseFacts text has "inRoth v. United States"),
    entities are decoded, literal "\\u00e9" escapes are decoded, and markup that was escaped
    twice upstream ("&lt;i&gt;") is stripped on a second pass. Returns None for empty input.
    """
    if value is None:
        return None
    text = _LITERAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), str(value))
    for _ in range(3):
        if not (_TAG.search(text) or _ENTITY.search(text)):
            break
        text = _strip_markup(text) if _TAG.search(text) else html.unescape(text)
    text = unicodedata.normalize("NFC", text)
    text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    text = _SPACE_AFTER_OPEN.sub(r"\1", text)
    text = _BLANK_LINES.sub("\n", text).strip()
    return text or None


def csv_records(body: bytes, required: set[str], what: str) -> list[tuple[int, dict]]:
    """(line number, record) for each data row of a CSV file, every cell read as text.

    Raises ValueError naming `what` and the missing columns when a required column is absent.
    """
    import pandas as pd

    table = pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False, na_values=[""])
    missing = required - set(table.columns)
    if missing:
        raise ValueError(f"{what} lacks columns: {', '.join(sorted(missing))}")
    return list(enumerate(table.to_dict("records"), start=2))


def cell_text(value) -> str | None:
    """A CSV/DataFrame cell as stripped text; None for missing (None, NaN) or blank cells."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    return text or None
