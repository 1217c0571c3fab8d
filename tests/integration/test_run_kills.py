"""Kill tests: a real `caseforge` process (an ingest, a builder, the nightly) stopped part-way by SIGINT (Ctrl-C),
SIGTERM (a scheduler, a container stop) or SIGKILL, then read back from ops.runs and ops.nightly_stages.

Each command is held part-way on a named pipe (FIFO) among its input files: the process blocks reading it
after it has opened its run and done some work, which makes the moment of the signal deterministic without
any hook in the code. The test sees the process waiting (it can open the pipe's write end) and, once it blocks
in its read, signals it.

- SIGINT / SIGTERM: the process ends promptly, exit 130 / 143, with one line on stderr; its run and every run
  and stage it had not finished are `interrupted` (never `succeeded`), in ops.runs, in `caseforge status` and,
  for the flow run, in Prefect.
- SIGKILL, then the same command again: the killed run becomes `interrupted` at the next start, the rerun
  succeeds, and nothing of the killed run is left beside the warehouse (staging files, open-run files).

The nine commands (and the reruns) run at the same time, each on its own warehouse, against the one local
Prefect server of the session: one command's start-up waits on the others' less than in a row.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from caseforge.cli import main
from caseforge.warehouse.connection import connect

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
CASEGEN_ITEMS = PROJECT_ROOT / "tests" / "fixtures" / "casegen" / "full_cases.jsonl"
EMPTY_PAGE = '{"resultcount": 0, "results": []}'
SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143), "SIGKILL": (signal.SIGKILL, -9)}
COMMANDS = ("ingest", "builder", "nightly")
REACH_THE_PIPE_S = 240           # nine cold starts of Prefect at once on a busy 2-core machine
STOPPED_WITHIN_S = 60
HANDLER_RUNS_WITHIN_S = 2        # well under the 10 s a stopped command waits for its threads
READER_IN_ITS_READ_S = 2


@dataclass
class Held:
    """`caseforge ARGS` in its own process, its stderr in a file, held part-way on `pipe` (the input file
    `content` stands for)."""

    args: list[str]
    db: Path
    pipe: Path
    content: str
    folder: Path
    process: subprocess.Popen | None = None
    writer: int | None = None
    stderr_before_signal: int = 0
    signalled_at: float = 0.0
    exit_code: int | None = None
    stopped_after_s: float | None = None
    rerun: subprocess.CompletedProcess | None = None
    notes: list[str] = field(default_factory=list)
    program: list[str] = field(default_factory=lambda: [sys.executable, "-c", CASEFORGE])

    @property
    def stderr_path(self) -> Path:
        return self.folder / "stderr.txt"

    def start(self, env: dict) -> None:
        self.process = subprocess.Popen([*self.program, *self.args], env=env,
                                        stdout=subprocess.DEVNULL, stderr=self.stderr_path.open("wb"))

    def wait_for_the_pipe(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"caseforge {self.args[:2]} ended ({self.process.returncode}) before reading its pipe:\n"
                            + self.stderr()[-3000:])
            try:
                self.writer = os.open(self.pipe, os.O_WRONLY | os.O_NONBLOCK)     # once a reader has it open
                return
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
            time.sleep(0.1)
        self.process.kill()
        pytest.fail(f"caseforge {self.args[:2]} did not reach its pipe within {REACH_THE_PIPE_S} s:\n"
                    + self.stderr()[-3000:])

    def signal(self, signum: int) -> None:
        self.stderr_before_signal = len(self.stderr_path.read_bytes())
        self.signalled_at = time.monotonic()
        self.process.send_signal(signum)

    def wait_stopped(self) -> None:
        try:
            self.exit_code = self.process.wait(timeout=max(1.0, self.signalled_at + STOPPED_WITHIN_S - time.monotonic()))
            self.stopped_after_s = time.monotonic() - self.signalled_at
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGUSR1)       # its threads' stacks to its stderr, then SIGKILL
            time.sleep(2)
            self.process.kill()
            self.exit_code = self.process.wait(timeout=30)
            self.notes.append(f"still running {STOPPED_WITHIN_S} s after the signal (killed; stacks in "
                              f"{self.stderr_path})")
        finally:
            self.release()

    def release(self) -> None:
        """The pipe's write end closed: a reader still on it reads the end of the file and goes on."""
        if self.writer is not None:
            os.close(self.writer)
            self.writer = None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def said_after_the_signal(self) -> list[str]:
        text = self.stderr_path.read_bytes()[self.stderr_before_signal:].decode(errors="replace")
        return [line for line in text.splitlines() if line.strip()]


def _pipe_at(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def held_command(command: str, folder: Path) -> Held:
    """The command part-way: HUDOC replay pages (the second a pipe), a CaseGen file (a pipe), and the nightly
    on one source whose samples are those HUDOC pages."""
    folder.mkdir(parents=True)
    db = folder / "cf.duckdb"
    if command == "builder":
        pipe = _pipe_at(folder / "items" / "casegen.jsonl")
        return Held(["build", "casegen", "--from-file", str(pipe), "--db", str(db)], db, pipe,
                    CASEGEN_ITEMS.read_text(encoding="utf-8"), folder)
    pages = folder / "samples" / "hudoc" if command == "nightly" else folder / "hudoc"
    pages.mkdir(parents=True)
    (pages / "a-page.json").write_text(EMPTY_PAGE)
    pipe = _pipe_at(pages / "b-page.json")
    if command == "ingest":
        return Held(["ingest", "hudoc", "--from-dir", str(pages), "--db", str(db)], db, pipe, EMPTY_PAGE, folder)
    return Held(["run", "nightly", "--from-samples", "--samples", str(folder / "samples"), "--sources", "hudoc",
                 "--db", str(db), "--release-dir", str(folder / "releases")], db, pipe, EMPTY_PAGE, folder)


STACKS_ON_SIGUSR1 = """
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, all_threads=True)     # where a command that does not stop is stuck
"""

CASEFORGE = STACKS_ON_SIGUSR1 + """
import sys
from caseforge.cli import main
sys.exit(main())        # no argv: as the `caseforge` command itself (it leaves when stuck)
"""

PREFECT_CANCELS = STACKS_ON_SIGUSR1 + """
import sys
from prefect._internal import control_listener

control_listener.get_intent = lambda: "cancel"    # as when Prefect's runner announced a cancellation
from caseforge.cli import main
sys.exit(main())
"""

SIGTERM_IN_A_FINALISER = """
import os, signal, sys
from caseforge.cli import main
from caseforge.tasks.hudoc import ingest

LOST = []

class TransportDouble:
    '''Stands in for asyncio's transport: the SIGTERM arrives while its finaliser runs, so the exception the
    signal handler raises is lost to Python ("Exception ignored in ...", and the program goes on).'''
    def __del__(self):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(100000))
        except BaseException as exc:
            LOST.append(type(exc).__name__)
            raise

parse = ingest.parse_metadata_payload
def parse_after_a_finaliser(*args):
    TransportDouble()
    return parse(*args)
ingest.parse_metadata_payload = parse_after_a_finaliser
code = main(sys.argv[1:])
print("lost in a finaliser:", LOST, file=sys.stderr)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def stopped(shared_server_cli_env, tmp_path_factory) -> dict:
    """Every command held part-way and stopped each way, all at once; then each SIGKILLed one run again with
    its pipe replaced by the file it stood for. Also an ingest whose SIGTERM lands in a finaliser."""
    root = tmp_path_factory.mktemp("kills")
    env = shared_server_cli_env
    held = {(command, how): held_command(command, root / f"{command}-{how}") for command in COMMANDS for how in SIGNALS}
    held[("ingest", "cancellation")] = held_command("ingest", root / "ingest-cancellation")
    held[("ingest", "cancellation")].program = [sys.executable, "-c", PREFECT_CANCELS]
    finaliser_pages = root / "finaliser" / "hudoc"
    finaliser_pages.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (finaliser_pages / f"{name}-page.json").write_text(EMPTY_PAGE)
    finaliser = subprocess.Popen([sys.executable, "-c", SIGTERM_IN_A_FINALISER, "ingest", "hudoc", "--from-dir",
                                  str(finaliser_pages), "--db", str(root / "finaliser" / "cf.duckdb")], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for one in held.values():
            one.start(env)
        deadline = time.monotonic() + REACH_THE_PIPE_S
        for one in held.values():
            one.wait_for_the_pipe(deadline)
        # Each reader's open() of its pipe returned when the write end opened; it then blocks in read(). Python
        # runs a signal's handler at its next bytecode, or when a blocking call is interrupted: a signal landing
        # between that open() and that read() would wait for the read to end (never, here). Signalled once every
        # reader is in its read.
        time.sleep(READER_IN_ITS_READ_S)
        for (command, how), one in held.items():
            one.signal(SIGNALS.get(how, (signal.SIGTERM,))[0])
            if (command, how) == ("nightly", "SIGINT"):
                # its source, in another thread, goes on to its next step and stops there; the nightly stopped
                # by SIGTERM leaves that thread stuck: the command leaves it. Released only once the main
                # thread has had time to run the signal's handler: woken first, the source thread would finish
                # its step (truthfully "done") before the process knew of the signal.
                time.sleep(HANDLER_RUNS_WITHIN_S)
                one.release()
        killed = [one for (_, how), one in held.items() if how == "SIGKILL"]
        reruns = []
        for one in killed:                    # run again at once, while the others wind down
            one.wait_stopped()
            one.pipe.unlink()
            one.pipe.write_text(one.content)
            reruns.append(subprocess.Popen([sys.executable, "-m", "caseforge", *one.args], env=env,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for one in held.values():
            if one.exit_code is None:
                one.wait_stopped()
        for one, process in zip(killed, reruns):
            out, err = process.communicate(timeout=300)
            one.rerun = subprocess.CompletedProcess(process.args, process.returncode, out, err)
        finaliser_err = finaliser.communicate(timeout=300)[1]
    finally:
        for process in [finaliser] + [one.process for one in held.values() if one.process is not None]:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
    return {"held": held, "finaliser": (root / "finaliser" / "cf.duckdb", finaliser.returncode, finaliser_err)}


def runs(db: Path) -> list[dict]:
    con = connect(db)
    try:
        cursor = con.execute("SELECT run_id, kind, target, status, message, finished_at FROM ops.runs ORDER BY run_id")
        return [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]
    finally:
        con.close()


def stages(db: Path, run_id: int) -> dict[str, dict]:
    con = connect(db)
    try:
        cursor = con.execute("SELECT stage, name, status, message FROM ops.nightly_stages WHERE run_id = ?", [run_id])
        return {f"{r[0]} {r[1]}": {"status": r[2], "message": r[3]} for r in cursor.fetchall()}
    finally:
        con.close()


def status_shown(db: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["status", "--format", "json", "--db", str(db)]) == 0
    return json.loads(capsys.readouterr().out)


def debris(folder: Path) -> list[str]:
    """What a killed run may leave beside the warehouse that a later successful run must have removed: staging
    files and folders (`.NAME.<id>.tmp`, `.NAME.<pid>.<tid>.parquet.tmp`), open-run files (`NAME-runs/open/`)."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")
                  if ".tmp" in path.name or (path.is_file() and path.parent.name == "open"
                                              and path.parent.parent.name.endswith("-runs")))


async def _run_states(api_url: str, db: Path) -> dict[str, object]:
    from prefect.client.orchestration import PrefectClient
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async with PrefectClient(api_url) as client:
        every = await client.read_flow_runs(limit=200)
        flow_runs = [run for run in every if (run.parameters or {}).get("db") == str(db)]
        ids = [run.id for run in flow_runs]
        task_runs = (await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
                     if ids else [])
        return {**{f"flow {run.name}": run.state for run in flow_runs},
                **{f"task {t.name}": t.state for t in task_runs}}


def prefect_states(env: dict, db: Path) -> dict[str, object]:
    """The state in Prefect of each flow run of the command's warehouse (subflows included: each is given its
    --db) and of their task runs. Not by name: a run is named for its run id (`nightly-1`, `nightly-1
    source-hudoc`), the same in every warehouse that has one."""
    server = json.loads((Path(env["PREFECT_HOME"]) / "caseforge-server" / "server.json").read_text())
    with ThreadPoolExecutor(1) as thread:     # a loop of its own, whatever runs on this thread (Playwright's does)
        return thread.submit(asyncio.run, _run_states(server["api_url"], db)).result()


EXPECTED_RUN = {"ingest": ("ingest", "hudoc"), "builder": ("build", "casegen")}


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_stopped_part_way_ends_promptly_as_interrupted_everywhere(command, how, stopped,
                                                                           shared_server_cli_env, capsys):
    one = stopped["held"][(command, how)]
    recorded = runs(one.db)
    assert [r for r in recorded if r["status"] != "interrupted"] == [], (recorded, one.stderr()[-3000:])
    assert all(how in r["message"] and r["finished_at"] is not None for r in recorded), recorded
    if command == "nightly":
        by_kind = {r["kind"]: r for r in recorded}
        assert set(by_kind) == {"nightly", "ingest"}, recorded          # the nightly and the source it was running
        nightly_stages = stages(one.db, by_kind["nightly"]["run_id"])
        assert nightly_stages["source hudoc"]["status"] == "interrupted", nightly_stages
        assert {"builder casefacts", "export scotus"} <= set(nightly_stages)   # not started: said so, not left out
        assert {s["status"] for s in nightly_stages.values()} == {"interrupted"}, nightly_stages
    else:
        assert [(r["kind"], r["target"]) for r in recorded] == [EXPECTED_RUN[command]], recorded

    shown = status_shown(one.db, capsys)
    assert {r["status"] for r in shown["runs"]} == {"interrupted"}
    assert {s["status"] for s in shown["last_nightly_stages"]} <= {"interrupted"}
    in_prefect = prefect_states(shared_server_cli_env, one.db)
    flows = {name: state for name, state in in_prefect.items() if name.startswith("flow ")}
    assert flows and all(s.is_cancelled() and s.name == "Interrupted" and how in s.message for s in flows.values()), \
        (flows, one.stderr()[-3000:])
    assert not [name for name, state in in_prefect.items() if state.is_running()], in_prefect   # (a step that
    #                                                   finished before the signal reached its thread is Completed)

    assert one.notes == [] and one.exit_code == SIGNALS[how][1], (one.notes, one.exit_code, one.stderr()[-3000:])
    said = one.said_after_the_signal()
    assert len(said) == 1 and said[0].startswith(f"caseforge: interrupted by {how}"), one.stderr()[-3000:]
    if (command, how) == ("nightly", "SIGTERM"):      # its source's thread never comes back from its read
        assert said[0].endswith("work still running after 10 s was abandoned"), said
    assert "Crash detected" not in one.stderr() and "Traceback" not in one.stderr()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_killed_then_run_again_leaves_a_true_record_and_no_debris(command, stopped):
    one = stopped["held"][(command, "SIGKILL")]
    assert one.exit_code == -signal.SIGKILL
    assert one.rerun.returncode == 0, one.rerun.stderr[-3000:]
    recorded = runs(one.db)
    rerun_kind = "nightly" if command == "nightly" else EXPECTED_RUN[command][0]
    last = max(r["run_id"] for r in recorded if r["kind"] == rerun_kind)
    killed = [r for r in recorded if r["run_id"] < last and r["kind"] == rerun_kind or
              command == "nightly" and r["kind"] == "ingest" and r["run_id"] < last]
    assert killed and all(r["status"] == "interrupted" and "gone" in r["message"] for r in killed), recorded
    assert not any(s["status"] == "succeeded" for r in killed for s in stages(one.db, r["run_id"]).values())
    assert {r["status"] for r in recorded if r["run_id"] >= last} == {"succeeded"}, recorded
    if command == "nightly":
        assert {s["status"] for s in stages(one.db, last).values()} <= {"succeeded", "skipped"}
    assert debris(one.folder) == []


def test_a_sigterm_landing_in_a_finaliser_still_stops_the_run(stopped):
    db, exit_code, stderr = stopped["finaliser"]
    assert "lost in a finaliser: ['TerminationSignal']" in stderr        # Python did lose the signal's exception
    assert "Exception ignored" not in stderr and "Traceback" not in stderr   # and does not print it
    [run] = runs(db)
    assert run["status"] == "interrupted" and "SIGTERM" in run["message"], (run, stderr[-3000:])
    assert exit_code == 143, stderr[-3000:]


def test_an_ingest_cancelled_by_prefect_is_cancelled_everywhere(stopped, shared_server_cli_env):
    one = stopped["held"][("ingest", "cancellation")]
    [run] = runs(one.db)
    assert run["status"] == "cancelled" and "Prefect cancellation" in run["message"], (run, one.stderr()[-3000:])
    [state] = [s for name, s in prefect_states(shared_server_cli_env, one.db).items()
               if name.startswith("flow ")]
    assert state.is_cancelled() and state.name == "Cancelled", state
    assert one.exit_code == 143 and one.said_after_the_signal() == [
        f"caseforge: cancelled by a Prefect cancellation (SIGTERM); run {run['run_id']} recorded as cancelled"]
