"""Fan-out for real, on loopback: a real `prefect server`, a process pool standing in for the GPU pool, the
llm-shard deployment from deployments/prefect.yaml on it, two process workers, and a real pipeline step
(CaseFacts' factuality check over 16 curated Oyez cases: 48 requests in 4 shards) whose `openai` backend talks
to a scripted server double that answers each claim after a delay.

The step runs twice: in one process, and as the orchestrator of a fan-out. Mid-way through the fan-out, the
worker that has already finished one shard and is answering its second is killed with its flow-run process
(SIGKILL: nobody tells the server). The fan-out must notice (its heartbeat stops), submit that shard again,
let the other worker resume it from the work file, and end with exactly the calls and stage rows of the
in-process run, every shard merged, no shard file left behind.
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
from pathlib import Path

import pytest
from oyez_subset import link_oyez_subset

from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply

pytestmark = [pytest.mark.samples, pytest.mark.slow]

POOL = "caseforge-test-gpu"           # stands in for caseforge-gpu
CASES = 16                            # x 3 claims: about 45 requests
SHARDS = 4
DELAY_S = 0.3                         # per answer; workers send 2 at a time, so a shard takes a few seconds
SLOW_DELAY_S = 1.0                    # the answers of the shard about to be killed: time to kill it mid-way
STALE_AFTER_S = 8
STEP_SCRIPT = Path(__file__).resolve().parent / "fanout_step.py"
PROJECT_ROOT = STEP_SCRIPT.parent.parent.parent


class FactualityScript:
    """The double's script: a fixed verdict per claim (from its hash), after a delay; remembers every claim
    asked, in order."""

    def __init__(self):
        self.asked: list[str] = []
        self.slow: set[str] = set()

    def __call__(self, body: dict, call_number: int):
        claim = re.search(r"STATEMENT: (.*)", body["messages"][-1]["content"]).group(1).strip()
        self.asked.append(claim)
        supported = int(hashlib.sha256(claim.encode()).hexdigest()[:2], 16) % 4 != 0
        answer = {"supported": supported,
                  "reason": "the summary says so" if supported else "the summary does not say that"}
        return chat_reply(json.dumps(answer), delay_s=SLOW_DELAY_S if claim in self.slow else DELAY_S)


def claim_of(request: dict) -> str:
    return re.search(r"STATEMENT: (.*)", request["messages"][-1]["content"]).group(1).strip()


@pytest.fixture(scope="module")
def gpu_pool(prefect_server, deployment_file, tmp_path_factory):
    """The test pool with the llm-shard deployment of deployments/prefect.yaml and two process workers (one
    flow run at a time each, polling every second). The workers are stopped when the module ends."""
    server = prefect_server
    work = tmp_path_factory.mktemp("fanout_deploy")
    started = time.monotonic()
    prefect_file = work / "prefect.yaml"
    deployment = deployment_file(prefect_file, "gpu", POOL)
    assert deployment["entrypoint"] == "flows/llm_shard.py:llm_shard_flow"
    server.prefect("work-pool", "create", POOL, "--type", "process")
    server.prefect("deploy", "--prefect-file", str(prefect_file), "--name", "gpu", "--no-prompt")
    workers = {}
    for name in ("gpu-worker-a", "gpu-worker-b"):
        workers[name] = server.background(name, "worker", "start", "--pool", POOL, "--type", "process",
                                          "--limit", "1", "--name", name,
                                          env={"PREFECT_WORKER_QUERY_SECONDS": "1"})
    deadline = time.monotonic() + 90
    while True:
        online = {w["name"] for w in server.api("POST", f"/work_pools/{POOL}/workers/filter", json={}).json()
                  if w.get("status") == "ONLINE"}
        if set(workers) <= online:
            break
        dead = [name for name, process in workers.items() if process.poll() is not None]
        if dead or time.monotonic() > deadline:
            pytest.fail(f"workers not online ({dead} exited):\n" + "\n".join(server.log(n) for n in workers))
        time.sleep(0.5)
    server.timings["fanout_deploy_and_workers_s"] = round(time.monotonic() - started, 1)
    try:
        yield server, workers
    finally:
        for process in workers.values():
            server.stop_process(process)


def run_step(db: Path, base_url: str, env: dict, concurrency: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(STEP_SCRIPT), "--db", str(db), "--base-url", base_url,
                             "--concurrency", str(concurrency)], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen, timeout: float) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"the step failed:\n{err[-6000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_a_step_fanned_out_to_two_workers_equals_it_in_process_even_when_a_worker_dies(
        samples_dir, gpu_pool, tmp_path):
    from caseforge.settings import load_settings
    from caseforge.tasks.oyez.ingest import refresh
    sys.path.insert(0, str(STEP_SCRIPT.parent))
    import fanout_step

    server, workers = gpu_pool
    timings = {}
    started = time.monotonic()
    subset = link_oyez_subset(samples_dir, tmp_path / "samples", CASES, 1)
    assert refresh(load_settings(tmp_path / "base.duckdb"), from_dir=str(subset / "oyez" / "cases")).ok
    for name in ("alone.duckdb", "fanned.duckdb"):
        (tmp_path / name).write_bytes((tmp_path / "base.duckdb").read_bytes())
    timings["ingest_s"] = round(time.monotonic() - started, 1)

    script = FactualityScript()
    shard_dir = tmp_path / "shards"
    config = tmp_path / "caseforge.toml"
    config.write_text(f"""[fanout]
pool = "{POOL}"
deployment = "llm-shard/gpu"
shards = {SHARDS}
shard_dir = "{shard_dir}"
poll_s = 0.5
heartbeat_s = 1
stale_after_s = {STALE_AFTER_S}
no_worker_timeout_s = 60
shard_timeout_s = 120
max_submissions = 3
""")
    with ScriptedOpenAIServerDouble(script) as double:
        started = time.monotonic()
        alone = fanout_step.run(str(tmp_path / "alone.duckdb"), double.base_url, concurrency=8)
        timings["in_process_s"] = round(time.monotonic() - started, 1)
        print("timings so far:", timings, server.timings)
        claims = alone["claims"]        # three per case the step reads (cases without facts are left out)
        assert alone["report"] is None and len(alone["rows"]) == claims > 3 * SHARDS * 2
        script.asked.clear()

        started = time.monotonic()
        orchestrator = run_step(tmp_path / "fanned.duckdb", double.base_url,
                                {**server.env, "CASEFORGE_CONFIG": str(config)}, concurrency=2)
        killed = watch_and_kill_one_worker(orchestrator, shard_dir, script, server, workers, deadline_s=150)
        fanned = finished(orchestrator, 60)
        timings["fan_out_s"] = round(time.monotonic() - started, 1)
        asked = list(script.asked)

    # the same calls (identity, step, backend, model, status, parsed, raw answer, error, attempts) and rows
    assert fanned["calls"] == alone["calls"]
    assert fanned["rows"] == alone["rows"] and len(fanned["rows"]) == claims
    assert fanned["counts"]["factuality.llm_calls"] >= claims

    report = fanned["report"]
    shards = {s["number"]: s for s in report["shards"]}
    assert len(shards) == SHARDS and all(s["status"] == "merged" for s in shards.values())
    assert sum(len(s["identities"]) for s in shards.values()) == claims
    # spread over the workers: the merged shards' answers came from both
    assert {s["worker"]["worker"] for s in shards.values()} == set(workers), report
    # the killed shard was submitted again, ran on the other worker, and was not lost
    target = shards[killed["shard"]]
    assert [len(target["submissions"]), target["submissions"][-1]["outcome"]] == [2, "merged"], target
    assert "no heartbeat" in target["submissions"][0]["outcome"]
    assert target["submissions"][0]["run_id"] == killed["flow_run_id"]
    assert target["worker"]["worker"] != killed["worker"]
    assert all(len(s["submissions"]) == 1 for n, s in shards.items() if n != killed["shard"])
    # resumed from the work file: what was answered and saved before the kill was not asked again
    in_shard = killed["claims"]
    asked_twice = sum(1 for c in asked if c in in_shard) - len(in_shard)
    assert {c for c in asked if c in in_shard} == in_shard
    # lost at most what the worker's job had not committed: its 2 requests in flight (concurrency 2) and the
    # answers of one unfinished write (the job commits every batch_size = 2 answers; a kill during that
    # commit loses both)
    assert 0 <= asked_twice <= 2 + 2 and asked_twice < killed["asked_before_kill"], (asked_twice, killed)
    assert sum(1 for c in asked if c not in in_shard) == claims - len(in_shard)   # no other shard ran twice
    # no shard file left behind
    assert [p for p in shard_dir.rglob("*") if p.is_file()] == []
    # the server's view: the killed run crashed, every other shard run completed, the report is an artifact
    states = final_states(server, [s["run_id"] for shard in shards.values() for s in shard["submissions"]])
    assert states.pop(killed["flow_run_id"]) == "CRASHED"
    assert set(states.values()) == {"COMPLETED"}
    artifacts = server.api("POST", "/artifacts/filter", json={"artifacts": {"key": {"any_": [
        "llm-fanout-casefacts-factuality"]}}}).json()
    assert artifacts
    table = artifacts[0]["data"]
    table = json.loads(table) if isinstance(table, str) else table
    assert sorted((row["shard"], row["submissions"]) for row in table) == sorted(
        (n, len(s["submissions"])) for n, s in shards.items())

    timings.update(fan_out_seconds_in_step=fanned["seconds"], shard_seconds=[s["seconds"] for s in shards.values()])
    print("timings:", timings, server.timings)


def final_states(server, run_ids: list[str], timeout_s: float = 60) -> dict[str, str]:
    """The state types of these flow runs once all are final (a run's Parquet shard appears, and is merged,
    a moment before its flow run reports Completed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = {run_id: server.api("GET", f"/flow_runs/{run_id}").json()["state"]["type"] for run_id in run_ids}
        if set(states.values()) <= {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"} or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def watch_and_kill_one_worker(orchestrator: subprocess.Popen, shard_dir: Path, script: FactualityScript, server,
                              workers: dict, deadline_s: float) -> dict:
    """Watch the shard heartbeats; once a worker has finished a shard and is answering its second, slow that
    shard's answers down, let a few be answered (and saved: the workers save every 2), then SIGKILL the worker
    and its flow-run process. Returns what was killed."""
    runs_of: dict[str, list[str]] = {}
    target = None
    deadline = time.monotonic() + deadline_s
    while orchestrator.poll() is None:
        assert time.monotonic() < deadline, "the fan-out did not finish in time"
        for path in shard_dir.glob("*/*/shard-*.heartbeat"):
            try:
                beat = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            seen = runs_of.setdefault(beat["worker"], [])
            if beat["flow_run_id"] not in seen:
                seen.append(beat["flow_run_id"])
            if target is None and len(seen) >= 2 and beat["flow_run_id"] == seen[-1]:
                request_file = path.with_name(path.name.replace(".heartbeat", ".requests.jsonl"))
                try:
                    claims = {claim_of(json.loads(line)) for line in request_file.read_text().splitlines()}
                except OSError:
                    continue
                script.slow |= claims
                target = {**beat, "shard": int(path.name[6:9]), "claims": claims}
        if target is not None:
            arrived = sum(1 for c in list(script.asked) if c in target["claims"])
            if arrived >= 6:            # at most 2 in flight: 4 or more answered and saved
                os.kill(target["pid"], signal.SIGKILL)
                os.killpg(workers[target["worker"]].pid, signal.SIGKILL)
                workers[target["worker"]].wait(timeout=10)
                script.slow.clear()
                return {**target, "asked_before_kill": arrived}
        time.sleep(0.1)
    out, err = orchestrator.communicate()
    pytest.fail(f"the fan-out ended before a worker could be killed mid-shard (runs per worker: {runs_of}):\n"
                f"{err[-4000:]}")
