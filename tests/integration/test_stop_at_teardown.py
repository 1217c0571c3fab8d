"""A stopped command's second signal during the interpreter's last teardown (after its exit hooks, while its modules
are torn down: Python gives SIGTERM its default action back then) ended the command killed by the signal, exit
status -15 instead of 143 (1 try of 50 of test_stop_signals_together.py in a fresh-clone run). A real process:
stopped as a command is, its exit hooks run, and a module-level object whose finaliser sends the second SIGTERM."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import os, signal, sys, time
    from caseforge import stopping

    class SecondSignalAtTeardown:
        def __del__(self):          # runs while the interpreter tears its modules down, after every exit hook
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.3)         # the signal's default action would end the process here

    keep = SecondSignalAtTeardown()
    request = stopping.request_stop(signal.SIGTERM)     # the first signal stopped the command's work
    stopping.say_stopped(request)
    stopping.stop_quietly_while_leaving(request.exit_code)
    if FORGET:
        stopping.forget_stop()      # as cli.main does once the exit hooks' handler is in place
    sys.exit(request.exit_code)
""")


@pytest.mark.parametrize("forget", [True, False], ids=["stop forgotten by main", "stop kept"])
def test_a_second_sigterm_while_a_stopped_command_tears_down_keeps_its_143(forget):
    program = PROGRAM.replace("if FORGET:", f"if {forget}:")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, (done.returncode, done.stderr[-2000:])
    assert done.stderr.strip() == "caseforge: interrupted by SIGTERM", done.stderr
