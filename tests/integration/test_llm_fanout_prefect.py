"""Fan-out for real, on loopback, with nothing shared but the Prefect API and an object store: a real `prefect
server`, a real S3-compatible server (SeaweedFS, tests/s3_server.py), deployments/setup.sh run as a user runs it
(GPU pool of type kubernetes from deployments/gpu/k8s-job-template.yaml, the zombie-run automation), a process
pool standing in for the GPU pool with the llm-shard deployment from deployments/prefect.yaml, two process
workers each started in an empty folder of its own with a HOME of its own (no settings file, no project
folder: only the API URL, the store's credentials and its own model endpoint), one `prefect worker start`, one
the warm worker docs/deploying.md recommends (caseforge.runtime.warm_worker), and a real pipeline step
(CaseFacts' factuality check, over 200 claims in 4 shards through s3://) whose `openai` backend talks to a
scripted server double (a named test double: the point is the data plane).

The step runs in one process, then as the orchestrator of a fan-out. Mid-way through the fan-out, the worker
that has finished one shard and is answering its second is SIGKILLed with its flow-run process (nobody tells
the server). Its flow-run heartbeats stop; the zombie automation setup.sh made marks the run Crashed; the
orchestrator submits the shard again, the other worker resumes it from the parts in the store; the step ends
with exactly the in-process run's calls and rows. Before that, the warm worker alone answers shard runs of its
own queue: run after run in one warm process, which a cancellation or a killed launcher ends.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from doc_pages import read
from oyez_subset import link_oyez_subset
from prefect_runs import CI_ARTIFACTS

from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply

# a hang guard, not a budget: the fan-out with a worker killed took 168-201 s in CI
pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(900)]

POOL = "caseforge-test-gpu"           # stands in for caseforge-gpu
CASES = 30                            # 21 of them have facts: x 10 claims = 210 requests
CLAIMS_PER_CASE = 10
SHARDS = 4
CONCURRENCY, BATCH_SIZE = 2, 4        # per worker; a kill loses at most one batch (caseforge.llm.jobs._save_every)
DELAY_S = 0.1                         # per answer: a shard of ~50 takes a few seconds
SLOW_DELAY_S = 1.0                    # the answers of the shard about to be killed: time to kill it mid-way
HEARTBEAT_S = 30                      # Prefect's minimum; the automation's window is three of them
K8S_STORE = "s3://caseforge-shards/prod"   # the kubernetes pool's `store`: the pods' CASEFORGE_FANOUT_STORE
STEP_SCRIPT = Path(__file__).resolve().parent / "fanout_step.py"
PROJECT_ROOT = STEP_SCRIPT.parent.parent.parent


class FactualityScript:
    """The double's script: a fixed verdict per claim (from its hash), after a delay; remembers every claim
    asked, in order. The echo prompt of the warm worker's test gets {"value": n}, after `echo_delay_s`."""

    def __init__(self):
        self.asked: list[str] = []
        self.slow: set[str] = set()
        self.echo_delay_s = 0.0

    def __call__(self, body: dict, call_number: int):
        echo = re.search(r"Say the number (-?\d+)", body["messages"][-1]["content"])
        if echo:
            return chat_reply(json.dumps({"value": int(echo.group(1))}), delay_s=self.echo_delay_s)
        claim = claim_of(body)
        self.asked.append(claim)
        supported = int(hashlib.sha256(claim.encode()).hexdigest()[:2], 16) % 4 != 0
        answer = {"supported": supported,
                  "reason": "the summary says so" if supported else "the summary does not say that"}
        return chat_reply(json.dumps(answer), delay_s=SLOW_DELAY_S if claim in self.slow else DELAY_S)


def claim_of(request: dict) -> str:
    return re.search(r"STATEMENT: (.*)", request["messages"][-1]["content"]).group(1).strip()


# What the suite's other tests write while this one runs on another worker: Label Studio writes its version file
# into .venv-review when it starts, and the browser tests save their screenshots under out/ci-artifacts (both seen
# when Label Studio's group ran beside this test); .venv-harness is an environment like them.
NOT_THE_CHECKOUTS = (".git", ".venv", ".venv-review", ".venv-harness", str(CI_ARTIFACTS.relative_to(PROJECT_ROOT)))


def project_files(root: Path = PROJECT_ROOT) -> dict[str, tuple[int, int]]:
    """Every file of the checkout the orchestrator runs from (the virtual environments and the suite's artifacts
    folder aside): path → (size, mtime)."""
    found = {}
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(relative.is_relative_to(folder) for folder in NOT_THE_CHECKOUTS) or not path.is_file():
            continue
        stat = path.stat()
        found[str(relative)] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_the_checkouts_files_are_its_own_not_its_environments_or_the_suites_artifacts(tmp_path):
    for name in ("caseforge/a.py", "out/report.md", ".venv-review/lib/label_studio/core/version_.py",
                 ".venv-harness/lib/x.pyc", "out/ci-artifacts/review-labelling.png", ".venv/bin/python"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert sorted(project_files(tmp_path)) == ["caseforge/a.py", "out/report.md"]


@pytest.fixture(scope="module")
def setup_sh(prefect_server):
    """deployments/setup.sh as docs/deploying.md says to run it, with the GPU pool of type kubernetes and the pods'
    shard store, and neither the venv's prefect nor its python on PATH: it must find them itself."""
    env = {k: v for k, v in prefect_server.env.items() if k not in ("PREFECT", "PYTHON", "VIRTUAL_ENV")}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", GPU_POOL_TYPE="kubernetes", CASEFORGE_FANOUT_STORE=K8S_STORE)
    # as on a server that has no GPU pool yet: the shared server may hold one another module's setup.sh made (of the
    # default type, docker), and a work pool's type cannot change
    httpx.delete(f"{prefect_server.url}/api/work_pools/caseforge-gpu", timeout=30)     # 404 when there is none
    done = subprocess.run(["bash", "deployments/setup.sh"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_setup_sh_finds_the_venvs_prefect_and_makes_the_kubernetes_pool_with_the_store_and_no_shard_volume(setup_sh,
                                                                                               prefect_server):
    pool = prefect_server.api("GET", "/work_pools/caseforge-gpu").json()
    assert pool["type"] == "kubernetes", setup_sh
    template = pool["base_job_template"]
    container = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["containers"][0]
    volumes = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["models", "dshm"]           # no shard volume
    assert all(m["name"] != "shards" for m in container["volumeMounts"])
    assert container["envFrom"] == [{"secretRef": {"name": "{{ store_secret }}"}}]
    assert template["variables"]["properties"]["store_secret"]["default"] == "caseforge-store"
    assert container["env"] == [{"name": "CASEFORGE_FANOUT_STORE", "value": "{{ store }}"}]
    assert template["variables"]["properties"]["store"]["default"] == K8S_STORE
    automations = prefect_server.api("POST", "/automations/filter", json={}).json()
    zombie = next(a for a in automations if a["name"] == "caseforge-crash-zombie-shard-runs")
    assert zombie["trigger"]["posture"] == "Proactive" and zombie["trigger"]["within"] >= 3 * HEARTBEAT_S
    assert zombie["actions"][0]["type"] == "change-flow-run-state" and zombie["actions"][0]["state"] == "CRASHED"


def documented_gpu_worker() -> str:
    """docs/deploying.md's `prefect worker start` for the GPU pool, as written (step 4 of Deploying)."""
    found = re.findall(r"`(prefect worker start --pool caseforge-gpu[^`]*)`", read("docs/deploying.md"))
    assert found and all("--limit" in command for command in found), found   # never every shard at once
    [command] = [command for command in found if command.endswith("--limit 1")]    # one per GPU
    return command


def start_worker(server, name: str, home: Path, extra_env: dict, warm: bool = False,
                 queues: tuple[str, ...] = ("default",)) -> subprocess.Popen:
    """A process worker in an empty folder with a HOME of its own: it gets the API URL, the store's
    credentials and its model endpoint, nothing of the orchestrator's (no CASEFORGE_* settings, no project
    folder as its working directory). `warm`: docs/deploying.md's GPU worker, caseforge.runtime.warm_worker."""
    for folder in (home / "home", home / "tmp"):
        folder.mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home / "home"), "TMPDIR": str(home / "tmp"),
           "LANG": "C.UTF-8", "PREFECT_API_URL": server.env["PREFECT_API_URL"],
           "PREFECT_HOME": str(home / "home" / ".prefect"), "DO_NOT_TRACK": "1",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_WORKER_QUERY_SECONDS": "1",
           "PREFECT_LOGGING_LEVEL": "INFO", "PYTHONDONTWRITEBYTECODE": "1", **extra_env}
    log = (server.home / f"{name}.log").open("w")
    command = ([sys.executable, "-m", "caseforge.runtime.warm_worker", "--pool", POOL] if warm else
               [sys.executable, "-m", *documented_gpu_worker().replace("caseforge-gpu", POOL).split()])
    process = subprocess.Popen([*command, "--name", name, *(f"--work-queue={q}" for q in queues)],
                               cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server.processes.append(process)
    return process


@pytest.fixture(scope="module")
def gpu_pool(prefect_server, setup_sh, deployment_file, s3_server, tmp_path_factory):
    """The test pool with the llm-shard deployment of deployments/prefect.yaml (its own pull steps and job
    environment kept), once as llm-shard/gpu and once as llm-shard/warm on the pool's queue `warm`, and two
    process workers (one flow run at a time each, polling every second): gpu-worker-a is `prefect worker start`,
    gpu-worker-b the warm worker docs/deploying.md recommends, which alone also takes runs of the queue `warm`;
    stopped when the module ends. Yields (server, workers, the workers' folders, the model double, its script)."""
    server = prefect_server
    work = tmp_path_factory.mktemp("fanout_deploy")
    started = time.monotonic()
    prefect_file = work / "prefect.yaml"
    deployment_file(prefect_file, "gpu", POOL)
    real = next(d for d in yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())["deployments"]
                if d["name"] == "gpu")
    config = yaml.safe_load(prefect_file.read_text())
    job = {"env": real["work_pool"]["job_variables"]["env"]}
    config["deployments"][0].update(pull=real["pull"], work_pool={"name": POOL, "job_variables": job})
    config["deployments"].append({**config["deployments"][0], "name": "warm", "work_pool": {
        "name": POOL, "work_queue_name": "warm", "job_variables": job}})
    prefect_file.write_text(yaml.safe_dump(config, sort_keys=False))
    assert real["entrypoint"] == "caseforge.flows.llm_shard.llm_shard_flow" and real["pull"] == []
    server.prefect("work-pool", "create", POOL, "--type", "process")
    server.prefect("deploy", "--prefect-file", str(prefect_file), "--all", "--no-prompt")
    script = FactualityScript()
    double = ScriptedOpenAIServerDouble(script, models=("double-model", "double-validator")).start()
    workers, folders = {}, {}
    for name, warm, queues in (("gpu-worker-a", False, ("default",)), ("gpu-worker-b", True, ("default", "warm"))):
        folders[name] = work / name
        workers[name] = start_worker(server, name, folders[name], {
            **s3_server.env(), "CASEFORGE_OPENAI_BASE_URL": double.base_url}, warm, queues)
    deadline = time.monotonic() + 180
    while True:
        online = {w["name"] for w in server.api("POST", f"/work_pools/{POOL}/workers/filter", json={}).json()
                  if w.get("status") == "ONLINE"}
        if set(workers) <= online and "ready" in server.log("gpu-worker-b"):
            break
        dead = [name for name, process in workers.items() if process.poll() is not None]
        if dead or time.monotonic() > deadline:
            pytest.fail(f"workers not ready ({dead} exited):\n" + "\n".join(server.log(n) for n in workers))
        time.sleep(0.5)
    server.timings["fanout_deploy_and_workers_s"] = round(time.monotonic() - started, 1)
    try:
        yield server, workers, folders, double, script
    finally:
        double.stop()
        for process in workers.values():
            if process.poll() is None:
                server.stop_process(process)


def test_a_shard_run_that_crashes_shows_its_workers_reason_to_the_orchestrator(gpu_pool):
    """A shard run whose process cannot even load the flow (the code is not where the deployment says) crashes
    with "Process exited with status code: 1"; what the orchestrator reads back through the API names why."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from caseforge.flows.llm_shard import PrefectShardRuns
    from caseforge.llm import fanout

    from prefect.client.orchestration import get_client

    server = gpu_pool[0]
    with temporary_settings({PREFECT_API_URL: server.env["PREFECT_API_URL"]}):
        with get_client(sync_client=True) as client:
            flow_id = client.create_flow_from_name("llm-shard-misplaced")
            client.create_deployment(flow_id=flow_id, name="gpu", work_pool_name=POOL, pull_steps=[],
                                     entrypoint="caseforge.flows.not_installed_here.llm_shard_flow")
        runs = PrefectShardRuns()
        run_id = runs.submit("llm-shard-misplaced/gpu", POOL, {}, "misplaced shard")
        deadline = time.monotonic() + 120
        while (state := runs.state(run_id))[0] != fanout.FAILED:
            assert time.monotonic() < deadline, state
            time.sleep(1)
    kind, message = state
    assert "No module named 'caseforge.flows.not_installed_here'" in message, message


# --- warm starts (caseforge.runtime.warm_worker) ---------------------------------------------------------------------
def submit_shard(server, store_folder: Path, numbers: range, name: str) -> tuple[str, "object"]:
    """A shard of echo requests written to a folder store, submitted as a run of llm-shard/warm."""
    sys.path.insert(0, str(PROJECT_ROOT / "tests" / "unit"))
    from echo_prompts import Number, requests_for
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from caseforge.llm.shards import write_request_shards
    from caseforge.store import open_store
    from caseforge.warehouse.connection import connect

    store = open_store(store_folder / name)
    [shard] = write_request_shards(connect(":memory:"), requests_for(numbers), "double-model", Number, 1, store)
    with temporary_settings({PREFECT_API_URL: server.env["PREFECT_API_URL"]}):
        run = run_deployment("llm-shard/warm", timeout=0, as_subflow=False, flow_run_name=name, parameters={
            "step": "echo", "store": store.url, "shard": shard.name, "backend": "openai", "model": "double-model",
            "options": {"structured": "none", "concurrency": 2, "batch_size": 2}, "max_attempts": 1})
    return str(run.id), shard


def wait_final(server, run_id: str, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        run = server.api("GET", f"/flow_runs/{run_id}").json()
        if run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return run
        assert time.monotonic() < deadline, (run["state_type"], server.log("gpu-worker-b"))
        time.sleep(0.5)


def children_of(pid: int) -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and parent_of(int(p.name)) == pid}


def ready_warm_process(server, worker: subprocess.Popen, timeout_s: float = 180) -> int:
    """The pid of the worker's warm process once it says it is ready. A failed run ends the warm process and the
    worker starts another, which takes its imports' time: a run that comes before it is run cold, by design."""
    deadline = time.monotonic() + timeout_s
    while True:
        said = re.findall(r"warm process (\d+) ready", (server.home / "gpu-worker-b.log").read_text(errors="replace"))
        if said and alive(int(said[-1])) and parent_of(int(said[-1])) == worker.pid:
            return int(said[-1])
        assert time.monotonic() < deadline, server.log("gpu-worker-b")
        time.sleep(0.3)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_warm_worker_runs_shard_after_shard_in_one_warm_process_and_replaces_it_after_a_kill(gpu_pool,
                                                                                                tmp_path):
    """Each shard run is a launcher process the worker starts (its infrastructure pid) that hands the run to the
    worker's warm process: the answers come from that one process, run after run. A cancelled run and a killed
    launcher end the warm process with them (nothing goes on answering), and the next run gets a new one."""
    from caseforge.llm.shards import read_rows

    server, workers, _folders, _double, script = gpu_pool
    worker, store = workers["gpu-worker-b"], tmp_path / "store"     # the warm worker (runs before the kill test)
    assert worker.poll() is None, "the warm worker is gone: this test runs before the one that kills a worker"

    def answered_by(shard) -> dict:
        return read_rows(shard.store.get(shard.answers), shard.answers)[1]

    ready = ready_warm_process(server, worker)    # the crash test's failed run may have ended the one before
    first, second = (submit_shard(server, store, range(n, n + 6), f"warm-{n}") for n in (0, 10))
    pids = []
    for run_id, shard in (first, second):
        run = wait_final(server, run_id)
        assert run["state_type"] == "COMPLETED", server.log("gpu-worker-b")
        who = answered_by(shard)
        assert who["worker"] == "gpu-worker-b" and who["ppid"] == worker.pid    # the warm process, the worker's child
        assert who["pid"] != int(run["infrastructure_pid"].rsplit(":", 1)[-1])  # not the launcher
        assert read_rows(shard.store.get(shard.answers), "")[0].column("status").to_pylist() == ["ok"] * 6
        pids.append(who["pid"])
    assert pids[0] == pids[1] == ready
    warm = pids[0]

    script.echo_delay_s = 2.0                          # a run still answering when it is cancelled
    run_id, shard = submit_shard(server, store, range(20, 40), "warm-cancelled")
    deadline = time.monotonic() + 120
    while server.api("GET", f"/flow_runs/{run_id}").json()["state_type"] != "RUNNING":
        assert time.monotonic() < deadline, server.log("gpu-worker-b")
        time.sleep(0.3)
    server.api("POST", f"/flow_runs/{run_id}/set_state",
               json={"state": {"type": "CANCELLING", "message": "test cancels"}, "force": True})
    assert wait_final(server, run_id)["state_type"] == "CANCELLED", server.log("gpu-worker-b")
    deadline = time.monotonic() + 30
    while alive(warm):                               # the warm process that ran it is gone
        assert time.monotonic() < deadline, "the warm process outlived its cancelled run"
        time.sleep(0.3)
    assert not shard.has_answers()

    ready_warm_process(server, worker)     # its successor, after its imports: a run sooner than that is run cold
    run_id, shard = submit_shard(server, store, range(40, 60), "warm-killed")
    deadline = time.monotonic() + 120
    while (run := server.api("GET", f"/flow_runs/{run_id}").json())["state_type"] != "RUNNING":
        assert time.monotonic() < deadline, server.log("gpu-worker-b")
        time.sleep(0.3)
    launcher = int(run["infrastructure_pid"].rsplit(":", 1)[-1])
    [warm] = children_of(worker.pid) - {launcher}
    os.kill(launcher, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(warm):
        assert time.monotonic() < deadline, "the warm process went on after its launcher was killed"
        time.sleep(0.3)
    assert wait_final(server, run_id)["state_type"] == "CRASHED"
    assert not shard.has_answers()

    script.echo_delay_s = 0.0
    run_id, shard = submit_shard(server, store, range(60, 64), "warm-after")
    assert wait_final(server, run_id)["state_type"] == "COMPLETED", server.log("gpu-worker-b")
    assert answered_by(shard)["pid"] not in (pids[0], warm)


def run_step(db: Path, base_url: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(STEP_SCRIPT), "--db", str(db), "--base-url", base_url,
                             "--concurrency", str(CONCURRENCY), "--batch-size", str(BATCH_SIZE),
                             "--claims-per-case", str(CLAIMS_PER_CASE)], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen, timeout: float) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"the step failed:\n{err[-6000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_a_step_fanned_out_through_s3_equals_it_in_process_even_when_a_worker_dies(
        samples_dir, gpu_pool, s3_server, tmp_path):
    from caseforge.settings import load_settings
    from caseforge.tasks.oyez.ingest import refresh
    sys.path.insert(0, str(STEP_SCRIPT.parent))
    import fanout_step

    server, workers, folders, double, script = gpu_pool
    timings = {}
    started = time.monotonic()
    subset = link_oyez_subset(samples_dir, tmp_path / "samples", CASES, 1)
    assert refresh(load_settings(tmp_path / "base.duckdb"), from_dir=str(subset / "oyez" / "cases")).ok
    orchestrators = tmp_path / "orchestrator"
    orchestrators.mkdir()
    for name in ("alone.duckdb", "fanned.duckdb"):
        (orchestrators / name).write_bytes((tmp_path / "base.duckdb").read_bytes())
    timings["ingest_s"] = round(time.monotonic() - started, 1)

    prefix = f"e2e-{uuid.uuid4().hex[:8]}"
    config = orchestrators / "caseforge.toml"
    config.write_text(f"""[fanout]
pool = "{POOL}"
deployment = "llm-shard/gpu"
shards = {SHARDS}
min_shard_requests = {CASES * CLAIMS_PER_CASE // (2 * SHARDS)}
store = "s3://{s3_server.bucket}/{prefix}"
poll_s = 0.5
heartbeat_s = {HEARTBEAT_S}
stale_after_s = {5 * HEARTBEAT_S}
no_worker_timeout_s = 60
shard_timeout_s = 400
max_submissions = 3
""")
    started = time.monotonic()
    alone = fanout_step.run(str(orchestrators / "alone.duckdb"), double.base_url, concurrency=8,
                            claims_per_case=CLAIMS_PER_CASE, batch_size=BATCH_SIZE)
    timings["in_process_s"] = round(time.monotonic() - started, 1)
    claims = alone["claims"]
    assert alone["report"] is None and len(alone["rows"]) == claims >= 200
    script.asked.clear()
    double.reset()

    before = project_files()
    started = time.monotonic()
    env = {**server.env, **s3_server.env(), "CASEFORGE_CONFIG": str(config), "PYTHONDONTWRITEBYTECODE": "1"}
    orchestrator = run_step(orchestrators / "fanned.duckdb", double.base_url, env)
    killed = watch_and_kill_one_worker(orchestrator, s3_server, prefix, script, server, workers, deadline_s=300)
    fanned = finished(orchestrator, 300)
    timings["fan_out_s"] = round(time.monotonic() - started, 1)
    asked = list(script.asked)

    # the same calls (identity, step, backend, model, status, parsed, raw answer, error, attempts) and rows
    assert fanned["calls"] == alone["calls"]
    assert fanned["rows"] == alone["rows"] and len(fanned["rows"]) == claims
    report = fanned["report"]
    shards = {s["number"]: s for s in report["shards"]}
    assert len(shards) == SHARDS and all(s["status"] == "merged" for s in shards.values())
    assert sum(len(s["identities"]) for s in shards.values()) == claims
    assert {s["worker"]["worker"] for s in shards.values() if s["worker"]} == set(workers), report
    # the killed shard: its run was marked Crashed, the shard submitted again, resumed by the other worker
    target = shards[killed["shard"]]
    assert [len(target["submissions"]), target["submissions"][-1]["outcome"]] == [2, "merged"], target
    assert target["submissions"][0]["run_id"] == killed["flow_run_id"]
    first_outcome = target["submissions"][0]["outcome"]
    assert "crashed" in first_outcome.lower() and "heartbeat" in first_outcome, first_outcome
    assert target["worker"]["worker"] != killed["worker"]
    assert all(len(s["submissions"]) == 1 for n, s in shards.items() if n != killed["shard"])
    # resumed from the parts in the store: the model server was asked at most one batch more than there are
    # requests, and no claim of another shard twice
    assert claims <= len(asked) <= claims + BATCH_SIZE, (len(asked), claims, killed)
    assert set(asked) == {c for c in asked} and len(set(asked)) == claims
    in_shard = killed["claims"]
    assert sum(1 for c in asked if c not in in_shard) == claims - len(in_shard)
    # nothing left in the store, nothing written under the orchestrator's folders by the workers
    left = s3_server.filesystem().find(f"{s3_server.bucket}/{prefix}", withdirs=False)
    assert [p for p in left if p.rstrip("/") != f"{s3_server.bucket}/{prefix}"] == []   # (weed lists the empty folder)
    assert sorted(p.name for p in orchestrators.rglob("*")) == ["alone.duckdb", "caseforge.toml", "fanned.duckdb"]
    after = project_files()
    assert {k for k in set(before) | set(after) if before.get(k) != after.get(k)} == set()
    for name, folder in folders.items():       # the workers did work in their own folders
        assert (folder / "home" / ".prefect").is_dir(), name
    # the server's view: the killed run crashed (by the automation), every other shard run completed
    states = final_states(server, [s["run_id"] for shard in shards.values() for s in shard["submissions"]])
    assert states.pop(killed["flow_run_id"]) == "CRASHED"
    assert set(states.values()) == {"COMPLETED"}
    timings.update(fan_out_seconds_in_step=fanned["seconds"], shard_seconds=[s["seconds"] for s in shards.values()],
                   where=report["seconds"], asked=len(asked), claims=claims)
    print("timings:", timings, server.timings)


def final_states(server, run_ids: list[str], timeout_s: float = 60) -> dict[str, str]:
    """The state types of these flow runs once all are final (a run's answers appear, and are merged, a moment
    before its flow run reports Completed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = {run_id: server.api("GET", f"/flow_runs/{run_id}").json()["state"]["type"] for run_id in run_ids}
        if set(states.values()) <= {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"} or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def parent_of(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(re.search(r"^PPid:\s+(\d+)", status, re.M).group(1))


def watch_and_kill_one_worker(orchestrator: subprocess.Popen, s3_server, prefix: str, script: FactualityScript,
                              server, workers: dict, deadline_s: float) -> dict:
    """Watch the shard runs; once a worker has finished a shard and is answering its second, slow that shard's
    answers down, let a few be answered and saved to the store, then SIGKILL the worker and its flow-run
    process. Returns what was killed."""
    pid_to_worker = {process.pid: name for name, process in workers.items()}
    done_by: dict[str, set[str]] = {}
    target = None
    fs = s3_server.filesystem()
    deadline = time.monotonic() + deadline_s
    while orchestrator.poll() is None:
        assert time.monotonic() < deadline, "the fan-out did not finish in time"
        runs = server.api("POST", "/flow_runs/filter", json={"flow_runs": {"tags": {"all_": ["llm-shard"]}}}).json()
        for run in runs:
            pid = int(str(run.get("infrastructure_pid") or "0").rsplit(":", 1)[-1] or 0)
            worker = pid_to_worker.get(parent_of(pid) or -1) if pid else None
            if worker is None:
                continue
            run["_worker"], run["_pid"] = worker, pid
            if run["state_type"] == "COMPLETED":
                done_by.setdefault(worker, set()).add(run["id"])
        if target is None:
            for run in runs:
                if run["state_type"] == "RUNNING" and run.get("_worker") and done_by.get(run["_worker"]):
                    shard = run["parameters"]["shard"]
                    requests = fs.cat(f"{s3_server.bucket}/{run['parameters']['store'].split('/', 3)[3]}/{shard}/"
                                      "requests.jsonl").decode()
                    claims = {claim_of(json.loads(line)) for line in requests.splitlines()}
                    script.slow |= claims
                    target = {"flow_run_id": run["id"], "worker": run["_worker"], "pid": run["_pid"],
                              "shard": int(shard.rsplit("-", 1)[1]), "claims": claims}
                    break
        if target is not None:
            arrived = sum(1 for c in list(script.asked) if c in target["claims"])
            if arrived >= 2 * BATCH_SIZE + CONCURRENCY:     # at least one batch answered and saved
                os.kill(target["pid"], signal.SIGKILL)
                os.killpg(workers[target["worker"]].pid, signal.SIGKILL)
                workers[target["worker"]].wait(timeout=10)
                script.slow.clear()
                return {**target, "asked_before_kill": arrived}
        time.sleep(0.2)
    out, err = orchestrator.communicate()
    pytest.fail(f"the fan-out ended before a worker could be killed mid-shard (done by: {done_by}):\n{err[-4000:]}")
