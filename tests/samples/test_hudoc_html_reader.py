"""The lxml HTML reader (tasks/hudoc/readers.py) reads every judgment body as the BeautifulSoup reader it replaced
did: same blocks (text, heading and quote style, emphasis, footnote references) and same footnotes, or the same
DocumentError, on Malyy's body and on variants of it that held-out judgments may show (other whitespace, entities
for characters, nested spans, missing classes and CSS, Windows-1252 bytes, comments, markup HUDOC does not use,
damaged and truncated bytes). The old reader is the frozen copy in bench/reference/hudoc_html_bs4.py.
"""
from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

import pytest

from caseforge.tasks.hudoc.readers import DocumentError, html_blocks, parse_document

pytestmark = pytest.mark.samples

REFERENCE = Path(__file__).resolve().parents[2] / "bench" / "reference" / "hudoc_html_bs4.py"
RANDOM_VARIANTS = 40          # seeded mutations of a slice of the body (each parsed by both readers)


def _old_reader():
    spec = importlib.util.spec_from_file_location("hudoc_html_bs4", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.html_blocks_bs4


html_blocks_bs4 = _old_reader()


def _read(reader, body: bytes):
    try:
        blocks, footnotes = reader(body)
    except DocumentError as exc:
        return f"DocumentError: {exc}"
    return [(b.text, b.heading_style, b.quote_style, b.footnote_refs, b.emphasis) for b in blocks], footnotes


def _same_as_before(body: bytes) -> None:
    old, new = _read(html_blocks_bs4, body), _read(html_blocks, body)
    if old == new:
        return
    if isinstance(old, str) or isinstance(new, str):
        pytest.fail(f"old: {str(old)[:200]} / new: {str(new)[:200]}")
    assert old[1] == new[1], "footnotes differ"
    assert len(old[0]) == len(new[0]), f"{len(old[0])} blocks before, {len(new[0])} now"
    for number, (before, now) in enumerate(zip(old[0], new[0])):
        assert before == now, f"block {number}"


@pytest.fixture(scope="module")
def malyy(samples_dir) -> str:
    return (samples_dir / "hudoc" / "html" / "001-192223.html").read_bytes().decode("utf-8")


def _between_tags(text: str, gap: str) -> str:
    return text.replace("><", ">" + gap + "<")


VARIANTS = {
    "as published": lambda t: t,
    "newlines and indents between tags": lambda t: _between_tags(t, "\n    "),
    "CRLF between tags": lambda t: _between_tags(t, "\r\n"),
    "tabs, form feeds and bare CRs between tags": lambda t: _between_tags(_between_tags(t, "\t"), "\x0c\r"),
    "named entities": lambda t: (t.replace("’", "&rsquo;").replace("“", "&ldquo;").replace("”", "&rdquo;")
                                 .replace("&#xa0;", "&nbsp;").replace("§", "&sect;")),
    "decimal entities and literal no-break spaces": lambda t: t.replace("’", "&#8217;").replace("&#xa0;", "\u00a0"),
    "nested spans, bold and unknown classes": lambda t: re.sub(
        r"(<span class='([^']*)'>)([^<]+)(</span>)",
        lambda m: f"{m[1]}<span class='{'s7D2086B4' if len(m[3]) % 3 == 0 else 'nosuch'}'>{m[3]}</span>{m[4]}", t),
    "no classes on spans": lambda t: re.sub(r"<span class='[^']*'>", "<span>", t),
    "no classes at all": lambda t: re.sub(r" class='[^']*'", "", t),
    "no style sheet": lambda t: re.sub(r"<style>.*?</style>", "", t, flags=re.S),
    "inline styles for bold and size": lambda t: t.replace("class='s7D2086B4'", "style='font-weight: 700'")
                                                  .replace("class='sFBBFEE58'", "style='FONT-SIZE:10pt;'"),
    "upper-case tags, double-quoted attributes": lambda t: re.sub(
        r"='([^']*)'", r'="\1"', re.sub(r"<(/?)(p|span|div|a|br)\b", lambda m: "<" + m[1] + m[2].upper(), t)),
    "comments and processing instructions": lambda t: t.replace("</span><span", "</span><!-- x --><span")
                                                       .replace("</p><p", "</p><?php x ?><p"),
    "markup HUDOC does not use": lambda t: t.replace(
        "</span></p>", "</span><pre> \n\n </pre><script>x()</script><template>t</template>"
                       "<ruby>r<rt>t</rt></ruby><textarea>\n</textarea><br/>\n\n</p>", 40),
    "footnote div inside a paragraph": lambda t: t.replace(
        "<span class='sB8D990E2'>106</span>", "<span class='sB8D990E2'>106<div id='_ftn7'>note <a>[7]</a> seven"
                                              "</div></span>"),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_reads_a_variant_as_the_beautifulsoup_reader_did(malyy, variant):
    changed = VARIANTS[variant](malyy)
    assert (changed != malyy) == (variant != "as published")
    _same_as_before(changed.encode("utf-8"))


def test_reads_windows_1252_bytes_as_before(malyy):
    as_1252 = malyy.encode("cp1252", errors="replace")
    _same_as_before(as_1252)
    _same_as_before(b"<meta charset='windows-1252'>" + as_1252)


SNIPPETS = ["<!-- c -->", "<br>", "\r\n", "\n\n", "&nbsp;", "&bogus;", "<b>", "</b>", "</span>", "<p>", "</p>",
            "<div id='_ftn9'>note <a href='#_ftnref9'>[9]</a> text</div>", "<a href='#_ftn3'>[3]</a>", "\x00",
            "\ufeff", "<div>", "</div>", "<table><tr><td>", "<span class=' sB8D990E2  s7D2086B4 '>", "\x0c", "\r"]


def _mutated(rng: random.Random, text: str) -> bytes:
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(SNIPPETS) + text[at:]
    body = bytearray(text.encode("utf-8"))
    for _ in range(rng.randint(0, 6)):
        at = rng.randrange(len(body))
        if rng.random() < 0.5:
            body[at] = rng.randrange(256)
        else:
            del body[at:at + rng.randint(1, 40)]
    return bytes(body[:rng.randrange(len(body) // 2, len(body) + 1)])


def test_reads_randomly_damaged_bodies_as_before(malyy):
    rng = random.Random(29)
    head = malyy[:30_000] + malyy[-1_200:]        # the style sheet, the first paragraphs and the footnote
    for _ in range(RANDOM_VARIANTS):
        _same_as_before(_mutated(rng, head))


def test_a_footnote_div_inside_another_is_part_of_it():
    """The BeautifulSoup reader crashed here (TypeError: 'NoneType' object is not subscriptable): the inner
    div had been destroyed with the outer one before its own turn came."""
    body = (b"<p>1.  Text<a href='#_ftn1'>[1]</a>.</p>"
            b"<div id='_ftn1'><p>First <a href='#_ftnref1'>[1]</a>note.</p><div id='_ftn2'><p>Second.</p></div></div>")
    blocks, footnotes = html_blocks(body)
    assert [(b.text, b.footnote_refs) for b in blocks] == [("1.  Text.", ["1"])]
    assert footnotes == {"1": "First note.Second."}


def test_deep_nesting_is_read_as_before_up_to_the_parsers_depth_and_refused_past_it():
    """libxml2 builds trees 256 elements deep at most and silently drops the rest of the body past that (the
    BeautifulSoup reader, fed by parser events, read on): a body that deep is refused, never cut short."""
    def nested(depth: int) -> bytes:
        return ("<p>" + "<span>" * depth + "1.  Deep text." + "</span>" * depth + "</p><p>After.</p>").encode()
    _same_as_before(nested(250))
    assert [b.text for b in html_blocks(nested(250))[0]] == ["1.  Deep text.", "After."]
    for depth in (254, 100_000):
        with pytest.raises(DocumentError, match="nested 256 deep"):
            html_blocks(nested(depth))


@pytest.mark.parametrize("body, reason", [(b"  \n ", "empty HTML body"), (b"<!-- only a comment -->", "no paragraphs"),
                                          (b"<?xml version='1.0'?>", "no paragraphs"), (b"plain text", "no paragraphs")])
def test_a_body_without_paragraphs_is_a_document_error(body, reason):
    with pytest.raises(DocumentError, match=reason):
        parse_document("001-1", body, "0" * 64, source_format="html")
