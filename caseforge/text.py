"""Text cleaning shared by the parsers."""
from __future__ import annotations

import csv
import html
import itertools
import re
import sys
import unicodedata
from typing import Callable

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


class CsvFileError(ValueError):
    """A CSV file that cannot be read at all: no header row, or a required column missing."""


_NOT_UTF8 = re.compile("[\udc80-\udcff]")      # bytes that were not UTF-8, kept by the surrogateescape decoder
_LINE_END = re.compile(r"(?<=\n)")


def csv_records(body: bytes, required: set[str], what: str,
                too_big: Callable[[int], str | None] | None = None) -> tuple[list[tuple[int, dict]], list[str]]:
    """(line number, record) for each good data row of a CSV file, every cell read as text, and one problem
    ("line N: why") for each row that cannot be read: a wrong number of fields, bytes that are not UTF-8,
    a row that `too_big` (given its size in bytes) refuses. One broken row never loses the others: when a
    broken row ran over several lines (a stray quote swallowing what follows), reading starts again on the
    line after its first.

    Raises CsvFileError naming `what` when the file has no header or lacks a required column.
    """
    csv.field_size_limit(sys.maxsize)
    text = body.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    lines = [line for line in _LINE_END.split(text) if line]
    records: list[tuple[int, dict]] = []
    problems: list[str] = []
    header: list[str] | None = None
    index = 0                                   # 0-based physical line where the reader (re)starts
    while index < len(lines):
        reader = csv.reader(itertools.islice(lines, index, None))
        restart = None
        done = 0                                # lines the reader has consumed since `index`
        while True:
            first = index + done                # 0-based first line of the next record
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                done = reader.line_num
                problems.append(f"line {first + 1}: {exc}")
                continue
            done = reader.line_num
            last = index + done                 # 0-based line after the record
            if not row or (len(row) == 1 and not row[0].strip()):
                continue                        # a blank line
            if header is None:
                header = [name.strip() for name in row]
                missing = required - set(header)
                if missing:
                    raise CsvFileError(f"{what} lacks columns: {', '.join(sorted(missing))}")
                continue
            raw = "".join(lines[first:last])
            reason = None
            if len(row) != len(header):
                reason = f"{len(row)} fields where the header has {len(header)}"
            elif _NOT_UTF8.search(raw):
                reason = "bytes that are not UTF-8"
            elif too_big is not None:
                reason = too_big(len(raw.encode("utf-8", "surrogateescape")))
            if reason is None:
                records.append((first + 1, dict(zip(header, row))))
                continue
            problems.append(f"line {first + 1}: {reason}")
            if last - first > 1 and len(row) != len(header):
                restart = _resume_at(lines, first + 1, last, len(header))
                if restart is not None:
                    break
        if restart is None:
            break
        index = restart
    if header is None:
        raise CsvFileError(f"{what} is empty: no header row")
    return records, problems


def _resume_at(lines: list[str], start: int, end: int, fields: int) -> int | None:
    """Inside a broken record that ran over lines [start - 1, end) (a stray quote swallowing what follows), the first
    line where a well-formed record begins: reading resumes there. None when no line inside it begins one (a
    quoted cell that legitimately spans lines): then nothing inside is read as a record of its own."""
    for index in range(start, end):
        try:
            row = next(csv.reader(itertools.islice(lines, index, None)))
        except (StopIteration, csv.Error):
            continue
        if len(row) == fields and not _NOT_UTF8.search(lines[index]):
            return index
    return None


def cell_text(value) -> str | None:
    """A CSV/DataFrame cell as stripped text; None for missing (None, NaN) or blank cells."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    return text or None


def cell_texts(record: dict, names) -> dict[str, str | None]:
    """The cells `names` of a record, each as text (cell_text), under its own name."""
    return {name: cell_text(record.get(name)) for name in names}


# ---- garbled text: what a wrong decoding or damaged bytes leave behind ----

# UTF-8 bytes read as cp1252 or Latin-1: a lead byte's character (Â..Þ for two-byte sequences, à..ï for three)
# followed by what a continuation byte (0x80-0xBF) becomes: 'Ã©' for é, 'â€™' for ’, 'Ä' for č.
_CONTINUATION = "".join(sorted(set(bytes(range(0x80, 0xC0)).decode("latin-1")
                                   + bytes(range(0x80, 0xC0)).decode("cp1252", errors="ignore"))))
_CONT = "[" + re.escape(_CONTINUATION) + "]"
_MOJIBAKE = re.compile("(?:[\u00c2-\u00d6\u00d8-\u00de]" + _CONT + "|[\u00e0-\u00ef]" + _CONT + "{2})")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _around(text: str, start: int, end: int) -> str:
    left = max(0, text.rfind(" ", 0, max(0, start - 1)) + 1)
    right = text.find(" ", end + 1)
    snippet = text[left:right if right != -1 else len(text)]
    return snippet if len(snippet) <= 40 else snippet[:37] + "..."


def text_damage(text: str | None) -> str | None:
    """Why a text is garbled, or None: U+FFFD where bytes could not be decoded, UTF-8 read in the wrong encoding
    ('applicantâ€™s'), or control characters that no document holds."""
    if not text:
        return None
    count = text.count("\ufffd")
    if count:
        at = text.index("\ufffd")
        return f"{count} undecodable character(s) (U+FFFD), first in {_around(text, at, at + 1)!r}"
    match = _MOJIBAKE.search(text)
    if match:
        return f"UTF-8 read in the wrong encoding: {_around(text, match.start(), match.end())!r}"
    match = _CONTROL.search(text)
    if match:
        return f"control character U+{ord(match.group()):04X} in {_around(text, match.start(), match.end())!r}"
    return None
