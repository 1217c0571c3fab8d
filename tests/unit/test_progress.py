"""caseforge.progress: plain lines when stderr is no terminal (done/total, rate, ETA, tokens/s, cache hits),
a bar on a terminal with its periodic lines kept off the terminal handler but not off the run log."""
from __future__ import annotations

import io
import logging

from caseforge.progress import Progress, TerminalFilter, show_caseforge_logs


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "caseforge.progress"]


def test_plain_lines_say_done_total_rate_eta_tokens_and_cache_hits(caplog, monkeypatch):
    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    clock = Clock()
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        progress = Progress("llm claims", total=10, every_s=5, unit="requests", counters={"cache_hits": 4},
                            clock=clock)
        clock.now += 6
        progress.step(3, tokens=300)
        clock.now += 1
        progress.step(1, tokens=100)          # under every_s since the last line: no line
        progress.close()
    lines = _messages(caplog)
    assert lines[0] == "llm claims: 0/10 requests, started"
    assert lines[1] == "llm claims: 3/10 (30%) at 0.5/s, 50.0 tokens/s, cache hits 4, ETA 14s"
    assert lines[2] == "llm claims: 4/10 (40%) at 0.6/s, 57.1 tokens/s, cache hits 4, done in 7s"
    assert len(lines) == 3
    assert not any(getattr(r, "progress_on_bar", False) for r in caplog.records)


def test_unknown_total_counts_pages_and_windows(caplog, monkeypatch):
    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        with Progress("hudoc metadata pages", unit="pages", counters={"windows": 0}) as progress:
            progress.count("windows")
            progress.step(2)
    assert _messages(caplog)[-1].startswith("hudoc metadata pages: 2 pages done at ")
    assert "windows 1" in _messages(caplog)[-1]


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_and_the_run_log_every_line(caplog, monkeypatch):
    monkeypatch.setenv("CASEFORGE_PROGRESS", "bar")
    tty = FakeTTY()
    monkeypatch.setattr("sys.stderr", tty)
    clock = Clock()
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        progress = Progress("oyez replay", total=4, every_s=1, clock=clock)
        clock.now += 2
        progress.step(2)
        progress.close()
    assert "oyez replay" in tty.getvalue() and "\r" in tty.getvalue()          # tqdm drew its bar
    periodic = [r for r in caplog.records if getattr(r, "progress_on_bar", False)]
    assert [r.getMessage().split(",")[0] for r in periodic] == ["oyez replay: 2/4 (50%) at 1.0/s"]
    assert not TerminalFilter().filter(periodic[0])            # a terminal handler drops it, the API handler not
    assert all(TerminalFilter().filter(r) for r in caplog.records if r not in periodic)


def test_caseforge_info_lines_pass_a_warning_root(monkeypatch):
    logger = logging.getLogger("caseforge")
    monkeypatch.setattr(logger, "level", logging.NOTSET)
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.WARNING)
    show_caseforge_logs()
    assert logging.getLogger("caseforge.progress").isEnabledFor(logging.INFO)
    assert not logging.getLogger("somelib").isEnabledFor(logging.INFO)
