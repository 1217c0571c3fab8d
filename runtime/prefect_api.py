"""Which Prefect server a command's flows report to (`prefect_api`): the user's PREFECT_API_URL, else the local
server commands share (caseforge.runtime.local_server), else Prefect's temporary server for this process, which a
watchdog (caseforge.runtime.server_watchdog) stops however the process ends."""
from __future__ import annotations

import contextlib
import logging
import os
import sys

from caseforge.runtime import local_server, server_watchdog

_GUARDED: dict[int, int] = {}      # server pid -> the write end of its watchdog's pipe (kept open until exit)


def guard_ephemeral_server() -> None:
    """Start Prefect's temporary local server now, as the first flow run would, and make sure it does not
    outlive this process.

    Prefect 3.8.8 (prefect.server.api.server.SubprocessASGIServer) starts it as a child `uvicorn`
    process and stops it from an atexit hook, which never runs when the process is killed: each killed
    command left a server (about 200 MB) behind; caseforge.runtime.server_watchdog stops it instead. With
    PREFECT_API_URL set there is no temporary server and nothing to do."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    server = SubprocessASGIServer()
    server.start()
    process = server.server_process
    if process is None or process.pid in _GUARDED or process.poll() is not None:
        return
    _GUARDED[process.pid] = server_watchdog.watch(process.pid)


# --- which Prefect server a command's flows talk to ---

def _identity() -> tuple[dict, str]:
    """What a command shares the local server by: Prefect's version, the database, caseforge's version and the
    virtual environment (two checkouts, each with its own .venv, under one ~/.prefect do not share a server)."""
    import prefect
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url
    url = url.get_secret_value() if hasattr(url, "get_secret_value") else str(url)
    return {"prefect_version": prefect.__version__, "database": local_server.database_key(url),
            "caseforge_version": local_server.caseforge_version(), "venv": sys.prefix}, prefect.__version__


def start_local_server(idle_s: float | None = None) -> tuple[dict, str]:
    """The local Prefect server of this PREFECT_HOME (caseforge.runtime.local_server), started in the background
    if none is up: (its state, "reused" / "started" / "replaced stale" / "replaced unhealthy")."""
    from prefect.settings import PREFECT_HOME, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, get_current_settings

    def server_env() -> dict:               # only when starting one: the settings this process runs with
        env = {**os.environ, **get_current_settings().to_environment_variables(exclude_unset=True)}
        env.pop("PREFECT_API_URL", None)
        env.pop(local_server.URL_ENV, None)
        return env

    identity, version = _identity()
    return local_server.ensure(PREFECT_HOME.value(), identity, server_env,
                               idle_s if idle_s is not None else local_server.idle_timeout_s(),
                               float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()), version)


def _drain_prefect_workers() -> None:
    """Send the log records and events still queued to the server before the command lets go of it."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=5)
        except Exception:                   # noqa: BLE001  (what could not be sent is Prefect's to log)
            pass


@contextlib.contextmanager
def prefect_api():
    """Where the flows run inside this block report to:

    - PREFECT_API_URL set by the user: that server, nothing changes;
    - otherwise (CASEFORGE_PREFECT_SERVER=local, the default) the local server of this PREFECT_HOME,
      started in the background when none is up and left running for later commands until idle; this
      process holds a lease on it until the block ends (caseforge.runtime.local_server);
    - CASEFORGE_PREFECT_SERVER=ephemeral, or when the local server cannot be used (another Prefect version
      holds it, it failed to start; a warning says why): Prefect's temporary server, for this process only
      (guard_ephemeral_server)."""
    import prefect.context
    from prefect.settings import (PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_HOME,
                                  PREFECT_UI_URL, get_current_settings)

    if PREFECT_API_URL.value():
        yield None
        return
    lease = None
    try:
        if local_server.mode() == "local":
            lease = local_server.Lease(local_server.Paths.of(PREFECT_HOME.value()))
            state, _ = start_local_server()
        else:
            state = None
    except Exception as exc:                # noqa: BLE001  (the command runs anyway, on a temporary server)
        if lease is not None:
            lease.release()
            lease = None
        logging.getLogger("caseforge").warning("local Prefect server not used: %s; a temporary server for "
                                               "this command instead", exc)
        state = None
    if state is None:
        guard_ephemeral_server()
        yield None
        return
    saved = {name: os.environ.get(name) for name in ("PREFECT_API_URL", "PREFECT_UI_URL", local_server.URL_ENV)}
    saved_global = prefect.context.GLOBAL_SETTINGS_CONTEXT
    os.environ["PREFECT_API_URL"] = os.environ[local_server.URL_ENV] = state["api_url"]   # child processes
    # This thread's settings and the global ones, which Prefect's background threads (logs, events) read.
    # Flow run heartbeats are off unless the user set them: the local server runs only the temporary
    # server's services, none of which watches heartbeats, and each flow run's end waited up to 1 s for
    # its heartbeat thread (Prefect 3.8.8 flow_engine._send_heartbeats sleeps in 1 s slices).
    # No UI URL unless the user set one: the local server serves no UI, and Prefect would print
    # "View at http://127.0.0.1:PORT/runs/flow-run/..." (a 404) for every flow run; an empty one prints none.
    current = get_current_settings()
    updates = {PREFECT_API_URL: state["api_url"]}
    if "ui_url" not in current.model_fields_set:
        updates[PREFECT_UI_URL] = os.environ["PREFECT_UI_URL"] = ""
    if "heartbeat_frequency" not in current.flows.model_fields_set:
        updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    settings = current.copy_with_update(updates=updates)
    context = prefect.context.SettingsContext(profile=saved_global.profile, settings=settings)
    prefect.context.GLOBAL_SETTINGS_CONTEXT = context
    try:
        with context:
            yield state
    finally:
        _drain_prefect_workers()
        prefect.context.GLOBAL_SETTINGS_CONTEXT = saved_global
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        lease.release()
