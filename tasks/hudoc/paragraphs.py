"""From a judgment's blocks (one per printed <p> / Word paragraph) to numbered paragraphs.

Format readers (html.py, docx.py) turn a document into `Block`s carrying text and a few style
facts; this module decides which block starts a printed paragraph, which is a heading, and which
continues the paragraph before it (quoted Convention text, a paragraph split over several <p>).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from caseforge.text import text_damage
from caseforge.tasks.hudoc.labels import label_level, paragraph_number, split_label, starts_with_quote

COLUMNS = ["itemid", "para_no", "part", "section", "heading_path", "text", "ordinal", "footnotes",
           "source_format", "raw_sha256"]

MAIN_HEADINGS = {
    "PROCEDURE": "PROCEDURE",
    "THE FACTS": "THE FACTS",
    "AS TO THE FACTS": "THE FACTS",
    "THE LAW": "THE LAW",
    "AS TO THE LAW": "THE LAW",
    "LAW": "THE LAW",
    "RELEVANT LEGAL FRAMEWORK": "RELEVANT LEGAL FRAMEWORK",
    "RELEVANT LEGAL FRAMEWORK AND PRACTICE": "RELEVANT LEGAL FRAMEWORK",
    "RELEVANT LEGAL FRAMEWORK AND INTERNATIONAL MATERIAL": "RELEVANT LEGAL FRAMEWORK",
    "PROCEEDINGS BEFORE THE COMMISSION": "PROCEEDINGS BEFORE THE COMMISSION",
    "FINAL SUBMISSIONS TO THE COURT": "FINAL SUBMISSIONS TO THE COURT",
    "FINAL SUBMISSIONS MADE TO THE COURT": "FINAL SUBMISSIONS TO THE COURT",
    "INTRODUCTION": "INTRODUCTION",
}
OPERATIVE = "OPERATIVE"
MAX_NUMBER_JUMP = 3          # a printed number may skip a little (a missing paragraph), never go back
MAX_HEADING_CHARS = 250
UNSTYLED_HEADING_CHARS = 150   # a numbered line without heading style is a heading only when short and unpunctuated
LIST_ITEM_LABEL = re.compile(r"^[a-z\d]{1,3}\)$")   # 'b)', 'ii)', '2)' (no opening bracket): a list item's label


@dataclass
class Block:
    text: str
    heading_style: bool = False      # keep-with-next / a Word heading style
    quote_style: bool = False        # smaller type / a Word quote style
    footnote_refs: list[str] = field(default_factory=list)
    emphasis: bool = False           # every character bold (HTML): how unstyled headings still stand out


@dataclass
class ParsedJudgment:
    rows: list[dict]
    problems: list[str]
    skipped_blocks: int = 0

    @property
    def has_operative_part(self) -> bool:
        """Whether the body reached 'FOR THESE REASONS': a judgment or decision without it is cut short."""
        return any(row.get("section") == OPERATIVE for row in self.rows)


def clean(text: str) -> str:
    text = text.replace("\u00a0", " ").replace("\u2011", "-").replace("\r", "").replace("\t", " ")
    while "  " in text:               # runs of spaces and tabs become one space (str.replace: ~10x a regex here)
        text = text.replace("  ", " ")
    return "\n".join(line.strip() for line in text.split("\n")).strip()


def main_heading(text: str) -> str | None:
    if text[:1] not in ("F", "f") and text.upper() != text:
        return None          # neither 'FOR THESE REASONS' nor a capitalised heading: skip the normalising below
    key = re.sub(r"[\s,.:;]+$", "", re.sub(r"\s+", " ", text)).upper()
    if key.startswith("FOR THESE REASONS"):
        return OPERATIVE
    if text.upper() != text:
        return None
    return MAIN_HEADINGS.get(key)


def opinion_title(text: str) -> bool:
    if text.upper() != text:
        return False
    flat = re.sub(r"\s+", " ", text)
    return (len(flat) < 300 and flat.upper() == flat and re.search(r"\bOPINIONS?\b", flat) is not None
            and split_label(flat)[0] is None)


class _Builder:
    def __init__(self, itemid: str):
        self.itemid = itemid
        self.rows: list[dict] = []
        self.part = "judgment"
        self.opinions = 0
        self.section: str | None = None
        self.headings: dict[int, str] = {}
        self.last_no = 0
        self.current: dict | None = None
        self.started = False
        self.in_tail = False
        self.skipped = 0

    def heading_path(self) -> str | None:
        parts = [self.section] if self.section else []
        parts += [self.headings[level] for level in sorted(self.headings)]
        return " > ".join(parts) or None

    def flush(self) -> None:
        if self.current is not None and self.current["text"].strip():
            self.current["text"] = self.current["text"].strip()
            self.current["ordinal"] = len(self.rows) + 1
            self.rows.append(self.current)
        self.current = None

    def open(self, number: int | None, text: str, refs: list[str]) -> None:
        self.flush()
        self.current = {
            "itemid": self.itemid, "para_no": str(number) if number is not None else None, "part": self.part,
            "section": self.section, "heading_path": self.heading_path(), "text": text, "footnotes": list(refs),
        }

    def set_heading(self, level: int, text: str) -> None:
        self.flush()
        for deeper in [lv for lv in self.headings if lv >= level]:
            del self.headings[deeper]
        self.headings[level] = re.sub(r"\s+", " ", text)

    def new_part(self) -> None:
        self.flush()
        self.opinions += 1
        self.part = f"opinion:{self.opinions}"
        self.section = None
        self.headings = {}
        self.last_no = 0
        self.started = True
        self.in_tail = False

    def accepts_number(self, number: int, block: Block, rest: str) -> bool:
        if block.quote_style or starts_with_quote(block.text):
            return False
        if self.section == OPERATIVE:
            return number == self.last_no + 1
        if not (self.last_no < number <= self.last_no + MAX_NUMBER_JUMP):
            return False
        if block.heading_style and len(rest) < MAX_HEADING_CHARS:
            return False
        return True

    def inside_quotation(self) -> bool:
        """The open paragraph quotes something whose closing mark has not come yet (a statute's list items)."""
        if self.current is None:
            return False
        text = self.current["text"]
        return text.count("“") + text.count("«") > text.count("”") + text.count("»")

    def is_heading(self, block: Block, label: str | None, rest: str) -> bool:
        if self.section == OPERATIVE or starts_with_quote(block.text):
            return False
        flat = block.text.replace("\n", " ")
        styled = block.heading_style or (block.emphasis and not self.inside_quotation())
        if label is not None and styled and len(flat) < MAX_HEADING_CHARS and "\n" not in block.text.strip():
            return True      # a small-type or bold heading such as '(a) The parties' submissions', 'A. ... Ms S.'
        if block.quote_style:
            return False
        if label is None:
            return block.heading_style and flat.upper() == flat and len(flat) < MAX_HEADING_CHARS
        if LIST_ITEM_LABEL.match(label) or (label_level(label, rest) >= 4 and self.inside_quotation()):
            return False     # 'b) to have a defence counsel', '(c) ...' inside a quote: a quoted list's item
        if len(flat) >= MAX_HEADING_CHARS or "\n" in block.text.strip():
            return False
        return block.heading_style or (len(flat) < UNSTYLED_HEADING_CHARS
                                       and not flat.rstrip().endswith((".", ";", ":", ",")))

    def add(self, block: Block) -> None:
        text = block.text
        if opinion_title(text) and self.started:
            self.new_part()
            return
        section = main_heading(text)
        if section and not (self.section == OPERATIVE and section != OPERATIVE):
            self.flush()
            self.section = section
            self.headings = {}
            self.started = True
            if section == OPERATIVE:
                self.last_no = 0
            return
        if not self.started or self.in_tail:
            self.skipped += 1
            return
        if self.section == OPERATIVE and re.match(r"^Done in (?:English|French)", text):
            self.flush()
            self.in_tail = True
            self.skipped += 1
            return
        number, rest = paragraph_number(text)
        if number is not None and self.accepts_number(number, block, rest):
            self.last_no = number
            self.open(number, rest, block.footnote_refs)
            return
        label, rest = split_label(text)
        if self.is_heading(block, label, rest):
            self.set_heading(label_level(label, rest) if label else 1, text)
            return
        if self.current is not None:
            self.current["text"] += "\n" + text
            self.current["footnotes"] += block.footnote_refs
        else:
            self.open(None, text, block.footnote_refs)   # unnumbered text of its own (e.g. an unnumbered opinion)
            self.flush()


def order_problems(rows: list[dict]) -> list[str]:
    """Printed numbers must strictly increase within a part (the operative list counts on its own)."""
    problems, last = [], {}
    for row in rows:
        if row["para_no"] is None:
            continue
        key = (row["part"], row["section"] == OPERATIVE)
        number = int(row["para_no"])
        if key in last and number <= last[key]:
            problems.append(f"{row['part']}{' operative' if key[1] else ''}: paragraph {number} follows {last[key]}")
        last[key] = number
    return problems


def build_rows(itemid: str, blocks: list[Block], footnotes: dict[str, str], source_format: str,
               raw_sha256: str) -> ParsedJudgment:
    builder = _Builder(itemid)
    for block in blocks:
        block.text = clean(block.text)
        if block.text:
            builder.add(block)
    builder.flush()
    rows = builder.rows
    for row in rows:
        row["footnotes"] = [footnotes.get(ref, f"[{ref}]") for ref in dict.fromkeys(row["footnotes"])]
        row["source_format"] = source_format
        row["raw_sha256"] = raw_sha256
    problems = order_problems(rows)
    if not any(r["para_no"] for r in rows):
        problems.append("no numbered paragraph found")
    for row in rows:
        damage = text_damage(row["text"])
        if damage:
            where = f"paragraph {row['para_no']}" if row["para_no"] else f"unnumbered text {row['ordinal']}"
            problems.append(f"garbled text in {where}{'' if row['part'] == 'judgment' else ' of ' + row['part']}: "
                            f"{damage}")
            break
    return ParsedJudgment(rows, problems, builder.skipped)
