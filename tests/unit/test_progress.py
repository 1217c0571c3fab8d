"""caseforge.progress: plain lines when stderr is no terminal (done/total, rate, ETA, tokens/s, cache hits),
a bar on a terminal with its periodic lines kept off the terminal handler but not off the run log."""
from __future__ import annotations

import io
import logging
import signal

import pytest

from caseforge.progress import Progress, TerminalFilter, show_caseforge_logs
from caseforge.stopping import RunStopped, forget_stop, request_stop


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


def test_work_that_raised_is_not_said_to_be_done(caplog, monkeypatch):
    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    clock = Clock()
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        with pytest.raises(ValueError):
            with Progress("cn dumps", total=3, unit="files", clock=clock) as progress:
                progress.step(1)
                clock.now += 2
                raise ValueError("a dump that would not read")
    assert _messages(caplog)[-1] == "cn dumps: 1/3 (33%) at 0.5/s, failed after 2s"


def test_a_process_told_to_stop_writes_no_final_line(caplog, monkeypatch):
    """The stopped command's one line is its own ("caseforge: interrupted by ..."): a loop that finished the read
    it was blocked in when the signal came says nothing more, and its next step stops it."""
    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        progress = Progress("hudoc metadata files", total=2, unit="files")
        progress.step(1)
        request_stop(signal.SIGINT)
        try:
            with pytest.raises(RunStopped):
                progress.step(1)
            progress.close()
        finally:
            forget_stop()
    assert _messages(caplog) == ["hudoc metadata files: 0/2 files, started"]


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


def test_a_heartbeat_line_comes_while_nothing_finishes_and_stops_at_close(caplog, monkeypatch):
    """A single LLM answer can take minutes on a CPU: the progress still says the work goes on, from the caller's
    context (inside a Prefect run that is what routes the line to the run's log)."""
    import contextvars
    import time

    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    run = contextvars.ContextVar("run", default=None)
    seen = []

    class RunOf(logging.Filter):
        def filter(self, record):
            seen.append(run.get())
            return True

    logger = logging.getLogger("caseforge.progress")
    logger.addFilter(RunOf())
    try:
        run.set("run-7")
        with caplog.at_level(logging.INFO, logger="caseforge.progress"):
            progress = Progress("llm casegen-judge", total=4, unit="requests", heartbeat_s=0.2)
            time.sleep(0.75)
            progress.close()
            after_close = len(_messages(caplog))
            time.sleep(0.5)
    finally:
        logger.filters.clear()
    lines = _messages(caplog)
    beats = [line for line in lines if "working for" in line]
    assert 2 <= len(beats) <= 4, lines
    assert beats[0].startswith("llm casegen-judge: 0/4 (0%)") and beats[0].endswith("working for 0s")
    assert lines[-1].startswith("llm casegen-judge: 0/4 (0%)") and "done in" in lines[-1]
    assert len(lines) == after_close                     # nothing after close
    assert set(seen) == {"run-7"}                        # every line, the heartbeat's too, in the caller's context


def test_no_heartbeat_when_switched_off(caplog, monkeypatch):
    import time

    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    monkeypatch.setenv("CASEFORGE_PROGRESS_HEARTBEAT_S", "0")
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        progress = Progress("llm x", total=1)
        assert progress._heartbeat is None
        time.sleep(0.1)
        progress.close()
    assert len(_messages(caplog)) == 2


def test_a_progress_left_unclosed_stops_beating_once_it_is_gone(caplog, monkeypatch):
    import gc

    monkeypatch.setenv("CASEFORGE_PROGRESS", "plain")
    with caplog.at_level(logging.INFO, logger="caseforge.progress"):
        progress = Progress("llm y", total=3, heartbeat_s=0.1)
        thread = progress._heartbeat
        del progress                                    # as when an exception leaves it behind
        gc.collect()
        thread.join(timeout=2)
    assert not thread.is_alive()


def test_loading_a_local_model_draws_no_third_party_bar(capfd):
    """transformers drew a "Loading weights" bar (tqdm on stderr) for every model it loaded, in the middle of
    a nightly's output; caseforge's own progress says how far long work is, and a local model loads in a second."""
    from sentence_transformers import SentenceTransformer

    from caseforge.embeddings import default_model_path

    SentenceTransformer(str(default_model_path()), device="cpu")        # not load_sentence_model: no cache
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s]" not in err, err
