"""HUDOC document bodies (conversion-endpoint HTML, Word DOCX) → Blocks and footnotes. Pure.

Class names in the HTML are hashes that change between documents, so the style facts come from
the CSS they point to (font size, keep-with-next), never from the names themselves.

The HTML goes through lxml's HTML parser directly, reading every body as BeautifulSoup would
(tests/samples/test_hudoc_html_reader.py compares it with the reader frozen in bench/reference/; docs/benchmarks.md
says what it costs), so a few BeautifulSoup habits are kept on purpose: text inside <style>, <script>,
<template>, <rt> and <rp> is not body text, and a run of ASCII whitespace between tags counts as one space or
one line break (except inside <pre> and <textarea>).

A body is untrusted: before a parser sees it, an HTML body's start tags are counted on its raw bytes and a
DOCX part's declared size and compression ratio are checked (a zip bomb is never inflated), then its
elements counted; the document's parse-time budget is checked between the reading stages. Each limit
refused is a DocumentError naming it and the setting that raises it (caseforge.settings.Settings:
max_elements_hudoc_body, max_parse_s_hudoc_body, max_zip_ratio, max_mb_hudoc_docx_part).
"""
from __future__ import annotations

import io
import re
import zipfile
from collections import Counter

from lxml import etree

from caseforge.archive import (LimitExceeded, ParseBudget, ZIP_RATIO_FROM_BYTES, element_problem, size_limit_bytes,
                               size_limit_text, zip_ratio_limit)
from caseforge.tasks.hudoc.paragraphs import Block, ParsedJudgment, build_rows

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


class DocumentError(ValueError):
    """A body that cannot be read as a judgment (empty, not HTML/DOCX, corrupt)."""


_FOOTNOTE_ID = re.compile(r"^_ftn\d+$")
_FOOTNOTE_HREF = re.compile(r"#_ftn(\d+)$")
_FONT_SIZE = re.compile(r"(\d{1,4}(?:\.\d+)?)pt")
_CSS_RULE = re.compile(r"\.([\w-]+)\s*\{([^}]*)\}")
NOT_BODY_TEXT = frozenset({"style", "script", "template", "rt", "rp"})   # text inside these is never body text
KEEPS_WHITESPACE = frozenset({"pre", "textarea"})
ASCII_SPACES = " \n\t\x0c\r"
MAX_DEPTH = 256        # libxml2 builds no deeper tree: it stops there and silently drops the rest of the body
_AT_MAX_DEPTH = etree.XPath("boolean(/*" + "/*" * (MAX_DEPTH - 1) + ")")


def _declarations(body: str) -> dict[str, str]:
    props = {}
    for decl in body.split(";"):
        if ":" in decl:
            key, value = decl.split(":", 1)
            props[key.strip().lower()] = value.strip().lower()
    return props


def _css_rules(root) -> dict[str, dict[str, str]]:
    rules: dict[str, dict[str, str]] = {}
    for style in root.iter("style"):
        css = "".join(text for text, container in _strings(style, {}, _container(style)) if container == "style")
        for name, body in _CSS_RULE.findall(css):
            rules[name] = _declarations(body)
    return rules


class _Styles:
    """An element's style facts from its class names (looked up in the CSS rules) and its style attribute.

    A judgment repeats a few dozen class/style combinations over thousands of elements: each is worked out once."""

    def __init__(self, rules: dict[str, dict[str, str]]):
        self.rules = rules
        self.known: dict[tuple, tuple[float | None, bool, bool]] = {}

    def of(self, element) -> tuple[float | None, bool, bool]:
        """(font size in pt, bold, keep-with-next)."""
        key = (element.get("class"), element.get("style"))
        facts = self.known.get(key)
        if facts is None:
            props: dict[str, str] = {}
            for name in (key[0] or "").split():
                props.update(self.rules.get(name, {}))
            props.update(_declarations(key[1] or ""))
            size = _FONT_SIZE.match(props.get("font-size", ""))
            weight = props.get("font-weight", "")
            facts = (float(size[1]) if size else None,
                     weight in ("bold", "bolder") or (weight.isdigit() and int(weight) >= 600),
                     "avoid" in props.get("page-break-after", ""))
            self.known[key] = facts
        return facts


def _container(element) -> str | None:
    """The nearest enclosing element (this one included) whose text is not body text: 'style', 'script', ..."""
    for node in (element, *element.iterancestors()):
        if node.tag in NOT_BODY_TEXT:
            return node.tag
    return None


def _keeps_whitespace(element) -> bool:
    return any(node.tag in KEEPS_WHITESPACE for node in (element, *element.iterancestors()))


def _strings(element, skipped: dict, container: str | None):
    """Every text run under `element` in document order with its nearest non-body container's name, leaving
    out the subtrees in `skipped` (their tails stay: they belong to the parent). No recursion: a deeply
    nested body must not overflow the stack."""
    stack = [(element, container)]
    while stack:
        node, outer = stack.pop()
        if isinstance(node, str):
            yield node, outer
            continue
        inner = node.tag if node.tag in NOT_BODY_TEXT else outer
        for child in reversed(node):
            if child.tail:
                stack.append((child.tail, inner))
            if isinstance(child.tag, str) and child not in skipped:
                stack.append((child, inner))
        if node.text:
            stack.append((node.text, inner))


def _footnote_ref(anchor) -> str | None:
    match = _FOOTNOTE_HREF.match(anchor.get("href") or "")
    return match[1] if match else None


def _html_block(p, styles: _Styles, notes: dict) -> tuple[Block, float | None]:
    pieces: list[str] = []
    refs: list[str] = []
    sizes: Counter = Counter()
    chars = {True: 0, False: 0}           # visible characters in bold, not in bold

    def take(text: str, facts: tuple) -> None:
        """A text run, with the facts of the element holding it: (font size, bold, hidden, keeps whitespace)."""
        size, bold, hidden, keeps = facts
        if hidden:
            return
        if not keeps and not text.strip(ASCII_SPACES):
            text = "\n" if "\n" in text else " "     # a whitespace run between tags counts once
        pieces.append(text)
        visible = len(text.strip())
        if size and visible:
            sizes[size] += visible
        chars[bold] += visible

    size, bold, keep_with_next = styles.of(p)
    facts = (size, bold, _container(p) is not None, _keeps_whitespace(p))
    if p.text:
        take(p.text, facts)
    # depth-first without recursion; a frame: an element, its children still to read, the facts of its text
    frames = [(p, iter(p), facts)]
    while frames:
        element, children, facts = frames[-1]
        for child in children:
            tag = child.tag
            if isinstance(tag, str) and not (notes and child in notes):     # not a comment, a PI or a footnote
                if tag == "br":
                    pieces.append("\n")
                elif tag == "a" and _footnote_ref(child):
                    refs.append(_footnote_ref(child))
                else:
                    size, bold, _ = styles.of(child)
                    child_facts = (size, bold or facts[1], facts[2] or tag in NOT_BODY_TEXT,
                                   facts[3] or tag in KEEPS_WHITESPACE)
                    if text := child.text:
                        take(text, child_facts)
                    if len(child):
                        frames.append((child, iter(child), child_facts))
                        break                    # its tail comes once its children are read
            if tail := child.tail:
                take(tail, facts)
        else:
            frames.pop()
            if frames and element.tail:
                take(element.tail, frames[-1][2])
    block = Block("".join(pieces), heading_style=keep_with_next, footnote_refs=refs,
                  emphasis=chars[True] > 0 and chars[False] == 0)
    return block, sizes.most_common(1)[0][0] if sizes else None


def _html_root(text: str):
    """The document tree as libxml2's HTML push parser builds it (recovering from broken markup), or None."""
    parser = etree.HTMLParser(recover=True, no_network=True, huge_tree=False)
    try:
        parser.feed(text[1:] if text.startswith("\ufeff") else text)     # a second byte-order mark
        root = parser.close()
    except Exception as exc:  # noqa: BLE001 - lxml on text that is not HTML at all
        raise DocumentError(f"not readable HTML: {type(exc).__name__}: {exc}") from exc
    if root is not None and _AT_MAX_DEPTH(root):
        raise DocumentError(f"HTML elements nested {MAX_DEPTH} deep: the parser would drop what follows them")
    return root


def html_blocks(body: bytes) -> tuple[list[Block], dict[str, str]]:
    """The judgment's <p> blocks in order, and the footnotes (number → text) kept at the end.

    Bytes that are not UTF-8 become U+FFFD, which build_rows reports as garbled text."""
    text = body.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise DocumentError("empty HTML body")
    root = _html_root(text)
    if root is None:
        raise DocumentError("HTML body has no paragraphs")
    styles = _Styles(_css_rules(root))
    footnotes: dict[str, str] = {}
    notes: dict = {}          # footnote <div>s: left out of the body's blocks (a dict: ordered, hashed by identity)
    for div in root.iter("div"):
        if not _FOOTNOTE_ID.search(div.get("id") or "") or any(a in notes for a in div.iterancestors()):
            continue
        anchors = dict.fromkeys(div.iter("a"))
        note = "".join(t for t, container in _strings(div, anchors, _container(div)) if container is None)
        footnotes[str(div.get("id"))[4:]] = re.sub(r"\s+", " ", note).replace("\u00a0", " ").strip()
        notes[div] = None
    sized = [_html_block(p, styles, notes) for p in root.iter("p")
             if not notes or not any(a in notes for a in p.iterancestors())]
    if not sized:
        raise DocumentError("HTML body has no paragraphs")
    sizes = Counter(size for block, size in sized if size and len(block.text) > 200)
    body_size = sizes.most_common(1)[0][0] if sizes else None
    blocks = []
    for block, size in sized:
        block.quote_style = bool(body_size and size and size < body_size)
        blocks.append(block)
    return blocks, footnotes


_DOCX_TEXT_TAGS = [W + name for name in ("t", "tab", "br", "cr", "noBreakHyphen", "footnoteReference")]


def _docx_text(paragraph) -> tuple[str, list[str]]:
    """Text of a Word paragraph including runs nested in smart tags, hyperlinks and fields."""
    pieces, refs = [], []
    for node in paragraph.iter(*_DOCX_TEXT_TAGS):
        tag = node.tag
        if tag == W + "t":
            pieces.append(node.text or "")
        elif tag == W + "tab":
            pieces.append("\t")
        elif tag in (W + "br", W + "cr"):
            pieces.append("\n")
        elif tag == W + "noBreakHyphen":
            pieces.append("\u2011")             # Word's non-breaking hyphen: 'ECHR 2001-VII', 'whistle-blowers'

        elif tag == W + "footnoteReference":
            refs.append(node.get(W + "id"))
    return "".join(pieces), refs


def count_start_tags(markup: bytes) -> int:
    """Start tags in HTML or XML bytes, counted without parsing them (an upper bound: a stray '<' counts)."""
    return markup.count(b"<") - markup.count(b"</") - markup.count(b"<!") - markup.count(b"<?")


def _read_part(archive: zipfile.ZipFile, name: str) -> bytes | None:
    """A part of the DOCX (None when absent), inflated only when its declared size, its compression ratio and
    then its element count are within the limits; zipfile never inflates past the declared size."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    limit = size_limit_bytes("hudoc", "docx_part")
    if info.file_size > limit:
        raise DocumentError(f"{name} would inflate to {info.file_size:,} bytes, over "
                            f"{size_limit_text('hudoc', 'docx_part')}; not read")
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > ZIP_RATIO_FROM_BYTES and ratio > zip_ratio_limit():
        raise DocumentError(f"{name} inflates {ratio:.0f} times its {info.compress_size:,} compressed bytes, over the "
                            f"limit of {zip_ratio_limit():g} (set CASEFORGE_MAX_ZIP_RATIO to raise it); not read")
    with archive.open(info) as part:
        data = part.read(limit + 1)
    too_many = element_problem("hudoc", "body", count_start_tags(data))
    if too_many:
        raise DocumentError(f"{name}: {too_many}")
    return data


def _xml(data: bytes):
    """A part of the DOCX as an element tree: no entity expansion, no network, no huge trees."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False)
    root = etree.fromstring(data, parser)
    if root is None:
        raise DocumentError("an empty XML part")
    return root


def _docx_footnotes(archive: zipfile.ZipFile) -> dict[str, str]:
    xml = _read_part(archive, "word/footnotes.xml")
    if xml is None:
        return {}
    notes = {}
    for note in _xml(xml).iter(W + "footnote"):
        if note.get(W + "type") in ("separator", "continuationSeparator"):
            continue
        text = "".join(t.text or "" for t in note.iter(W + "t")).strip()
        text = re.sub(r"^[.\s]+", "", text)      # the note number is a field; its '.' stays behind
        if text:
            notes[note.get(W + "id")] = re.sub(r"\s+", " ", text)
    return notes


def _docx_styles(archive: zipfile.ZipFile) -> dict[str, str]:
    xml = _read_part(archive, "word/styles.xml")
    if xml is None:
        return {}
    root = _xml(xml)
    names = {}
    for style in root.iter(W + "style"):
        name = style.find(W + "name")
        names[style.get(W + "styleId")] = (name.get(W + "val") if name is not None else None) or style.get(W + "styleId") or ""
    return names


def docx_blocks(body: bytes, budget: ParseBudget | None = None) -> tuple[list[Block], dict[str, str]]:
    """Word paragraphs in body order (with or without smart tags), Word footnotes by id.

    Whatever is wrong with the package (not a zip, a corrupt or encrypted member, XML that does not parse,
    no <w:body>, a part over its limits) is a DocumentError saying so: the stage quarantines this body and
    goes on."""
    try:
        return _docx_blocks(body, budget or ParseBudget("hudoc", "body"))
    except DocumentError:
        raise
    except LimitExceeded as exc:
        raise DocumentError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib and lxml raise many kinds on a corrupt package
        raise DocumentError(f"not a readable DOCX: {type(exc).__name__}: {exc}") from exc


def _docx_blocks(body: bytes, budget: ParseBudget) -> tuple[list[Block], dict[str, str]]:
    archive = zipfile.ZipFile(io.BytesIO(body))
    xml = _read_part(archive, "word/document.xml")
    if xml is None:
        raise DocumentError("not a readable DOCX: no word/document.xml")
    document = _xml(xml)
    del xml
    body_el = document.find(W + "body")
    if body_el is None:
        raise DocumentError("DOCX has no <w:body>: no text to read")
    styles = _docx_styles(archive)
    budget.check("reading its XML")
    blocks = []
    for paragraph in body_el.iter(W + "p"):
        if len(blocks) % 1000 == 999:
            budget.check("reading its Word paragraphs")
        style_el = paragraph.find(f"{W}pPr/{W}pStyle")
        style_id = style_el.get(W + "val") if style_el is not None else None
        style = (styles.get(style_id, style_id) or "Normal") if style_id else "Normal"
        text, refs = _docx_text(paragraph)
        lowered = style.lower()
        heading = bool(re.search(r"head|_h_", lowered))
        quote = "quot" in lowered
        blocks.append(Block(text, heading_style=heading, quote_style=quote, footnote_refs=refs))
    return blocks, _docx_footnotes(archive)


def detect_format(body: bytes) -> str:
    return "docx" if body[:2] == b"PK" else "html"


def parse_document(itemid: str, body: bytes, raw_sha256: str, source_format: str | None = None,
                   budget: ParseBudget | None = None) -> ParsedJudgment:
    """A judgment body (HTML or DOCX) as paragraph rows plus the order problems found in them. DocumentError
    for a body that cannot be read, or would go past its limits: elements, DOCX parts, the parse-time
    `budget` (by default the hudoc body budget, started now)."""
    budget = budget or ParseBudget("hudoc", "body")
    source_format = source_format or detect_format(body)
    if source_format == "docx":
        blocks, footnotes = docx_blocks(body, budget)
    else:
        too_many = element_problem("hudoc", "body", count_start_tags(body))
        if too_many:
            raise DocumentError(too_many)
        blocks, footnotes = html_blocks(body)
    try:
        budget.check("reading its blocks")
        parsed = build_rows(itemid, blocks, footnotes, source_format, raw_sha256)
        budget.check("numbering its paragraphs")
    except LimitExceeded as exc:
        raise DocumentError(str(exc)) from None
    return parsed
