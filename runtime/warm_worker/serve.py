"""The warm process (`python -m caseforge.runtime.warm_worker.serve --socket PATH [--preload ENGINE]`): imports what
shard runs need once, then runs the flow runs launchers hand it (protocol) one at a time, each in its main thread
as `python -m prefect.engine` would, with the launcher's environment, folder and standard streams. A run that did
not end normally (non-zero exit, a signal passed on, a lost launcher) ends this process after it, so no later run
sees what it left; the worker starts a new one."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from typing import Iterator

from caseforge.atomic import renamed_into_place
from caseforge.runtime.warm_worker import protocol


def _import_llama_cpp():
    import llama_cpp  # noqa: F401


def _import_s3fs():
    import s3fs  # noqa: F401


def _import_gcsfs():
    import gcsfs  # noqa: F401


def _import_vllm():
    import vllm  # noqa: F401


# the engines a warm process may import before its first run (`--preload`); llama_cpp and s3fs always
ENGINES = {"llama_cpp": _import_llama_cpp, "s3fs": _import_s3fs, "gcsfs": _import_gcsfs, "vllm": _import_vllm}
PRELOAD = ("llama_cpp", "s3fs")


def _import_for_runs(engines: tuple[str, ...]) -> None:
    """What shard runs import, imported once: Prefect's engine, what the shard flow runs (caseforge.llm.worker; the
    flow's own module, a floor above, is imported by the first run), the backends, the engines."""
    import prefect._internal.metrics  # noqa: F401
    import prefect.engine  # noqa: F401
    import prefect.flow_engine  # noqa: F401

    import caseforge.llm.backends.llamacpp  # noqa: F401
    import caseforge.llm.backends.openai_compat  # noqa: F401
    import caseforge.llm.worker  # noqa: F401

    for engine in dict.fromkeys(engines):
        try:
            ENGINES[engine]()
        except ImportError:       # an optional library this machine does not have: its runs import what they use
            pass


def serve(path: str, preload: tuple[str, ...] = PRELOAD) -> None:
    """Import what flow runs need, then run them one at a time as they come."""
    _end_with_parent()
    began = time.monotonic()
    _import_for_runs(preload)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # bound by its name in its folder: a socket's path has at most 107 bytes, and the temporary name is long
    os.chdir(os.path.dirname(os.path.abspath(path)))
    with renamed_into_place(os.path.abspath(path)) as partial:   # at `path` once listening: runs come from then
        listener.bind(partial.name)
        os.chmod(partial, 0o600)
        listener.listen(1)
    print(f"caseforge warm worker: warm process {os.getpid()} ready ({time.monotonic() - began:.1f} s of imports)",
          flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            run, fds = protocol.take(connection)
        except (OSError, ValueError):
            connection.close()
            continue
        signalled, finished = threading.Event(), threading.Event()
        threading.Thread(target=_watch_launcher, args=(connection, signalled, finished), name="warm launcher watch",
                         daemon=True).start()
        with _as_the_launchers_process(run, fds):
            code = _run_one()
        clean = code == 0 and not signalled.is_set()
        if not clean:                          # no new run may see what this one left: the worker starts afresh
            listener.close()
            os.unlink(path)
        finished.set()
        with contextlib.suppress(OSError):
            protocol.send(connection, exit=code)
        connection.close()
        if not clean:
            os._exit(0)


def _watch_launcher(connection: socket.socket, signalled: threading.Event, finished: threading.Event) -> None:
    """The launcher's messages (a signal it passed on), and its end: a run whose launcher is gone is ended with this
    process, as a killed process would end it."""
    while True:
        try:
            message = protocol.receive(connection)
        except (OSError, ValueError):
            message = None
        if finished.is_set():
            return
        if message is None:
            os.kill(os.getpid(), signal.SIGKILL)
        signalled.set()


@contextlib.contextmanager
def _as_the_launchers_process(run: dict, fds: list[int]) -> Iterator[None]:
    """While a run runs here: this process has the launcher's standard streams, folder and environment, as the
    process Prefect would have started (Prefect reads its settings and the flow run's id from the environment);
    this process's own afterwards."""
    own = {"env": dict(os.environ), "cwd": os.getcwd(), "argv": list(sys.argv),
           "fds": [os.dup(fd) for fd in protocol.STANDARD_STREAMS]}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for fd, theirs in zip(protocol.STANDARD_STREAMS, fds):
        os.dup2(theirs, fd)
    os.chdir(run["cwd"])
    os.environ.clear()
    os.environ.update(run["env"])
    sys.argv = ["prefect.engine"]
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, mine in zip(protocol.STANDARD_STREAMS, own["fds"]):
            os.dup2(mine, fd)
            os.close(mine)
        for fd in fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(own["env"])
        os.chdir(own["cwd"])
        sys.argv = own["argv"]


def _run_one() -> int:
    """One flow run, as `python -m prefect.engine` runs it; its exit code."""
    import runpy
    import warnings

    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()
    try:
        with warnings.catch_warnings():     # "found in sys.modules": the warm process imported it, as it should
            warnings.simplefilter("ignore", RuntimeWarning)
            runpy.run_module("prefect.engine", run_name="__main__", alter_sys=False)
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException as exc:               # noqa: BLE001 - what the engine did not handle ends the run
        print(f"caseforge warm worker: the flow run ended with {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        _send_logs()
    return 0


def _send_logs() -> None:
    """What the run logged, sent to the server now, as a process of its own sends it when it exits: a failed run
    ends this process at once (os._exit), and its reason must reach the orchestrator (flows/llm_shard.py)."""
    from prefect.logging.handlers import APILogWorker

    try:
        APILogWorker.drain_all(timeout=5)
    except Exception:                           # noqa: BLE001 - the run's own exit code still says how it ended
        pass


def _end_with_parent() -> None:
    """The warm process ends with its worker (Linux: the parent-death signal)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)     # PR_SET_PDEATHSIG
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m caseforge.runtime.warm_worker.serve",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="where to take runs (the worker names it)")
    parser.add_argument("--preload", action="append", default=[], choices=sorted(ENGINES),
                        help="an engine to import before the first run (llama_cpp and s3fs always)")
    args = parser.parse_args(argv)
    serve(args.socket, (*PRELOAD, *args.preload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
