"""Two SIGTERMs at once to real `caseforge` processes, 50 times (issue 41): GNU `timeout` signals its child and then
the child's group, and a command hung until `kill -9` when the second signal's handler ran inside the first's
(1 try in 10). tests/unit/test_stop_handler_reentry.py puts the second handler at every line of the first; this
is the real thing: signals from another process, to commands at work.

Each try is `caseforge llm ping` against a loopback endpoint that takes the connection and never answers, so the
command is busy until it is stopped: checking its settings (the command's busiest moment, all Python), opening
its connection, then waiting for the answer. Once the process has installed its SIGTERM handler (its SigCgt mask
in /proc says so: the moment before which a SIGTERM kills by default), it is signalled after a delay spread over
its start-up and its wait, twice as `timeout` does: the process, then its group, the second 0 to 200 µs after the
first (back to back, the kernel often merges the two into one delivery; spread, the second lands anywhere in the
first one's handler: before the fix, 1 of these 50 tries hung). Every try must end by itself, with exit status
143 and its one line, within the grace period (caseforge.stopping.STOP_GRACE_S) plus what a loaded machine takes
to run the exit; the tries run a few at a time."""
from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from caseforge.stopping import STOP_GRACE_S

# a hang guard, not a budget: the 50 tries took 97-131 s in CI
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TRIES = 50
AT_ONCE = 4                     # processes alive at a time (2 cores: each is on a CPU much of the time)
SPREAD_S = 0.5                  # signals land from the handler's installation to this much later
GAP_S = 0.0002                  # the second signal at most this long after the first
EXIT_SLACK_S = 10.0             # beyond the grace period: leaving, on a loaded 2-core machine
START_WITHIN_S = 120.0          # from start to the SIGTERM handler in place (imports), a loaded machine


@dataclass
class Try:
    number: int
    delay_s: float
    gap_s: float
    process: subprocess.Popen
    started_at: float
    ready_at: float | None = None
    signalled_at: float | None = None
    ended_after_s: float | None = None
    exit_code: int | str | None = None
    stderr: str = ""


def handles_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM (its handler is installed): bit SIGTERM-1 of SigCgt."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def signal_twice(pid: int, gap_s: float) -> None:
    os.kill(pid, signal.SIGTERM)                        # `timeout`: the child,
    until = time.perf_counter() + gap_s                 # (a sleep is far coarser than the gap)
    while time.perf_counter() < until:
        pass
    os.killpg(pid, signal.SIGTERM)                      # then its group


def start(number: int, delay_s: float, gap_s: float, port: int, folder: Path, env: dict) -> Try:
    command = [sys.executable, "-m", "caseforge", "llm", "ping", "--llm", "openai", "--model", "never-answers",
               "--base-url", f"http://127.0.0.1:{port}/v1", "--timeout-s", "600"]
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)         # its own group, as `timeout` makes one
    return Try(number, delay_s, gap_s, process, time.monotonic())


def step(attempt: Try, now: float) -> bool:
    """Move one try on (handler seen, signals sent, end seen); True once it is over."""
    process = attempt.process
    if attempt.signalled_at is None:
        if process.poll() is not None:
            attempt.exit_code = f"ended before it was signalled ({process.returncode})"
            return True
        if attempt.ready_at is None:
            if handles_sigterm(process.pid):
                attempt.ready_at = now
            elif now - attempt.started_at > START_WITHIN_S:
                attempt.exit_code = "no SIGTERM handler in time"
                return True
            return False
        if now - attempt.ready_at >= attempt.delay_s:
            signal_twice(process.pid, attempt.gap_s)
            attempt.signalled_at = time.monotonic()
        return False
    if process.poll() is not None:
        attempt.exit_code, attempt.ended_after_s = process.returncode, now - attempt.signalled_at
        return True
    if now - attempt.signalled_at > STOP_GRACE_S + EXIT_SLACK_S:
        attempt.exit_code = "hung"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return True
    return False


@pytest.fixture
def endpoint_that_never_answers():
    """A loopback port whose connections the kernel completes and nobody answers (never accepted)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(TRIES)
        yield listener.getsockname()[1]


def test_two_sigterms_at_once_never_hang_a_command(endpoint_that_never_answers, tmp_path, capsys):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEFORGE_")}
    env.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    rng = random.Random(41)
    waiting = [(n, rng.uniform(0, SPREAD_S), rng.uniform(0, GAP_S)) for n in range(TRIES)]
    running: list[Try] = []
    done: list[Try] = []
    began = time.monotonic()
    try:
        while waiting or running:
            while waiting and len(running) < AT_ONCE:
                running.append(start(*waiting.pop(0), endpoint_that_never_answers, tmp_path, env))
            now = time.monotonic()
            for attempt in [a for a in running if step(a, now)]:
                running.remove(attempt)
                attempt.stderr = attempt.process.stderr.read().decode(errors="replace")
                attempt.process.stderr.close()
                done.append(attempt)
            time.sleep(0.002)
    finally:
        for attempt in running:
            os.killpg(attempt.process.pid, signal.SIGKILL)
            attempt.process.wait()
    took = time.monotonic() - began

    codes = [a.exit_code for a in done]
    hung = [a.number for a in done if a.exit_code == "hung"]
    slowest = max(a.ended_after_s for a in done if a.ended_after_s is not None)
    with capsys.disabled():
        print(f"\n{len(done)} tries, {len(hung)} hung, exit statuses {sorted(set(map(str, codes)))}, slowest exit "
              f"{slowest:.2f} s after the signals (grace {STOP_GRACE_S:.0f} s), {took:.0f} s in all")
    assert len(done) == TRIES and hung == [], [(a.number, a.exit_code, a.stderr[-500:]) for a in done
                                               if a.exit_code != 143]
    assert codes == [143] * TRIES, [(a.number, a.exit_code, a.stderr[-500:]) for a in done if a.exit_code != 143]
    not_said = [(a.number, a.ended_after_s, a.stderr[-800:]) for a in done
                if a.stderr.strip().splitlines()[-1:] != ["caseforge: interrupted by SIGTERM"]]
    assert not_said == [], not_said
    assert all("Traceback" not in a.stderr for a in done)
    assert slowest <= STOP_GRACE_S + EXIT_SLACK_S
