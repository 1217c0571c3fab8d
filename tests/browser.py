"""A real browser for the tests: Playwright (PyPI, the dev extra) driving Debian's chromium-headless-shell
(`apt-get install --no-install-recommends chromium-headless-shell`, as .ci/run does: `playwright install` cannot
download here), launched with its executable path and --no-sandbox (the tests run as root). Screenshots go to
out/ci-artifacts/."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

CHROMIUM_HEADLESS_SHELL = Path("/usr/lib/chromium/chromium-headless-shell")
LAUNCH_ARGS = ["--no-sandbox"]
ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "out" / "ci-artifacts"


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if not CHROMIUM_HEADLESS_SHELL.exists():
        return f"{CHROMIUM_HEADLESS_SHELL} is missing: apt-get install --no-install-recommends chromium-headless-shell"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is missing: pip install -e '.[dev]' (pinned in pyproject.toml)"
    return None


@contextmanager
def headless_browser() -> Iterator:
    """A Playwright Browser on Debian's chromium-headless-shell, closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM_HEADLESS_SHELL), args=LAUNCH_ARGS,
                                             headless=True)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page, name: str) -> Path:
    """A full-page PNG of `page` kept as a CI artifact."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS_DIR / name
    page.screenshot(path=str(path), full_page=True)
    return path
