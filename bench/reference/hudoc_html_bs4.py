"""The HUDOC HTML body reader as it was before the lxml rewrite (tasks/hudoc/readers.py at 82bd70b), on
BeautifulSoup. Kept only as the yardstick: bench/echr_parse.py times it against today's reader in one run,
and tests/samples/test_hudoc_html_reader.py checks that both readers give the same blocks on mutated samples.
Nothing in caseforge imports it; do not fix or speed it up, it is the old behaviour by definition.
"""
from __future__ import annotations

import re
from collections import Counter

from bs4 import BeautifulSoup, NavigableString, Tag

from caseforge.tasks.hudoc.paragraphs import Block
from caseforge.tasks.hudoc.readers import DocumentError


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


def html_blocks_bs4(body: bytes) -> tuple[list[Block], dict[str, str]]:
    """readers.html_blocks as it was: the judgment's <p> blocks in order, and the footnotes kept at the end."""
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
