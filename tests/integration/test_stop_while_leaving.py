"""Ctrl-C during a command's last second (issue 36): the process's exit hooks (Prefect drains its log and event
workers there, a query removes its folder) run when the command's work is done; a stop signal then used to land
in one of them ("Exception ignored in atexit callback ... KeyboardInterrupt" and a traceback) and the command
exited as if nothing had happened. Now it ends as stopped, with its one line and 128 + the signal."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from caseforge.warehouse.connection import connect

# the `caseforge` command itself (main() without argv), with one more exit hook that says when it runs and takes
# a while, as Prefect's do when they flush what is left to the server
COMMAND = """
import atexit, sys, time
from caseforge.cli import main

def slow_exit_hook():
    print("exit hook running", file=sys.stderr, flush=True)
    time.sleep(3)

atexit.register(slow_exit_hook)
sys.argv = ["caseforge", "sql", "SELECT 42 AS answer", "--format", "csv", "--db", sys.argv[1]]
sys.exit(main())
"""


@pytest.mark.parametrize("signum, exit_code, cause", [(signal.SIGINT, 130, "SIGINT (Ctrl-C)"),
                                                      (signal.SIGTERM, 143, "SIGTERM")])
def test_a_stop_while_the_command_leaves_is_a_stop_not_a_traceback(signum, exit_code, cause, tmp_path):
    db = tmp_path / "cf.duckdb"
    connect(db).close()
    process = subprocess.Popen([sys.executable, "-c", COMMAND, str(db)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            lines.append(line)
            if line.startswith("exit hook running") or not line:
                break
        assert lines[-1].startswith("exit hook running"), lines
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    stderr = "".join(lines) + err
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert out == "answer\n42\n"                                  # the answer was already printed
    assert err.strip() == f"caseforge: interrupted by {cause}", stderr
    assert process.returncode == exit_code, stderr
