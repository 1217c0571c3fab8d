"""HUDOC document bodies (conversion-endpoint HTML, Word DOCX) → Blocks and footnotes. Pure.

Class names in the HTML are hashes that change between documents, so the style facts come from
the CSS they point to (font size, keep-with-next), never from the names themselves.

A body is untrusted: before a parser sees it, an HTML body's start tags are counted on its raw bytes and a
DOCX part's declared size and compression ratio are checked (a zip bomb is never inflated), then its
elements counted; the document's parse-time budget is checked between the reading stages. Each limit
refused is a DocumentError naming it (caseforge.archive: ELEMENT_LIMITS, PARSE_BUDGETS_S, ZIP_RATIO_LIMIT,
SIZE_LIMITS_MB ("hudoc", "docx_part")).
"""
from __future__ import annotations

import io
import re
import zipfile
from collections import Counter

from bs4 import BeautifulSoup, NavigableString, Tag
from lxml import etree

from caseforge.archive import (LimitExceeded, ParseBudget, ZIP_RATIO_FROM_BYTES, element_problem, size_limit_bytes,
                               size_limit_text, zip_ratio_limit)
from caseforge.tasks.hudoc.paragraphs import Block, ParsedJudgment, build_rows

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


class DocumentError(ValueError):
    """A body that cannot be read as a judgment (empty, not HTML/DOCX, corrupt)."""


def _css_rules(soup: BeautifulSoup) -> dict[str, dict[str, str]]:
    rules: dict[str, dict[str, str]] = {}
    for style in soup.find_all("style"):
        for name, body in re.findall(r"\.([\w-]+)\s*\{([^}]*)\}", style.get_text()):
            props = {}
            for decl in body.split(";"):
                if ":" in decl:
                    key, value = decl.split(":", 1)
                    props[key.strip().lower()] = value.strip().lower()
            rules[name] = props
    return rules


def _props(tag: Tag, rules: dict) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name in tag.get("class") or []:
        merged.update(rules.get(name, {}))
    for decl in (tag.get("style") or "").split(";"):
        if ":" in decl:
            key, value = decl.split(":", 1)
            merged[key.strip().lower()] = value.strip().lower()
    return merged


def _font_size(props: dict) -> float | None:
    match = re.match(r"(\d{1,4}(?:\.\d+)?)pt", props.get("font-size", ""))
    return float(match[1]) if match else None


def _bold(props: dict) -> bool:
    weight = props.get("font-weight", "")
    return weight == "bold" or weight == "bolder" or (weight.isdigit() and int(weight) >= 600)


def _footnote_ref(anchor: Tag) -> str | None:
    match = re.match(r"#_ftn(\d+)$", anchor.get("href") or "")
    return match[1] if match else None


def _html_block(p: Tag, rules: dict) -> tuple[Block, float | None]:
    pieces: list[str] = []
    refs: list[str] = []
    sizes: Counter = Counter()
    bold_chars = plain_chars = 0
    # depth-first over the block's nodes without recursion (a deeply nested body must not overflow the stack);
    # each entry: a node and whether an element above it is bold
    stack: list[tuple[object, bool]] = [(child, _bold(_props(p, rules))) for child in reversed(list(p.children))]
    while stack:
        child, bold_above = stack.pop()
        if isinstance(child, NavigableString):
            if type(child) is not NavigableString:       # comments, CDATA, doctype: not text
                continue
            text = str(child)
            pieces.append(text)
            parent = child.parent
            props = _props(parent, rules) if isinstance(parent, Tag) else {}
            size = _font_size(props)
            visible = len(text.strip())
            if size and visible:
                sizes[size] += visible
            if bold_above or _bold(props):
                bold_chars += visible
            else:
                plain_chars += visible
        elif isinstance(child, Tag):
            if child.name == "br":
                pieces.append("\n")
            elif child.name == "a" and _footnote_ref(child):
                refs.append(_footnote_ref(child))
            else:
                bold = bold_above or _bold(_props(child, rules))
                stack.extend((grandchild, bold) for grandchild in reversed(list(child.children)))
    props = _props(p, rules)
    size = sizes.most_common(1)[0][0] if sizes else None
    block = Block("".join(pieces), heading_style="avoid" in props.get("page-break-after", ""), footnote_refs=refs,
                  emphasis=bold_chars > 0 and plain_chars == 0)
    return block, size


def html_blocks(body: bytes) -> tuple[list[Block], dict[str, str]]:
    """The judgment's <p> blocks in order, and the footnotes (number → text) kept at the end.

    Bytes that are not UTF-8 become U+FFFD, which build_rows reports as garbled text."""
    text = body.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise DocumentError("empty HTML body")
    try:
        soup = BeautifulSoup(text, "lxml")
    except Exception as exc:  # noqa: BLE001 - the tree builder on bytes that are not HTML at all
        raise DocumentError(f"not readable HTML: {type(exc).__name__}: {exc}") from exc
    rules = _css_rules(soup)
    footnotes: dict[str, str] = {}
    for div in soup.find_all("div", id=re.compile(r"^_ftn\d+$")):
        number = str(div["id"])[4:]
        for anchor in div.find_all("a"):
            anchor.decompose()
        footnotes[number] = re.sub(r"\s+", " ", div.get_text("")).replace("\u00a0", " ").strip()
        div.decompose()
    sized = [_html_block(p, rules) for p in soup.find_all("p")]
    if not sized:
        raise DocumentError("HTML body has no paragraphs")
    sizes = Counter(size for block, size in sized if size and len(block.text) > 200)
    body_size = sizes.most_common(1)[0][0] if sizes else None
    blocks = []
    for block, size in sized:
        block.quote_style = bool(body_size and size and size < body_size)
        blocks.append(block)
    return blocks, footnotes


def _docx_text(paragraph) -> tuple[str, list[str]]:
    """Text of a Word paragraph including runs nested in smart tags, hyperlinks and fields."""
    pieces, refs = [], []
    for node in paragraph.iter():
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
