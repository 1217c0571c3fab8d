"""A process worker whose flow runs start warm: for GPU machines of a process pool, where a fresh process per shard
run would import Prefect and caseforge and load the step's model again for every shard.

    .venv/bin/python -m caseforge.runtime.warm_worker --pool caseforge-gpu [--name gpu-1]

is Prefect's own process worker (`prefect worker start --pool caseforge-gpu --type process --limit 1`, run in this
process) with one difference: beside it runs a *warm process* that has imported Prefect, caseforge's shard flow
and its libraries, and each flow run starts there instead of in a new `python -m prefect.engine`. Prefect still
sees one process per flow run, a small *launcher* (`python -m caseforge.runtime.warm_worker launch`, a fraction of a
second) that hands the run to the warm process and stands for it: the run's output goes to the launcher's stdout
and stderr, its exit code is the launcher's, a SIGTERM to the launcher (a cancellation) is passed on, and the
launcher's death (SIGKILL) ends the run with the warm process, as it would end a fresh process. The warm process
runs the flow run in its main thread the way `python -m prefect.engine` does, with the launcher's environment
(flow-run heartbeats, cancellation and crash reports are Prefect's own), then waits for the next one. What the
runs loaded stays loaded: the in-process backends of caseforge.llm.config, so a llama.cpp or offline vLLM model
is loaded once per worker, not once per shard.

One run at a time (`--limit 1`: one GPU per worker). After a run that did not end normally (non-zero exit, a
signal, a lost launcher) the warm process ends, and the worker starts a new one. While none is ready (its start,
or a warm process that cannot start at all), runs start cold, exactly as under `prefect worker start`.
The launcher and the warm process talk over a Unix socket in a folder only this user can open.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys

SOCKET_ENV = "CASEFORGE_WARM_SOCKET"
MAX_MESSAGE = 1 << 20
LOST_WARM_PROCESS = 70          # the launcher's exit code when the warm process vanished under its run


# --- the launcher: what the worker starts for each flow run (imports nothing heavy) --------------------------------
def launch() -> int:
    """Hand this flow run to the warm process named by CASEFORGE_WARM_SOCKET and stand for it; when there is none
    (or it does not take the run), become `python -m prefect.engine` itself."""
    path = os.environ.get(SOCKET_ENV, "")
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        request = json.dumps({"env": {k: v for k, v in os.environ.items() if k != SOCKET_ENV},
                              "cwd": os.getcwd()}).encode()
        socket.send_fds(connection, [request], [0, 1, 2])
        taken = json.loads(connection.recv(MAX_MESSAGE) or b"{}")
    except (OSError, ValueError):
        taken = {}
    if "pid" not in taken:
        connection.close()
        os.environ.pop(SOCKET_ENV, None)
        os.execv(sys.executable, [sys.executable, "-m", "prefect.engine"])

    def pass_on(number, _frame) -> None:
        try:
            connection.send(json.dumps({"signal": number}).encode())
            os.kill(taken["pid"], number)
        except OSError:
            pass
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, pass_on)
    while True:
        try:
            message = connection.recv(MAX_MESSAGE)
        except InterruptedError:
            continue
        if not message:
            print("caseforge warm worker: the warm process running this flow run ended without an exit code "
                  "(killed, or out of memory?)", file=sys.stderr)
            return LOST_WARM_PROCESS
        code = json.loads(message).get("exit")
        if code is not None:
            return int(code)


# --- the warm process ----------------------------------------------------------------------------------------------
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

    import caseforge.llm.worker  # noqa: F401
    import caseforge.llm.backends.llamacpp  # noqa: F401
    import caseforge.llm.backends.openai_compat  # noqa: F401

    for engine in dict.fromkeys(engines):
        try:
            ENGINES[engine]()
        except ImportError:       # an optional library this machine does not have: its runs import what they use
            pass


def serve(path: str, preload: tuple[str, ...] = PRELOAD) -> None:
    """Import what flow runs need, then run them one at a time as they come (caseforge.runtime.warm_worker)."""
    import threading
    import time

    _end_with_parent()
    began = time.monotonic()
    _import_for_runs(preload)
    base_env, base_cwd, base_argv = dict(os.environ), os.getcwd(), list(sys.argv)
    own_fds = [os.dup(fd) for fd in (0, 1, 2)]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".new")
    os.chmod(path + ".new", 0o600)
    listener.listen(1)
    os.replace(path + ".new", path)           # ready: the worker hands runs over from now on
    print(f"caseforge warm worker: warm process {os.getpid()} ready ({time.monotonic() - began:.1f} s of imports)",
          flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            data, fds, _flags, _address = socket.recv_fds(connection, MAX_MESSAGE, 3)
            request = json.loads(data)
            connection.send(json.dumps({"pid": os.getpid()}).encode())
        except (OSError, ValueError):
            connection.close()
            continue
        signalled = threading.Event()
        finished = threading.Event()

        def watch_launcher() -> None:
            """The launcher's messages (a signal it passed on), and its end: a run whose launcher is gone is
            ended with this process, as a killed process would end it."""
            while True:
                try:
                    message = connection.recv(MAX_MESSAGE)
                except OSError:
                    message = b""
                if finished.is_set():
                    return
                if not message:
                    os.kill(os.getpid(), signal.SIGKILL)
                signalled.set()

        threading.Thread(target=watch_launcher, name="warm launcher watch", daemon=True).start()
        code = _run_one(request, fds)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, own in zip((0, 1, 2), own_fds):
            os.dup2(own, fd)
        for fd in fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(base_env)
        os.chdir(base_cwd)
        sys.argv = list(base_argv)
        clean = code == 0 and not signalled.is_set()
        if not clean:                          # no new run may see what this one left: the worker starts afresh
            listener.close()
            os.unlink(path)
        finished.set()
        try:
            connection.send(json.dumps({"exit": code}).encode())
        except OSError:
            pass
        connection.close()
        if not clean:
            os._exit(0)


def _run_one(request: dict, fds: list[int]) -> int:
    """One flow run, as `python -m prefect.engine` runs it, with the launcher's environment, folder and output;
    its exit code."""
    import runpy
    import warnings

    from prefect.context import refresh_global_settings_context

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for fd, theirs in zip((0, 1, 2), fds):
        os.dup2(theirs, fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["prefect.engine"]
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


# --- the worker ----------------------------------------------------------------------------------------------------
def run_worker(pool: str, name: str | None, work_queues: list[str], preload: tuple[str, ...]) -> None:
    import asyncio
    import shlex
    import subprocess
    import tempfile
    import threading
    import time
    import warnings

    from prefect.workers.process import ProcessWorker

    folder = tempfile.mkdtemp(prefix="caseforge-warm-")      # 0700: only this user reaches the socket
    path = os.path.join(folder, "runs.sock")
    launcher = shlex.join([sys.executable, "-m", "caseforge.runtime.warm_worker", "launch"])

    class WarmProcess:
        """The warm process beside the worker: started at once, and again whenever it ends (one that failed
        by itself not more often than every ten seconds: one that cannot start leaves runs cold, not a busy loop)."""

        def __init__(self):
            self.process: subprocess.Popen | None = None
            self.stopping = threading.Event()
            threading.Thread(target=self.keep, name="warm process keeper", daemon=True).start()

        def keep(self) -> None:
            while not self.stopping.is_set():
                started = time.monotonic()
                if os.path.exists(path):
                    os.unlink(path)
                self.process = subprocess.Popen([sys.executable, "-m", "caseforge.runtime.warm_worker", "serve",
                                                 "--socket", path, *[f"--preload={m}" for m in preload]])
                ended = self.process.wait()
                if ended not in (0, -signal.SIGKILL):     # not after a run: it could not start, do not hurry
                    self.stopping.wait(max(0.0, 10 - (time.monotonic() - started)))

        def ready(self) -> bool:
            """Whether a warm process waits for a run."""
            return self.process is not None and self.process.poll() is None and os.path.exists(path)

        def stop(self) -> None:
            self.stopping.set()
            if self.process is not None and self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()

    warm = WarmProcess()

    with warnings.catch_warnings():           # Prefect registers worker classes by type; this one is a process worker
        warnings.simplefilter("ignore", UserWarning)

        class WarmProcessWorker(ProcessWorker):
            async def run(self, flow_run, configuration, task_status=None):
                if not configuration._command_configured and warm.ready():
                    configuration.command = launcher
                    configuration._command_configured = True
                    configuration.env[SOCKET_ENV] = path
                return await super().run(flow_run, configuration, task_status)

    async def main() -> None:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, task.cancel)
        async with WarmProcessWorker(work_pool_name=pool, work_queues=work_queues or None, name=name,
                                     limit=1, create_pool_if_not_found=False) as worker:
            await worker.start()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        pass
    finally:
        warm.stop()
        for leftover in (path, path + ".new"):
            if os.path.exists(leftover):
                os.unlink(leftover)
        os.rmdir(folder)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["launch"]:
        return launch()
    import argparse

    parser = argparse.ArgumentParser(prog="python -m caseforge.runtime.warm_worker",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("serve",), help=argparse.SUPPRESS)
    parser.add_argument("--socket", help=argparse.SUPPRESS)
    parser.add_argument("--pool", "-p", help="the work pool (a process pool: caseforge-gpu)")
    parser.add_argument("--name", "-n", help="the worker's name (default: Prefect's)")
    parser.add_argument("--work-queue", "-q", action="append", default=[], help="poll only these queues")
    parser.add_argument("--preload", action="append", default=[], choices=sorted(ENGINES),
                        help="an engine the warm process imports before its first run (llama_cpp and s3fs always)")
    args = parser.parse_args(argv)
    preload = (*PRELOAD, *args.preload)
    if args.mode == "serve":
        serve(args.socket, preload)
        return 0
    if not args.pool:
        parser.error("--pool is required")
    run_worker(args.pool, args.name, args.work_queue, preload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
