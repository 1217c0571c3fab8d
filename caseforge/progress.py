"""Progress of long work (fetch, parse, gate, LLM jobs), for a person watching.

Every Progress writes log lines on the "caseforge.progress" logger: a start line, one every `every_s`
seconds, and a final one (done/total, rate, ETA, and any counters such as tokens/s and cache hits). Inside
a Prefect run those lines reach the run log (caseforge.flows sets PREFECT_LOGGING_EXTRA_LOGGERS=caseforge,
which gives the "caseforge" loggers Prefect's API handler) and the terminal through the root logger's
console handler.

On a terminal (stderr is a TTY whose width is known) a tqdm bar is drawn as well, and the terminal handlers drop
the periodic lines (TerminalFilter) so the bar is not broken up; the run log keeps them all. While nothing
finishes, the heartbeat line is written above the bar, so a long step still shows a line every heartbeat.
`CASEFORGE_PROGRESS=plain` turns the bar off, `bar` forces it.
"""
from __future__ import annotations

import contextvars
import logging
import os
import sys
import threading
import time
import weakref

from caseforge.settings import load_settings
from caseforge.stopping import check_stop, stop_requested

log = logging.getLogger("caseforge.progress")

LOGGER_ROOT = "caseforge"
_ACTIVE_BARS = 0
_LOCK = threading.Lock()


def bars_wanted(stream=None) -> bool:
    mode = load_settings().progress.lower()
    if mode in ("plain", "off", "0", "no"):
        return False
    if mode in ("bar", "1", "yes"):
        return True
    stream = stream or sys.stderr
    try:
        # a terminal of unknown width (0 columns: a bare pty) would get a bar of nothing: plain lines instead
        return bool(stream.isatty()) and os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, ValueError, OSError):
        return False


class TerminalFilter(logging.Filter):
    """On handlers that write to a terminal: drops a Progress's periodic lines while its bar is drawn
    (the bar says the same); start and final lines pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "progress_on_bar", False)


def _writes_to_terminal(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


def show_caseforge_logs(level: int = logging.INFO) -> None:
    """caseforge's INFO lines (progress among them) pass whatever level Prefect gave the root logger
    (WARNING), and terminal handlers get the TerminalFilter. Called by the flows' floor and the CLI."""
    logger = logging.getLogger(LOGGER_ROOT)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    for handler in logging.getLogger().handlers:
        if _writes_to_terminal(handler) and not any(isinstance(f, TerminalFilter) for f in handler.filters):
            handler.addFilter(TerminalFilter())


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """`step(n, tokens=...)` as work finishes; `count(name, n)` for counters shown beside it (cache hits,
    pages, windows); `close()` at the end. Usable as a context manager."""

    def __init__(self, label: str, total: int | None = None, every_s: float = 5.0, unit: str = "items",
                 counters: dict[str, int] | None = None, clock=time.monotonic, heartbeat_s: float | None = None):
        check_stop()                     # long work starts and goes on only while the process is not told to stop
        self.label = label
        self.total = total
        self.every_s = every_s
        self.unit = unit
        self.done = 0
        self.tokens = 0
        self.counters: dict[str, int] = dict(counters or {})
        self._clock = clock
        self.started = clock()
        self._last = self.started
        self._closed = False
        self._bar = None
        self._emit(self.started, start=True)     # before the bar, so the line does not land on it
        self._bar = self._open_bar()
        self._stopped = threading.Event()
        self._heartbeat = self._start_heartbeat(heartbeat_s)

    # --- what callers use ---

    def step(self, n: int = 1, tokens: int = 0) -> None:
        check_stop()
        self.done += n
        self.tokens += tokens
        if self._bar is not None:
            self._bar.update(n)
            self._bar.set_postfix_str(self._postfix(self._clock()), refresh=False)
        now = self._clock()
        if now - self._last >= self.every_s and (self.total is None or self.done < self.total):
            self._last = now             # (all done: the final line follows at close())
            self._emit(now)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def close(self, failed: bool = False) -> None:
        """The final line: "done in ..."; after `failed` work, where it stopped. A process told to stop writes
        none (its one line is the command's)."""
        if self._closed:
            return
        self._closed = True
        self._stopped.set()
        now = self._clock()
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(now), refresh=False)
            self._bar.close()
            self._release_bar()
        if stop_requested() is None:
            self._emit(now, final=True, failed=failed)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(failed=exc_type is not None)

    # --- a line while nothing finishes ---

    def _start_heartbeat(self, heartbeat_s: float | None) -> threading.Thread | None:
        """One work item can take minutes (a long LLM answer on a CPU): while nothing finishes, a line every
        `heartbeat_s` (CASEFORGE_PROGRESS_HEARTBEAT_S, default 30; 0 turns it off) says the work goes on. It runs
        in a copy of the caller's context, so inside a Prefect run its lines reach that run's log. Only with the
        real clock (tests that drive a fake clock get no thread)."""
        if heartbeat_s is None:
            heartbeat_s = load_settings().progress_heartbeat_s
        if heartbeat_s <= 0 or self._clock is not time.monotonic:
            return None
        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(Progress._beat, weakref.ref(self), self._stopped,
                                                            heartbeat_s),
                                  daemon=True, name=f"progress heartbeat: {self.label}")
        thread.start()
        return thread

    @staticmethod
    def _beat(ref: "weakref.ref[Progress]", stopped: threading.Event, heartbeat_s: float) -> None:
        """Holds the Progress only weakly: one a caller left unclosed (an exception) stops beating once it is gone."""
        wait = heartbeat_s
        while not stopped.wait(wait):
            progress = ref()
            if progress is None or progress._closed or stop_requested() is not None:
                return                       # (a run told to stop does not go on saying it works)
            now = progress._clock()
            if now - progress._last >= heartbeat_s:
                progress._last = now
                line = f"{progress.line(now)}, working for {_duration(now - progress.started)}"
                log.info("%s", line, extra={"progress_on_bar": progress._bar is not None})
                if progress._bar is not None:       # the terminal drops the record: the line goes above the bar
                    progress._bar.write(line, file=sys.stderr)
            wait = max(0.05, progress._last + heartbeat_s - now)
            del progress

    # --- the line and the bar ---

    def _postfix(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        parts = []
        if self.tokens:
            parts.append(f"{self.tokens / elapsed:,.1f} tokens/s")
        parts += [f"{name.replace('_', ' ')} {value:,}" for name, value in sorted(self.counters.items())]
        return ", ".join(parts)

    def line(self, now: float, start: bool = False, final: bool = False, failed: bool = False) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        if start:
            head = f"{self.label}: 0/{self.total:,} {self.unit}, started" if self.total is not None else \
                f"{self.label}: started"
        elif self.total:
            pct = 100.0 * self.done / self.total
            head = f"{self.label}: {self.done}/{self.total} ({pct:.0f}%) at {rate:.1f}/s"
        else:
            head = f"{self.label}: {self.done} {self.unit} done at {rate:.1f}/s"
        extra = [] if start else [self._postfix(now)]
        if final and failed:
            extra.append(f"failed after {_duration(elapsed)}")
        elif final:
            extra.append(f"done in {_duration(elapsed)}")
        elif not start and self.total:
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            extra.append(f"ETA {_duration(eta)}")
        return ", ".join([head, *[e for e in extra if e]])

    def _emit(self, now: float, start: bool = False, final: bool = False, failed: bool = False) -> None:
        periodic = not (start or final)
        log.info("%s", self.line(now, start, final, failed),
                 extra={"progress_on_bar": periodic and self._bar is not None})

    def _open_bar(self):
        if not bars_wanted():
            return None
        try:
            from tqdm import tqdm
        except ImportError:          # pragma: no cover - tqdm is a pinned dependency
            return None
        global _ACTIVE_BARS
        with _LOCK:
            position = _ACTIVE_BARS
            _ACTIVE_BARS += 1
        return tqdm(total=self.total, desc=self.label, unit=f" {self.unit}", file=sys.stderr, position=position,
                    leave=True, dynamic_ncols=True, mininterval=0.5)

    @staticmethod
    def _release_bar() -> None:
        global _ACTIVE_BARS
        with _LOCK:
            _ACTIVE_BARS = max(0, _ACTIVE_BARS - 1)
