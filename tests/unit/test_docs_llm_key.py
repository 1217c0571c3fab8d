"""The key docs/llm.md makes is passed as a command-line value (`--api-key "$KEY"`, `--api_key "$KEY"`): argparse
reads a value that begins with "-" as an option and the server exits 2 ("expected one argument"). One key in 64 of
`secrets.token_urlsafe` begins so; CI met one on 2026-11-28."""
from __future__ import annotations

import re
import secrets
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "llm.md"
KEY_BLOCK = re.compile(r"<!-- docs-test: key -->\n+```bash\n(?P<body>.*?)```", re.S)
PYTHON_CODE = re.compile(r"python -c '(?P<code>[^']+)'")


def the_pages_key(monkeypatch, byte: int) -> str:
    """What the page's key command prints when every random byte it draws is `byte`."""
    [block] = KEY_BLOCK.findall(DOCS.read_text(encoding="utf-8"))
    [code] = PYTHON_CODE.findall(block)
    printed: list[str] = []
    monkeypatch.setattr(secrets, "token_bytes", lambda n=None: bytes([byte]) * (n or 32))
    exec(code, {"print": printed.append})
    [key] = printed
    return key


def test_the_pages_key_never_begins_with_a_dash_whatever_bytes_it_draws(monkeypatch):
    # 0xfb's first six bits are 62: "-" in the URL-safe base64 alphabet
    for byte in (0x00, 0x7f, 0xf8, 0xfb, 0xff):
        key = the_pages_key(monkeypatch, byte)
        assert not key.startswith("-"), key
        assert len(key) >= 24 and key.isalnum(), key
