"""The warm worker itself: Prefect's process worker for one GPU (`--limit 1`) with a warm process kept beside it
(serve), and flow runs started through the launcher (launch) while that process waits for one."""
from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import ClassVar

from prefect.workers.process import ProcessJobConfiguration, ProcessWorker

from caseforge.runtime.warm_worker.protocol import SOCKET_ENV

LAUNCHER = "caseforge.runtime.warm_worker.launch"
WARM_PROCESS = "caseforge.runtime.warm_worker.serve"
RESTART_AFTER_FAILURE_S = 10.0


class WarmProcess:
    """The warm process beside the worker, listening at `path`: started at once, and again whenever it ends (one
    that failed by itself not more often than every RESTART_AFTER_FAILURE_S: one that cannot start leaves runs
    cold, not a busy loop)."""

    def __init__(self, path: str, preload: tuple[str, ...]):
        self.path = path
        self.launcher = shlex.join([sys.executable, "-m", LAUNCHER])
        self._command = [sys.executable, "-m", WARM_PROCESS, "--socket", path, *[f"--preload={m}" for m in preload]]
        self.process: subprocess.Popen | None = None
        self.stopping = threading.Event()
        threading.Thread(target=self._keep, name="warm process keeper", daemon=True).start()

    def _keep(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            if os.path.exists(self.path):
                os.unlink(self.path)
            self.process = subprocess.Popen(self._command)
            ended = self.process.wait()
            if ended not in (0, -signal.SIGKILL):     # not after a run: it could not start, do not hurry
                self.stopping.wait(max(0.0, RESTART_AFTER_FAILURE_S - (time.monotonic() - started)))

    def ready(self) -> bool:
        """Whether a warm process waits for a run."""
        return self.process is not None and self.process.poll() is None and os.path.exists(self.path)

    def stop(self) -> None:
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class WarmJobConfiguration(ProcessJobConfiguration):
    """A process pool's job configuration that, while the warm process waits, starts a flow run with the launcher.
    Set before Prefect prepares the run (its documented `prepare_for_flow_run`, where a command not configured
    otherwise becomes `python -m prefect.engine`): a deployment's or pool's own command is left as it is."""

    warm: ClassVar[WarmProcess | None] = None          # this worker process's one warm process

    def prepare_for_flow_run(self, *args, **kwargs) -> None:
        warm = WarmJobConfiguration.warm
        if self.command is None and warm is not None and warm.ready():
            self.command = warm.launcher
            self.env = {**self.env, SOCKET_ENV: warm.path}
        super().prepare_for_flow_run(*args, **kwargs)


with warnings.catch_warnings():           # Prefect registers worker classes by type; this one is a process worker
    warnings.simplefilter("ignore", UserWarning)

    class WarmProcessWorker(ProcessWorker):
        job_configuration = WarmJobConfiguration


def run_worker(pool: str, name: str | None, work_queues: list[str], preload: tuple[str, ...]) -> None:
    """Prefect's process worker on `pool` (one run at a time) until SIGTERM or SIGINT, with its warm process."""
    folder = tempfile.mkdtemp(prefix="caseforge-warm-")      # 0700: only this user reaches the socket
    warm = WarmJobConfiguration.warm = WarmProcess(os.path.join(folder, "runs.sock"), preload)

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
        WarmJobConfiguration.warm = None
        shutil.rmtree(folder, ignore_errors=True)
