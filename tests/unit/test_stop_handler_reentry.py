"""Two stop signals at once (issue 41): GNU `timeout` signals its child and then the child's group, so a command
can get a second SIGTERM while the handler of the first still runs. Python runs a signal's handler between two
bytecodes of whatever the main thread is doing, the first handler included, so the second handler runs *inside*
the first. It once waited there on a lock the first held (`request_stop`'s `with _stop_lock`): the command hung
until `kill -9` (932 s in the issue, 1 try in 10).

Here the second handler is called between every two lines the first one runs (a tracer fires it at line 1, then
at line 2, ... of the first, until the first ends before the tracer fires): no position may hang, and the
command ends stopped. No signal is sent and no process started: the handlers are called as Python calls them.
A command's own process leaves with `os._exit` (caseforge.stopping._leave); its double here records the exit
status and unwinds instead, and the grace timers' targets are doubles that do nothing.
"""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytest

from caseforge import run_record, stopping

HANG_S = 5.0            # a handler call that has not returned by then waits on something that will not come
# The lines of the stop path. Not threading's own: an exception a tracer raises there (the double of _leave's) can
# skip a `with` block's exit and leave a lock of threading's held for ever (bpo-29988), which a real second signal,
# leaving by os._exit, never unwinds through; threading's locks on the path are re-entrant (_active_limbo_lock) or
# the new thread's own (its `_started` event).
TRACED = {stopping.__file__}


STUCK: list[threading.Thread] = []      # first calls that hung (their threads never end)


class Left(BaseException):
    """What the double of caseforge.stopping._leave raises: the process would have ended here."""

    def __init__(self, exit_code: int):
        super().__init__(exit_code)
        self.exit_code = exit_code


@pytest.fixture
def doubles(monkeypatch):
    """_leave and the grace timers replaced by doubles; yields the exit statuses _leave was called with. The
    process's record of open runs starts empty, as a command's does: a stop ends every run the process holds open,
    so a run another test of this worker left open would be ended, and named, by these tests' stops."""
    left: list[int] = []
    monkeypatch.setattr(run_record, "_OPEN_RUNS", {})

    def leave_double(request, note=""):
        left.append(request.exit_code)
        raise Left(request.exit_code)

    monkeypatch.setattr(stopping, "_leave", leave_double)
    monkeypatch.setattr(stopping, "_leave_when_stuck", lambda request: None)
    monkeypatch.setattr(stopping, "_leave_after_grace", lambda request: None)
    yield left
    if not STUCK:                           # a thread stuck in the stop path would keep forget_stop waiting too
        stopping.forget_stop()


def second_signal_at(line: int, handler, traced: set[str]) -> dict:
    """Call `handler(SIGTERM)` in a thread with the same handler called again (the second signal) just before
    the `line`-th line the first runs in the files `traced`; what happened: "fired" (the second was called),
    "hung", and the exception the first call ended with."""
    seen = {"lines": 0, "fired": False, "hung": False, "ended": None}

    def tracer(frame, event, _arg):
        if frame.f_code.co_filename not in traced:
            return None
        if event == "line":
            seen["lines"] += 1
            if seen["lines"] == line and not seen["fired"]:
                seen["fired"] = True
                handler(signal.SIGTERM, None)       # a tracer runs untraced, as a nested handler runs
        return tracer

    def first() -> None:
        sys.settrace(tracer)
        try:
            handler(signal.SIGTERM, None)
        except BaseException as exc:        # noqa: BLE001 - RunStopped, Left: what the first call ended with
            seen["ended"] = exc
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=first, daemon=True)
    thread.start()
    thread.join(HANG_S)
    seen["hung"] = thread.is_alive()
    if seen["hung"]:
        STUCK.append(thread)
    return seen


def every_position(handler, traced=frozenset(TRACED)):
    """second_signal_at for each line of the first handler in turn; the outcomes, one per position."""
    outcomes = []
    for line in range(1, 10_000):
        stopping.forget_stop()
        seen = second_signal_at(line, handler, set(traced))
        outcomes.append(seen)
        if seen["hung"] or not seen["fired"]:
            return outcomes
    raise AssertionError("the stop handler ran over 10,000 lines")


def ends_stopped(ended: BaseException | None) -> bool:
    """The command ends stopped with 143: it left at once (the second signal, once the first was recorded), or the
    stop is raised (RunStopped, or Prefect's TerminationSignal in a flow run: the second signal's handler ran
    before the first had recorded anything, so the second is the one that stops the run, and the command ends
    through its own stop path)."""
    if isinstance(ended, Left):
        return ended.exit_code == 143
    raised = isinstance(ended, stopping.RunStopped) or type(ended).__name__ == "TerminationSignal"
    return raised and stopping.stop_of(ended).exit_code == 143


def hangs(outcomes: list[dict]) -> list[int]:
    return [n for n, seen in enumerate(outcomes, 1) if seen["hung"]]


def test_a_second_sigterm_inside_the_first_ones_handler_ends_the_command_at_once(doubles):
    """The command's own process (exit_when_stuck): wherever the second signal lands in the first one's handler,
    nothing waits, and the command leaves with 143, the status of the first (and only) stop."""
    with stopping.stop_on_signals(exit_when_stuck=True):
        outcomes = every_position(stopping.on_stop_signal)
    assert hangs(outcomes) == [], f"hung with the second signal at line(s) {hangs(outcomes)} of the first"
    fired = [seen for seen in outcomes if seen["fired"]]
    assert len(fired) >= 5, outcomes               # the handler's lines were walked, not skipped
    assert all(ends_stopped(seen["ended"]) for seen in fired), fired
    assert any(isinstance(seen["ended"], Left) for seen in fired) and set(doubles) == {143}


def test_a_second_sigterm_inside_the_first_ones_handler_in_process(doubles):
    """A command run in-process (tests, notebooks: no exit_when_stuck): the run stops (RunStopped), never hangs."""
    with stopping.stop_on_signals(exit_when_stuck=False):
        outcomes = every_position(stopping.on_stop_signal)
    assert hangs(outcomes) == [], f"hung with the second signal at line(s) {hangs(outcomes)} of the first"
    assert all(isinstance(seen["ended"], stopping.RunStopped) for seen in outcomes), outcomes
    assert doubles == []


def test_a_second_sigterm_inside_the_first_ones_handler_while_leaving(doubles):
    """The same while the command's exit hooks run (stop_quietly_while_leaving's handler): it leaves, with 143."""
    before = {signum: signal.getsignal(signum) for signum in stopping.SIGNAL_CAUSES}
    stopping.stop_quietly_while_leaving(0)
    try:
        outcomes = every_position(stopping._stop_while_leaving)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        stopping._leaving.clear()           # else this process's own exit would end "as stopped"
    assert hangs(outcomes) == [], f"hung with the second signal at line(s) {hangs(outcomes)} of the first"
    fired = [seen for seen in outcomes if seen["fired"]]
    assert fired and all(ends_stopped(seen["ended"]) for seen in fired), fired


def test_the_stop_line_is_printed_once_when_a_second_signal_lands_while_it_is_printed(doubles, capsys):
    """say_stopped is on the stop path too (the second signal leaves through it): once, and never waiting."""
    stopping.request_stop(signal.SIGTERM)
    request = stopping.stop_requested()
    outcomes = every_position(lambda signum, frame: stopping.say_stopped(request))
    assert hangs(outcomes) == [], f"hung with the second call at line(s) {hangs(outcomes)} of the first"
    assert all(seen["ended"] is None for seen in outcomes), outcomes
    printed = capsys.readouterr().err.splitlines()
    assert printed == ["caseforge: interrupted by SIGTERM"] * len(outcomes), printed


def test_prefects_sigterm_handler_as_caseforge_replaces_it(doubles):
    """The SIGTERM handler a flow run has (caseforge.flows.wiring's bridge over Prefect's): a second SIGTERM
    inside it does not hang either, and the command leaves with 143."""
    from prefect.utilities import engine as prefect_engine

    from caseforge.flows import wiring

    wiring._bridge_prefects_sigterm_handler()
    handler = prefect_engine._prefect_sigterm_handler
    with stopping.stop_on_signals(exit_when_stuck=True):
        outcomes = every_position(handler, TRACED | {str(Path(wiring.__file__))})
    assert hangs(outcomes) == [], f"hung with the second signal at line(s) {hangs(outcomes)} of the first"
    fired = [seen for seen in outcomes if seen["fired"]]
    assert fired and all(ends_stopped(seen["ended"]) for seen in fired), fired


def main_as_the_program(monkeypatch, work, tracer) -> dict:
    """`caseforge status` as the program runs it (cli.main(), argv None) with `work` in place of the command's and
    `tracer` on; the handlers and the stop put back after. How main ended, and the stop it left behind."""
    from caseforge import cli

    monkeypatch.setattr(sys, "argv", ["caseforge", "status"])
    monkeypatch.setattr(cli, "_run", work)
    before = {signum: signal.getsignal(signum) for signum in stopping.SIGNAL_CAUSES}
    ended = {"returned": None, "ended": None, "stop": None}
    sys.settrace(tracer)
    try:
        ended["returned"] = cli.main()
    except BaseException as exc:        # noqa: BLE001 - Left (the process left), or what escaped main
        ended["ended"] = exc
    finally:
        sys.settrace(None)
        for signum, handler in before.items():
            signal.signal(signum, handler)
        ended["stop"] = stopping.stop_requested()
        stopping._leaving.clear()           # else this process's own exit would end "as stopped"
        stopping.forget_stop()
    return ended


def traced_files() -> set[str]:
    from caseforge import cli

    return {cli.__file__, stopping.__file__}


def handler_in_place_before(line: int, seen: dict, armed: str, traced: set[str]):
    """A tracer that, once seen[armed] is set, calls the SIGTERM handler in place at that moment (noted in
    seen["handler"]) just before the `line`-th line run in the files `traced`."""
    def tracer(frame, event, _arg):
        if frame.f_code.co_filename not in traced:
            return None
        if event == "line" and seen[armed]:
            seen["lines"] += 1
            if seen["lines"] == line and not seen["fired"]:
                seen["fired"] = True
                seen["handler"] = handler = signal.getsignal(signal.SIGTERM)
                if callable(handler):
                    handler(signal.SIGTERM, None)
        return tracer
    return tracer


def main_with_a_second_signal_at(line: int, monkeypatch) -> dict:
    """main as the program runs it, its work stopped by a first SIGTERM (its handler called as Python calls it), and
    the handler in place for SIGTERM at that moment called again just before the `line`-th line main runs after
    the stop (in cli/__init__.py and caseforge/stopping.py): what it found there, how main ended."""
    traced = traced_files()
    seen = {"lines": 0, "fired": False, "handler": None, "stopped": False}

    def stopped_work(_args) -> int:
        seen["stopped"] = True
        stopping.on_stop_signal(signal.SIGTERM)         # raises RunStopped, as the first signal's handler does
        return 0

    ended = main_as_the_program(monkeypatch, stopped_work, handler_in_place_before(line, seen, "stopped", traced))
    return {**seen, **ended}


def test_a_second_sigterm_after_the_command_stopped_finds_a_handler_and_ends_it_with_143(doubles, monkeypatch, capsys):
    """The second SIGTERM of `timeout` can land after the first has stopped the work, while main() returns. There,
    between the block that handles stop signals and the exit hooks' own handler, SIGTERM had its default action
    back: a command that had printed "caseforge: interrupted by SIGTERM" was killed by the signal (exit status
    -15, not 143, and none of the exit hooks run: 1 try of 50 in a fresh-clone run of tests/integration/
    test_stop_signals_together.py). And once main had forgotten the stop, a second signal there was taken for a
    first one and escaped main as an exception. Wherever it lands now, a handler of caseforge's takes it, and
    the command ends with 143 (it leaves at once, or main returns 143)."""
    outcomes = []
    for line in range(1, 1000):
        seen = main_with_a_second_signal_at(line, monkeypatch)
        if not seen["fired"]:
            break
        outcomes.append(seen)
    assert len(outcomes) >= 5, outcomes                 # main's lines after the stop were walked
    default = [n for n, seen in enumerate(outcomes, 1) if not callable(seen["handler"])]
    assert default == [], f"SIGTERM's default action (killed by it) at line(s) {default} after the stop"
    wrong = [(n, seen["ended"], seen["returned"]) for n, seen in enumerate(outcomes, 1)
             if not (isinstance(seen["ended"], Left) and seen["ended"].exit_code == 143)
             and not (seen["ended"] is None and seen["returned"] == 143)]
    assert wrong == [], f"not ended with 143: {wrong}"
    assert "caseforge: interrupted by SIGTERM" in capsys.readouterr().err


def test_a_first_sigterm_once_the_exit_hooks_handler_is_in_place_is_kept_for_the_exit(doubles, monkeypatch):
    """A command that ended without a stop, a SIGTERM before each line of main after the exit hooks' handler took
    over: the stop is kept, so the exit hooks end the command as stopped (143, caseforge.stopping._end_as_stopped),
    never forgotten into an exit 0."""
    traced = traced_files()
    kept = []
    for line in range(1, 1000):
        seen = {"lines": 0, "fired": False}

        def tracer(frame, event, _arg, seen=seen, line=line):
            if frame.f_code.co_filename not in traced:
                return None
            if event == "line" and signal.getsignal(signal.SIGTERM) is stopping._stop_while_leaving:
                seen["lines"] += 1
                if seen["lines"] == line and not seen["fired"]:
                    seen["fired"] = True
                    stopping._stop_while_leaving(signal.SIGTERM)
            return tracer

        ended = main_as_the_program(monkeypatch, lambda _args: 0, tracer)
        if not seen["fired"]:
            break
        kept.append((line, ended["returned"], ended["stop"].exit_code if ended["stop"] else None))
    assert kept, "main ran no line with the exit hooks' handler in place"
    assert all(returned == 0 and exit_code == 143 for _, returned, exit_code in kept), kept


def test_a_first_sigterm_as_main_returns_from_work_that_was_not_stopped_ends_the_command_as_stopped(doubles, monkeypatch,
                                                                                                    capsys):
    """A command whose work ended without a stop, and one SIGTERM before each line main runs after the work returned,
    whatever handler is in place then. Between the work's end and the exit hooks' handler, the block's handler
    raised the stop into main's last lines, and it escaped main as an exception (a traceback, exit 1, not 143).
    Wherever it lands now, the command ends as stopped: main returns 143, or it leaves at once with 143, or it
    returns the work's status with the stop kept for the exit hooks, which end it with 143."""
    traced = traced_files()
    outcomes = []
    for line in range(1, 1000):
        seen = {"lines": 0, "fired": False, "done": False}

        def work(_args, seen=seen) -> int:
            seen["done"] = True
            return 0

        ended = main_as_the_program(monkeypatch, work, handler_in_place_before(line, seen, "done", traced))
        if not seen["fired"]:
            break
        outcomes.append((line, ended))
    assert len(outcomes) >= 5, outcomes                 # main's lines after the work were walked

    def as_stopped(ended: dict) -> bool:
        if isinstance(ended["ended"], Left):
            return ended["ended"].exit_code == 143
        if ended["ended"] is not None:
            return False
        kept = ended["stop"].exit_code if ended["stop"] is not None else None
        return ended["returned"] == 143 or (ended["returned"] == 0 and kept == 143)

    wrong = [(line, ended["ended"], ended["returned"]) for line, ended in outcomes if not as_stopped(ended)]
    assert wrong == [], f"not ended as stopped (line, escaped, returned): {wrong}"


def test_a_stop_that_python_wraps_on_the_way_still_ends_the_command_as_stopped(doubles, monkeypatch, capsys):
    """A stop signal whose handler runs inside a class's __set_name__ (an import that creates a class, as rich's
    ConsoleThreadLocals did in 1 try of 50 of tests/integration/test_stop_signals_together.py) reaches the command
    as Python 3.11's RuntimeError("Error calling __set_name__ ..."), not as the stop: the command said that line
    and exited 2, as for a mistake. Whatever the stop's exception became, a command told to stop ends as stopped."""
    from caseforge import cli

    class Field:
        def __set_name__(self, owner, name):
            stopping.on_stop_signal(signal.SIGTERM)       # the signal's handler, run between two bytecodes here

    def work(_args) -> int:
        type("Holder", (), {"buffer": Field()})
        return 0

    monkeypatch.setattr(cli, "_run", work)
    code = cli.main(["status"])
    err = capsys.readouterr().err
    assert code == 143 and err.strip() == "caseforge: interrupted by SIGTERM", (code, err)
