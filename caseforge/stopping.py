"""How the runs of a process are told to stop: SIGINT and SIGTERM (or a Prefect cancellation) record a stop
request, and long work stops at its next stop point (check_stop: every progress step, every gated batch). A
command that cannot stop in time (a thread stuck in a read) leaves STOP_GRACE_S later anyway, after the hooks
it was given (its open runs recorded, its Prefect runs marked)."""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0                 # after a stop, how long the command gets to wind down before it just leaves


@dataclass(frozen=True)
class StopRequest:
    """Why the runs of this process must stop: a signal, or Prefect cancelling the flow run."""

    state: str           # interrupted | cancelled
    cause: str           # "SIGINT (Ctrl-C)", "SIGTERM", "a Prefect cancellation (SIGTERM)"
    exit_code: int       # 128 + the signal

    @property
    def reason(self) -> str:
        return f"{self.state} by {self.cause}"


class RunStopped(KeyboardInterrupt):
    """Raised in a run's thread when the process was told to stop. A KeyboardInterrupt, so the `except Exception`
    that keeps one bad record from ending a batch lets it through, and Prefect treats it as an interruption."""

    def __init__(self, request: StopRequest):
        super().__init__(request)              # the request in args: it pickles (Prefect's result persistence)
        self.request = request

    def __str__(self) -> str:
        return self.request.reason


SIGNAL_CAUSES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}

# The first stop request ("stop") and whether its line was printed ("said"). Signal handlers write here, and a
# second signal's handler can run inside the first's (Python runs a handler between any two bytecodes of the main
# thread, a handler's own included: GNU `timeout` signals a child and then its group, issue 41). So no lock guards
# it, which the inner handler could wait on for ever while the outer holds it: dict.setdefault is one step no
# handler can cut in two, and the first caller's value is the one kept.
_first: dict[str, object] = {}
_shield = threading.local()
_exit_when_stuck = False            # the command's own process (caseforge.cli.main): leave after STOP_GRACE_S
_leaving_hooks: tuple = ()          # what stop_on_signals was told to do before leaving


def _request(signum: int, cancelled: bool) -> tuple[StopRequest, bool]:
    """The stop request kept (the first one), and whether it is this call's (which then starts the grace timer of
    a command's own process)."""
    cause = SIGNAL_CAUSES.get(signum) or signal.Signals(signum).name
    candidate = (StopRequest("cancelled", f"a Prefect cancellation ({cause})", 128 + signum) if cancelled
                 else StopRequest("interrupted", cause, 128 + signum))
    request = _first.setdefault("stop", candidate)
    first = request is candidate
    if first and _exit_when_stuck:
        threading.Thread(target=_leave_when_stuck, args=(request,), daemon=True, name="caseforge stop").start()
    return request, first


def request_stop(signum: int, cancelled: bool = False) -> StopRequest:
    """Record that every run of this process must stop; the first request is the one kept."""
    return _request(signum, cancelled)[0]


def stop_requested() -> StopRequest | None:
    return _first.get("stop")


def check_stop() -> None:
    """Where long work can stop (every progress step, every gated batch): raises RunStopped once the process
    was told to stop. A signal's own exception can be lost (raised inside a finaliser, Python only prints it);
    this is what still stops the run then, and what stops work in other threads than the main one."""
    request = _first.get("stop")
    if request is not None:
        raise RunStopped(request)


def forget_stop() -> None:
    """A new command in the same process (tests, notebooks) starts without the last one's stop."""
    _first.clear()
    _STOPPED.clear()


def stop_of(exc: BaseException) -> StopRequest | None:
    """The stop that `exc` carries out: RunStopped, Ctrl-C's KeyboardInterrupt, Prefect's TerminationSignal
    (recognised by its `signal`, so that this floor needs no Prefect), or any exception raised after the
    process was told to stop. None: an ordinary failure."""
    if isinstance(exc, RunStopped):
        return exc.request
    signum = getattr(exc, "signal", None)
    if isinstance(exc, KeyboardInterrupt) or (type(exc).__name__ == "TerminationSignal" and isinstance(signum, int)):
        return stop_requested() or StopRequest("interrupted", SIGNAL_CAUSES.get(signum or signal.SIGINT,
                                                                                "SIGINT (Ctrl-C)"),
                                               128 + (signum or signal.SIGINT))
    return stop_requested()


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """While a run's end is written: a signal is recorded but raises nothing, so the write is not cut short."""
    _shield.depth = getattr(_shield, "depth", 0) + 1
    try:
        yield
    finally:
        _shield.depth -= 1


def is_shielded() -> bool:
    return getattr(_shield, "depth", 0) > 0


def note_stop_signal(signum: int, cancelled: bool = False) -> StopRequest | None:
    """What a stop signal's handler does first: every run must stop (request_stop); a second signal while
    stopping ends the command at once. Returns the request when the handler should raise now, None while a
    run's end is being written (shielded)."""
    request, first = _request(signum, cancelled)
    if not first and _exit_when_stuck:
        _leave(request)
    return None if is_shielded() else request


def on_stop_signal(signum: int, _frame=None) -> None:
    """The handler of SIGINT and SIGTERM: every run must stop; in the main thread, right now (RunStopped)."""
    request = note_stop_signal(signum)
    if request is not None:
        raise RunStopped(request)



@contextlib.contextmanager
def stop_on_signals(exit_when_stuck: bool = False,
                    before_leaving: tuple[Callable[[StopRequest], object], ...] = ()) -> Iterator[None]:
    """SIGINT and SIGTERM stop the runs of this process (on_stop_signal), inside this block, in the main thread
    (elsewhere Python allows no handler: nothing changes). `exit_when_stuck` (a command's own process): once
    stopped, the process leaves after STOP_GRACE_S even if a thread is stuck (a read that never returns), after
    `before_leaving` and then every hook given to `also_before_leaving`."""
    global _exit_when_stuck, _leaving_hooks
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    forget_stop()
    previous = {signum: signal.signal(signum, on_stop_signal) for signum in SIGNAL_CAUSES}
    _exit_when_stuck, _leaving_hooks = exit_when_stuck, tuple(before_leaving)
    try:
        yield
    finally:
        _exit_when_stuck, _leaving_hooks = False, ()
        for signum, handler in previous.items():
            if signal.getsignal(signum) is on_stop_signal:      # not one the block put in its place (leaving's)
                signal.signal(signum, handler)


_leaving: dict = {}                 # stop_quietly_while_leaving: the exit status the command ended with


def stop_quietly_while_leaving(exit_code: int) -> None:
    """The rest of a command's process (its own, `caseforge` itself), once its work is done and `exit_code` decided:
    the interpreter's exit runs Prefect's hooks (its services send what is left of their logs and events to the
    server, its loop threads stop) and removes a query's folder. A stop signal then raises nothing into them
    (which printed "Exception ignored in atexit callback ... KeyboardInterrupt" with a traceback, and the command
    exited as if nothing had happened): it is recorded, the hooks finish (within STOP_GRACE_S; a second signal
    leaves at once), and the command ends as stopped, with its one line and 128 + the signal
    (_end_as_stopped, the last exit hook)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _leaving["exit_code"] = exit_code
    for signum in SIGNAL_CAUSES:
        signal.signal(signum, _stop_while_leaving)


def _stop_while_leaving(signum: int, _frame=None) -> None:
    request, first = _request(signum, cancelled=False)
    if not first or _leaving.get("ended"):
        _leave(request)
    threading.Thread(target=_leave_after_grace, args=(request,), daemon=True, name="caseforge stop").start()


def _leave_after_grace(request: StopRequest) -> None:
    threading.Event().wait(STOP_GRACE_S)
    _leave(request, f"; exit hooks still running after {STOP_GRACE_S:.0f} s were abandoned")


@atexit.register                    # at import, before Prefect registers any: so it runs after all of theirs
def _end_as_stopped() -> None:
    if "exit_code" not in _leaving:
        return                      # not a command's process, or a command that was not told to stop
    _leaving["ended"] = True
    request = stop_requested()
    if request is not None and request.exit_code != _leaving["exit_code"]:
        logging.shutdown()
        _leave(request)
    if _leaving["exit_code"] in {128 + signum for signum in SIGNAL_CAUSES}:     # a stop's, recorded or not
        # the exit status is a stop's: after this last hook the interpreter gives SIGINT and SIGTERM their default
        # action back (except where ignored) while it tears its modules down, and a second signal of `timeout`
        # landing then killed the stopped command (exit -15, not 143)
        for signum in SIGNAL_CAUSES:
            signal.signal(signum, signal.SIG_IGN)


_BEFORE_LEAVING: list[Callable[[StopRequest], object]] = []      # hooks of this process (Prefect's run states)


def also_before_leaving(hook: Callable[[StopRequest], object]) -> None:
    """Run `hook(request)` before a stuck command leaves, in every command of this process (once, however often
    it is given)."""
    if hook not in _BEFORE_LEAVING:
        _BEFORE_LEAVING.append(hook)


def _leave_when_stuck(request: StopRequest) -> None:
    threading.Event().wait(STOP_GRACE_S)
    for hook in (*_leaving_hooks, *_BEFORE_LEAVING):
        try:
            hook(request)
        except Exception as exc:       # noqa: BLE001  (leaving matters more)
            log.debug("before leaving: %s", exc)
    _leave(request, f"; work still running after {STOP_GRACE_S:.0f} s was abandoned")


def say_stopped(request: StopRequest, note: str = "") -> None:
    """The one line a stopped command prints (once, whoever gets there first: the command, the timer or a second
    signal's handler)."""
    token = object()
    if _first.setdefault("said", token) is not token:
        return
    line = f"caseforge: {request.reason}{stopped_note()}{note}"
    try:
        print(line, file=sys.stderr, flush=True)
    except RuntimeError:    # a handler's print inside the main thread's own write to stderr ("reentrant call")
        with contextlib.suppress(OSError, ValueError):
            os.write(sys.stderr.fileno(), (line + "\n").encode())


def _leave(request: StopRequest, note: str = "") -> None:
    try:
        say_stopped(request, note)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
    finally:                # whatever the line's printing met, the process leaves
        os._exit(request.exit_code)


_STOPPED: list[int] = []            # runs this process recorded as interrupted or cancelled


def recorded_as_stopped(run_id: int) -> None:
    """The run was recorded as interrupted or cancelled (the line a stopped command prints names it)."""
    _STOPPED.append(run_id)


def stopped_note() -> str:
    """"; run 7 recorded as interrupted" for the line a stopped command prints."""
    request = stop_requested()
    if not _STOPPED or request is None:
        return ""
    ids = sorted(set(_STOPPED))
    return f"; run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} recorded as {request.state}"
