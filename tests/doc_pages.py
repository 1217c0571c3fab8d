"""The project's documentation as tests read it: README.md and the pages of docs/, their fenced blocks (a test runs
a documented command or example as written, taken from the page that shows it), their headings' anchors and their
relative links (GitHub's rules), so a moved section or a broken link fails a test instead of a reader."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pages(root: Path = ROOT) -> list[Path]:
    """README.md, then every page of docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def read(page: str) -> str:
    """A page by its path from the project root: "README.md", "docs/deploying.md"."""
    return (ROOT / page).read_text(encoding="utf-8")


def block_after(page: str, marker: str, lang: str = "bash") -> str:
    """The body of the first ```lang fenced block after `marker` on the page (the marker must be there)."""
    text = read(page)
    assert marker in text, f"{page} no longer says {marker!r}: the block moved"
    start = text.index(f"```{lang}\n", text.index(marker)) + len(f"```{lang}\n")
    return text[start:text.index("```", start)]


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    out, fenced = [], None
    for number, line in enumerate(text.split("\n"), 1):
        fence = FENCE.match(line)
        if fence and (fenced is None or fence[1] == fenced):
            fenced = None if fenced else fence[1]
            continue
        if fenced is None:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text as rendered (code marks, emphasis and link targets dropped),
    lowercased, punctuation dropped but for '-' and '_', each space a '-'."""
    text = CODE_SPAN.sub(lambda m: m[2].strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*~]|(?<!\w)_+|_+(?!\w)", "", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page; a repeated heading's later anchors get -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(text):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading[2])
            found.add(f"{base}-{seen[base]}" if base in seen else base)
            seen[base] = seen.get(base, 0) + 1
    return found


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of each Markdown link or image that is not a URL, outside code."""
    found = []
    for number, line in prose_lines(text):
        for link in LINK.finditer(CODE_SPAN.sub("", line)):
            if not SCHEME.match(link[1]):
                found.append((number, link[1]))
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """`page:line: target (why)` for each relative link of the page whose file or heading is not there."""
    broken = []
    for number, target in relative_links(page.read_text(encoding="utf-8")):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root).as_posix()}:{number}: {target}"
        if not goal.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal.read_text(encoding="utf-8")):
            broken.append(f"{where} (no heading #{anchor} in {goal.name})")
    return broken
