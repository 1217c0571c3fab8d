"""A watchdog that stops Prefect's temporary server when the caseforge process that started it is gone, however
it ended (SIGKILL included): Prefect stops that server from an atexit hook, which a killed process never runs.

`watch(pid)` starts it (`python -m caseforge.runtime.server_watchdog PIPE PIDFD PID`) holding the read end of a
pipe whose only write end stays with this process; the kernel closes that end when the process ends, and the
watchdog then stops the server (SIGTERM, SIGKILL after 10 s). It leaves earlier if the server ends first (its
pidfd turns readable; on a kernel without pidfds it polls the pid). It imports almost nothing: a bare
interpreter's cost."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

STOP_GRACE_S = 10.0


def watch(pid: int) -> int:
    """Start the watchdog of the server `pid`; returns the pipe's write end, to be kept open while this process
    lives."""
    read_end, write_end = os.pipe()         # neither end is inherited by other children
    try:
        pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else -1
    except OSError:
        pidfd = -1                          # kernel before 5.3: the watchdog polls the pid instead
    try:
        subprocess.Popen([sys.executable, "-m", __name__, str(read_end), str(pidfd), str(pid)],
                         pass_fds=[fd for fd in (read_end, pidfd) if fd >= 0], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(read_end)
        if pidfd >= 0:
            os.close(pidfd)
    return write_end


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C and a closed terminal end caseforge, not this
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    pipe, pidfd, pid = map(int, argv[:3])

    def server_ended(timeout: float) -> bool:
        if pidfd >= 0:
            return bool(select.select([pidfd], [], [], timeout)[0])
        from caseforge import processes

        time.sleep(timeout)
        return processes.alive(pid) is False

    while True:
        ready = select.select([pipe] + ([pidfd] if pidfd >= 0 else []), [], [], None if pidfd >= 0 else 1.0)[0]
        if pidfd in ready or (pidfd < 0 and server_ended(0)):
            return 0
        if pipe in ready:
            break

    def send(sig: int) -> None:
        try:
            signal.pidfd_send_signal(pidfd, sig) if pidfd >= 0 else os.kill(pid, sig)
        except ProcessLookupError:
            pass

    send(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        if server_ended(0.2):
            return 0
    send(signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
