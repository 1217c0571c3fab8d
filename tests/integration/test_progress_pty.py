"""On a terminal (a pseudo-terminal here), a long step that finishes nothing for a while (one slow LLM answer)
still shows a line at least every heartbeat: with a bar drawn (a terminal of known width) the heartbeat line is
written above the bar; on a terminal whose width is unknown (0 columns: tqdm would draw nothing) the plain
lines are kept. The step runs in a child process whose stderr is the pty, logging set up as the CLI does."""
from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

LONG_STEP = r"""
import logging, sys, time
from caseforge.progress import Progress, show_caseforge_logs

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                    handlers=[logging.StreamHandler(sys.stderr)])
show_caseforge_logs()
progress = Progress("llm casegen-generate", total=3, unit="requests", heartbeat_s=0.5)
time.sleep(2.6)                      # one long answer: nothing finishes
progress.step(3)
progress.close()
print("END", file=sys.stderr, flush=True)
"""


def on_a_pty(code: str, columns: int, env: dict, timeout: float = 60) -> list[tuple[float, bytes]]:
    """(seconds since start, bytes) as the child writes them to its terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    process = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave, env=env,
                               close_fds=True)
    os.close(slave)
    chunks, started = [], time.monotonic()
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:              # the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append((time.monotonic() - started, chunk))
            elif process.poll() is not None:
                break
    finally:
        process.kill() if process.poll() is None else None
        process.wait(timeout=30)
        os.close(master)
    return chunks


@pytest.mark.parametrize("columns", [80, 0], ids=["a terminal 80 columns wide", "a terminal of unknown width"])
def test_a_long_step_on_a_terminal_shows_a_line_at_least_every_heartbeat(columns):
    env = {k: v for k, v in os.environ.items() if k not in ("CASEFORGE_PROGRESS", "COLUMNS", "LINES")}
    chunks = on_a_pty(LONG_STEP, columns, env)
    text = b"".join(c for _, c in chunks).decode(errors="replace")
    assert "END" in text, text
    started = next(t for t, c in chunks if b"started" in c)
    finished = next(t for t, c in chunks if b"3/3" in c)
    beats = [t for t, c in chunks if started < t < finished and re.search(rb"working for \d+s", c)]
    assert len(beats) >= 3, text                               # 2.6 s of nothing at a heartbeat of 0.5 s
    gaps = [b - a for a, b in zip([started, *beats], [*beats, finished])]
    assert max(gaps) < 1.5, (gaps, text)
    if columns:
        assert "llm casegen-generate:   0%" in text, text      # the bar is drawn too
