"""How a flow run's launcher and the warm process talk: one Unix SOCK_SEQPACKET connection per flow run, to the
socket the worker names in the run's environment (SOCKET_ENV), in a folder only this user can open. A message
is one JSON object in one packet:

    launcher → warm process   {"env": {...}, "cwd": "..."}   the run, with the launcher's stdin, stdout and stderr
    warm process → launcher   {"pid": N}                     taken (nothing, or a closed socket: not taken)
    launcher → warm process   {"signal": N}                  a signal the launcher got (also sent to pid N)
    warm process → launcher   {"exit": N}                    the run's exit status, which the launcher exits with

A closed connection says the other end is gone: a launcher gone ends the run with the warm process (as a killed
process ends its run), a warm process gone makes the launcher exit LOST_WARM_PROCESS."""
from __future__ import annotations

import json
import os
import socket

SOCKET_ENV = "CASEFORGE_WARM_SOCKET"
MAX_MESSAGE = 1 << 20
LOST_WARM_PROCESS = 70          # the launcher's exit code when the warm process vanished under its run
STANDARD_STREAMS = (0, 1, 2)


def send(connection: socket.socket, **message) -> None:
    connection.send(json.dumps(message).encode())


def receive(connection: socket.socket) -> dict | None:
    """The next message; None once the other end closed the connection."""
    data = connection.recv(MAX_MESSAGE)
    return json.loads(data) if data else None


def hand_over(path: str) -> tuple[socket.socket, int] | None:
    """The launcher's side: offer this process's run (its environment but SOCKET_ENV, its folder, its standard
    streams) to the warm process at `path`; (the connection, the warm process's pid) once taken, None when there
    is none or it did not take the run."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        run = {"env": {k: v for k, v in os.environ.items() if k != SOCKET_ENV}, "cwd": os.getcwd()}
        socket.send_fds(connection, [json.dumps(run).encode()], list(STANDARD_STREAMS))
        taken = receive(connection) or {}
    except (OSError, ValueError):
        taken = {}
    if "pid" not in taken:
        connection.close()
        return None
    return connection, int(taken["pid"])


def take(connection: socket.socket) -> tuple[dict, list[int]]:
    """The warm process's side: the run offered on `connection` (its environment and folder) and the launcher's
    standard streams, then say it is taken. OSError or ValueError when the offer is not whole."""
    data, fds, _flags, _address = socket.recv_fds(connection, MAX_MESSAGE, len(STANDARD_STREAMS))
    try:
        run = json.loads(data)
        if len(fds) != len(STANDARD_STREAMS) or not isinstance(run.get("env"), dict) or "cwd" not in run:
            raise ValueError("not a whole run")
        send(connection, pid=os.getpid())
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return run, fds
