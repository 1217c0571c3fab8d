"""tests/unit starts no process, server or socket: a unit test that does fails, naming what it started.

Tests that start real servers (SeaweedFS, a Prefect server, llama_cpp.server, Label Studio), child processes
(`caseforge` commands, Prefect's temporary API server, which every flow run outside a server starts) or loopback
doubles belong in tests/integration. The guard wraps the few places every such start goes through: creating a
process (subprocess, os.fork, os.posix_spawn, multiprocessing) and binding or connecting a network or Unix socket
(an in-process pair, as asyncio's event loop makes, is allowed)."""
from __future__ import annotations

import os
import socket
import subprocess

import pytest


class StartedSomething(AssertionError):
    """A unit test started a process, a server or a socket connection."""


def _refuse(what: str):
    def refused(*args, **kwargs):
        raise StartedSomething(f"a unit test must not {what} (tests/unit/conftest.py): move the test to "
                               f"tests/integration, or give the code a test double that needs none")
    return refused


def _guard() -> pytest.MonkeyPatch:
    guard = pytest.MonkeyPatch()
    guard.setattr(subprocess.Popen, "__init__", _refuse("start a process (subprocess)"))
    guard.setattr(os, "fork", _refuse("fork"))
    guard.setattr(os, "posix_spawn", _refuse("spawn a process (posix_spawn)"))
    guard.setattr(os, "posix_spawnp", _refuse("spawn a process (posix_spawnp)"))
    guard.setattr(socket.socket, "bind", _refuse("bind a socket (a server)"))
    guard.setattr(socket.socket, "connect", _refuse("connect a socket"))
    guard.setattr(socket.socket, "connect_ex", _refuse("connect a socket"))
    guard.setattr(socket, "create_connection", _refuse("connect a socket"))
    return guard


# From before the test's fixtures are set up (a session fixture that starts a server is started by the first test
# that asks for it) to before they are torn down.
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    item._no_process_guard = _guard()
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    guard = getattr(item, "_no_process_guard", None)
    if guard is not None:
        guard.undo()
    return (yield)
