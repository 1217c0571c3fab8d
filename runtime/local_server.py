"""One local Prefect server that caseforge commands share, instead of a temporary server per command.

A command that runs a flow (with no PREFECT_API_URL of the user's) finds the server this module keeps for
its PREFECT_HOME, or starts one in the background, and talks to it; the server then outlives the command
until it has been idle (no command using it) for CASEFORGE_PREFECT_SERVER_IDLE_S seconds (default 900),
or until `caseforge server stop`. Its state lives beside the Prefect database it serves, in
$PREFECT_HOME/caseforge-server/:

- server.json   who owns the server: the pid of its one process, its API URL, Prefect and caseforge versions,
                the virtual environment (sys.prefix) of the command that started it, a hash of its
                database URL, when it started, its idle timeout, "starting" or "ready"
- start.lock    flock'ed by whoever decides (start a server, reuse it, retire it, stop it)
- leases.lock   every command using the server holds a shared flock on it; the kernel drops it however the
                command ends (SIGKILL included), so a killed command never keeps the server up, and the
                server stops itself once it could take an exclusive lock for the whole idle timeout
- server.log    the server's output

The server is one process (`python -m caseforge.runtime.local_server serve HOME IDLE IDENTITY`): Prefect's
API app under uvicorn, on a loopback port the process bound itself (no port race), with the settings of
Prefect's temporary server (no UI, the services a temporary server runs), plus a thread that watches the
leases. Killing it kills everything it started. A state file whose process is gone is stale and replaced;
a server of another Prefect or caseforge version, database or virtual environment is left alone and not
reused (the command says so and runs on a temporary server of its own).

Nothing of Prefect at import: the server process daemonizes (fork) before it imports Prefect.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from caseforge import processes
from caseforge.atomic import write_atomically
from caseforge.settings import load_settings

MODE_ENV = "CASEFORGE_PREFECT_SERVER"          # "local" (default) or "ephemeral" (a temporary server per command)
IDLE_ENV = "CASEFORGE_PREFECT_SERVER_IDLE_S"
URL_ENV = "CASEFORGE_PREFECT_LOCAL_URL"        # set beside PREFECT_API_URL while a command uses the local server
DEFAULT_IDLE_S = 900
MODES = ("local", "ephemeral")
MARKER = "caseforge.runtime.local_server"        # in the server process's command line
# What Prefect's temporary server runs with (prefect.server.api.server.SubprocessASGIServer): no UI, and
# only the services a temporary server runs.
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


IDENTITY_NAMES = {"prefect_version": "Prefect version", "caseforge_version": "caseforge version",
                  "database": "database", "venv": "virtual environment"}


class LocalServerError(RuntimeError):
    """The local server could not be started or used; the reason in one line."""


def mode() -> str:
    value = load_settings().prefect_server.strip().lower() or "local"
    if value not in MODES:
        raise LocalServerError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def idle_timeout_s() -> float:
    raw = load_settings().prefect_server_idle_s
    try:
        value = float(raw) if raw.strip() else DEFAULT_IDLE_S
    except ValueError:
        raise LocalServerError(f"{IDLE_ENV}={raw!r}: expected seconds") from None
    if value <= 0:
        raise LocalServerError(f"{IDLE_ENV}={raw!r}: expected seconds above 0")
    return value


@dataclass(frozen=True)
class Paths:
    home: Path

    @classmethod
    def of(cls, prefect_home: str | Path) -> "Paths":
        return cls(Path(prefect_home).expanduser().resolve() / "caseforge-server")

    @property
    def state(self) -> Path:
        return self.home / "server.json"

    @property
    def start_lock(self) -> Path:
        return self.home / "start.lock"

    @property
    def leases(self) -> Path:
        return self.home / "leases.lock"

    @property
    def log(self) -> Path:
        return self.home / "server.log"


def caseforge_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("caseforge")
    except PackageNotFoundError:           # a source tree run without installing it
        return "unknown"


def database_key(connection_url: str) -> str:
    """What identifies the database in the state file: a hash (a PostgreSQL URL may carry a password)."""
    return hashlib.sha256(connection_url.encode()).hexdigest()[:16]


# --- the state file and the process it names ---

def read_state(paths: Paths) -> dict | None:
    try:
        state = json.loads(paths.state.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("pid"), int) else None


def _write_state(paths: Paths, state: dict) -> None:
    write_atomically(paths.state, json.dumps(state, indent=1))


def _forget(paths: Paths, pid: int) -> None:
    """Remove the state file if it still names `pid`."""
    state = read_state(paths)
    if state is None or state["pid"] == pid:
        with contextlib.suppress(FileNotFoundError):
            paths.state.unlink()


def owns(pid: int, paths: Paths) -> bool:
    """`pid` is running (not a zombie) and is the server process of this state folder (not another process
    given the pid)."""
    if processes.alive(pid) is False:
        return False
    arguments = processes.command_line(pid) or []
    return MARKER in arguments and str(paths.home.parent) in arguments


def decide(state: dict | None, alive: bool, identity: dict) -> str:
    """What a command does with the server a state file names:

    - "start"   no state, or its process is gone (stale): start a server
    - "foreign" another Prefect or caseforge version, database or virtual environment (any key of
                `identity` differs): leave it alone, do not reuse it
    - "wait"    still starting (its starter gave up waiting or died): wait for it
    - "reuse"   ready: use it (after a health check)"""
    if state is None or not alive:
        return "start"
    if any(state.get(key) != value for key, value in identity.items()):
        return "foreign"
    return "reuse" if state.get("status") == "ready" else "wait"


_LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))     # never through an HTTP proxy


def healthy(state: dict, prefect_version: str, timeout: float = 3.0) -> bool:
    """The server answers at its URL and is the Prefect version the state file says."""
    try:
        with _LOOPBACK.open(f"{state['api_url']}/health", timeout=timeout) as answer:
            if answer.status != 200:
                return False
        with _LOOPBACK.open(f"{state['api_url']}/admin/version", timeout=timeout) as answer:
            return json.loads(answer.read()) == prefect_version
    except (OSError, ValueError, KeyError):
        return False


# --- locks ---

@contextlib.contextmanager
def _locked(path: Path, timeout: float | None = None):
    """An exclusive flock on `path` (waiting up to `timeout` s; None: as long as it takes); yields whether
    it was taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            taken = True
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    taken = True
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        taken = False
                        break
                    time.sleep(0.05)
        yield taken
    finally:
        os.close(fd)


def in_use(paths: Paths) -> bool:
    """A command holds a lease on the server."""
    with _locked(paths.leases, timeout=0) as free:
        return not free


class Lease:
    """A shared flock on leases.lock: the server is in use while any is held. The kernel releases it when
    the holder ends, however it ends."""

    def __init__(self, paths: Paths):
        paths.home.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(paths.leases, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# --- commands' side ---

def _log_tail(paths: Paths, lines: int = 15) -> str:
    try:
        text = paths.log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def _launch(paths: Paths, idle_s: float, identity: dict, env: dict) -> None:
    """Start the server process (it forks into the background at once, in its own session)."""
    with paths.log.open("wb") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", MARKER, "serve", str(paths.home.parent), repr(float(idle_s)),
             json.dumps(identity)],
            env={**env, **SERVER_ENV}, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True)
    if launcher.wait(timeout=60) != 0:
        raise LocalServerError(f"the server process failed to start (exit {launcher.returncode}): "
                               f"{_log_tail(paths)}")


def _wait_ready(paths: Paths, identity: dict, timeout: float, prefect_version: str) -> dict:
    deadline = time.monotonic() + timeout
    seen_pid = None
    while True:
        state = read_state(paths)
        if state is not None:
            seen_pid = state["pid"]
            if not owns(state["pid"], paths):
                _forget(paths, state["pid"])
                raise LocalServerError(f"the server process {state['pid']} ended while starting: {_log_tail(paths)}")
            if state.get("status") == "ready" and healthy(state, prefect_version):
                return state
        if time.monotonic() > deadline:
            if seen_pid is not None and owns(seen_pid, paths):
                os.kill(seen_pid, signal.SIGTERM)      # ours, and no use: it will not be left behind
            raise LocalServerError(f"the server did not answer within {timeout:.0f} s: {_log_tail(paths)}")
        time.sleep(0.1)


def ensure(prefect_home: str | Path, identity: dict, env, idle_s: float, timeout: float,
           prefect_version: str) -> tuple[dict, str]:
    """The ready server for this PREFECT_HOME, started if none is up (with the environment `env()` returns):
    (its state, what was done: "reused", "started", "replaced stale" or "replaced unhealthy").
    LocalServerError when there is one of another version or database, or it cannot be started."""
    paths = Paths.of(prefect_home)
    paths.home.mkdir(parents=True, exist_ok=True)
    with _locked(paths.start_lock):
        state = read_state(paths)
        alive = state is not None and owns(state["pid"], paths)
        action = decide(state, alive, identity)
        if action == "foreign":
            differs = ", ".join(f"{IDENTITY_NAMES.get(key, key)} {state.get(key)!r} (this command: {value!r})"
                                for key, value in identity.items() if state.get(key) != value)
            raise LocalServerError(f"the local Prefect server (pid {state['pid']}) has another {differs}; "
                                   f"not reused (`caseforge server stop` stops it)")
        if action == "wait":
            return _wait_ready(paths, identity, timeout, prefect_version), "reused"
        if action == "reuse":
            if healthy(state, prefect_version):
                return state, "reused"
            os.kill(state["pid"], signal.SIGTERM)      # ours but not answering: replace it
            _forget(paths, state["pid"])
            done = "replaced unhealthy"
        else:                                           # none, or its process is gone: stale
            done = "replaced stale" if paths.state.exists() else "started"
            with contextlib.suppress(FileNotFoundError):
                paths.state.unlink()
        _launch(paths, idle_s, identity, env())
        return _wait_ready(paths, identity, timeout, prefect_version), done


def stop(prefect_home: str | Path, force: bool = False, timeout: float = 30) -> str:
    """Stop the server of this PREFECT_HOME: "stopped", "none" (none running), "stale" (its state file named
    a process that was gone: removed). LocalServerError when commands are using it and not `force`."""
    paths = Paths.of(prefect_home)
    if not paths.home.is_dir():
        return "none"
    with _locked(paths.start_lock):
        state = read_state(paths)
        if state is None:
            stale = paths.state.exists()
            with contextlib.suppress(FileNotFoundError):
                paths.state.unlink()
            return "stale" if stale else "none"
        pid = state["pid"]
        if not owns(pid, paths):
            _forget(paths, pid)
            return "stale"
        if not force and in_use(paths):
            raise LocalServerError(f"the local Prefect server (pid {pid}) is in use by a running command; "
                                   "`caseforge server stop --force` stops it anyway")
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while owns(pid, paths) and time.monotonic() < deadline:
        time.sleep(0.1)
    if owns(pid, paths):
        os.kill(pid, signal.SIGKILL)
        while owns(pid, paths) and time.monotonic() < deadline + 10:
            time.sleep(0.1)
    with _locked(paths.start_lock, timeout=5):
        _forget(paths, pid)
    return "stopped"


def status(prefect_home: str | Path) -> dict | None:
    """The running server's state (plus `in_use`), or None."""
    paths = Paths.of(prefect_home)
    state = read_state(paths) if paths.home.is_dir() else None
    if state is None or not owns(state["pid"], paths):
        return None
    return {**state, "in_use": in_use(paths), "state_dir": str(paths.home)}


# --- the server process ---

def _retire(paths: Paths, pid: int) -> bool:
    """Idle: remove the state file (so no command picks this server up any more) unless a command took a
    lease meanwhile. True when the server should stop now."""
    with _locked(paths.start_lock, timeout=5) as taken:
        if not taken or in_use(paths):
            return False
        _forget(paths, pid)
        return True


def _watch(server, paths: Paths, state: dict, idle_s: float) -> None:
    """Mark the state ready once the API answers; then stop the server after `idle_s` without a lease."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    prefect_version = state["prefect_version"]
    while not healthy(state, prefect_version, timeout=5):
        if server.should_exit:
            return
        time.sleep(0.1)
    _write_state(paths, {**state, "status": "ready"})
    last_used = time.monotonic()
    poll_s = min(1.0, idle_s / 4)
    while not server.should_exit:
        now = time.monotonic()
        if in_use(paths):
            last_used = now
        elif now - last_used >= idle_s:
            if _retire(paths, state["pid"]):
                server.should_exit = True
                return
            last_used = now
        current = read_state(paths)
        if current is None or current["pid"] != state["pid"]:     # replaced or stopped by hand: go
            server.should_exit = True
            return
        time.sleep(poll_s)


def _stop_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def serve(prefect_home: str, idle_s: float, identity: dict) -> int:
    """The server process: detach, bind a loopback port, run Prefect's API until idle or told to stop."""
    if os.fork() > 0:                  # the launching command waits for this parent only
        os._exit(0)
    paths = Paths.of(prefect_home)
    pid = os.getpid()
    os.chdir(paths.home)               # not the starting command's folder, which may go away
    os.environ["PREFECT_HOME"] = str(paths.home.parent)      # absolute, whatever the command had
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    state = {"pid": pid, "status": "starting", "api_url": f"http://127.0.0.1:{port}/api", "port": port,
             **identity, "idle_timeout_s": idle_s, "python": sys.executable,
             "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             "log": str(paths.log)}
    try:
        _write_state(paths, state)
        import uvicorn

        server = uvicorn.Server(uvicorn.Config("prefect.server.api.server:create_app", factory=True,
                                               host="127.0.0.1", port=port, log_level="error", lifespan="on"))
        threading.Thread(target=_watch, args=(server, paths, state, idle_s), daemon=True).start()
        server.run(sockets=[sock])
    finally:
        with _locked(paths.start_lock, timeout=2):
            _forget(paths, pid)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])))
    sys.exit(f"usage: python -m {MARKER} serve PREFECT_HOME IDLE_SECONDS IDENTITY_JSON")
