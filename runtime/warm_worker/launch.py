"""The launcher: what the warm worker has Prefect start for each flow run (`python -m
caseforge.runtime.warm_worker.launch`). It hands the run to the warm process named by CASEFORGE_WARM_SOCKET and
stands for it (protocol); when there is none, or it does not take the run, it becomes `python -m prefect.engine`
itself, so the run starts cold, never dropped. It imports nothing heavy."""
from __future__ import annotations

import os
import signal
import sys

from caseforge.runtime.warm_worker import protocol


def main() -> int:
    handed = protocol.hand_over(os.environ.get(protocol.SOCKET_ENV, ""))
    if handed is None:
        os.environ.pop(protocol.SOCKET_ENV, None)
        os.execv(sys.executable, [sys.executable, "-m", "prefect.engine"])
    connection, pid = handed

    def pass_on(number, _frame) -> None:
        try:
            protocol.send(connection, signal=number)
            os.kill(pid, number)
        except OSError:
            pass
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, pass_on)
    while True:
        try:
            message = protocol.receive(connection)
        except InterruptedError:
            continue
        if message is None:
            print("caseforge warm worker: the warm process running this flow run ended without an exit code "
                  "(killed, or out of memory?)", file=sys.stderr)
            return protocol.LOST_WARM_PROCESS
        if message.get("exit") is not None:
            return int(message["exit"])


if __name__ == "__main__":
    sys.exit(main())
