"""The nightly on the samples in process and fanned out to GPU-pool workers, deployed the way docs/deploying.md
says, in one run: the ratio (target: fanned out within 1.5x of in process) and where the fanned-out time goes.

What it sets up, in a temporary folder, as a user would: a Prefect server on loopback (`prefect server start`),
a shard store (a bucket on a real SeaweedFS server on loopback, tests/s3_server.py, or a folder with --store
folder), `GPU_POOL_TYPE=process deployments/setup.sh` and `prefect deploy --prefect-file deployments/prefect.yaml
--name gpu`. Then `caseforge run nightly --from-samples` on fresh warehouses against that server, from the project
folder: once in process, then once per variant, each with --workers workers of its own on caseforge-gpu (each in
an empty folder with a HOME of its own) and a settings file naming the pool and the store:

    before  `prefect worker start --pool caseforge-gpu --type process --limit 1`, Prefect's default polling
            (PREFECT_WORKER_QUERY_SECONDS 10), [fanout] as at the issue's filing (min_shard_requests = 1)
    cold    the same worker polling every second, caseforge's [fanout] defaults
    warm    docs/deploying.md's GPU worker: `python -m caseforge.runtime.warm_worker --pool caseforge-gpu`,
            polling every second, caseforge's [fanout] defaults
    warm1   the same with min_shard_requests = 1 (a small step spread over the workers)

The models are the packaged llama.cpp ones (`make run`'s), loaded by the nightly's own process in process and by
the workers fanned out. Every nightly must end like the in-process one (the same stages with the same statuses,
the same LLM calls with the same answers: greedy decoding). Printed: each stage's seconds every way; per variant,
each fanned-out LLM job's shard runs from the server's records (queued until a worker took the run, starting until
its flow ran, running, until the job had merged the last one); CPU seconds of every process; one JSON line.

    python bench/fanout_nightly.py [--variants before,cold,warm] [--workers 2] [--store s3|folder] [--keep DIR]
    python bench/fanout_nightly.py --quick
--quick (CI checks that the bench still runs): the oyez source and one case per builder, a folder store, one warm
worker, and the LLM a scripted OpenAI-compatible double on loopback (caseforge.llm.doubles), not a model.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import duckdb
import httpx

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tests"))   # the SeaweedFS helper of the tests

from s3_server import S3Server  # noqa: E402

from caseforge.artifacts import artifact_key  # noqa: E402

POOL = "caseforge-gpu"
VARIANTS = {   # name: (worker, PREFECT_WORKER_QUERY_SECONDS, [fanout] lines)
    "before": ("prefect", 10, ["min_shard_requests = 1"]),
    "cold": ("prefect", 1, []),
    "warm": ("warm", 1, []),
    "warm1": ("warm", 1, ["min_shard_requests = 1"]),
}
QUICK_SETTINGS = """
[llm]
backend = "openai"
[llm.models.openai]
generator = "smollm2-135m-instruct"
validator = "gemma-3-270m"
judge = "gemma-3-270m"
nli = "gemma-3-270m"
[llm.backends.openai.options]
base_url = "{base_url}"
structured = "none"
max_retries = 0
[nightly.builders.casefacts]
limit = 1
[nightly.builders.aquaechr]
limit = 1
strategies = "i"
[nightly.builders.casegen]
limit = 1
[nightly.evaluations.casegen]
models = []
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def group_cpu_s(pgid: int) -> float:
    """CPU seconds of every live process of a process group, with the children each has reaped."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:          # fields after the name: state ppid pgrp ...
            total += sum(int(f) for f in fields[11:15])    # utime stime cutime cstime
    return total / ticks


def load_average() -> float:
    with open("/proc/loadavg") as handle:
        return float(handle.read().split()[0])


class Deployment:
    """The server, the store, the pool, the deployment and the workers; stopped together."""

    def __init__(self, work: Path, store: str, model_env: dict | None = None):
        self.work, self.store, self.model_env = work, store, dict(model_env or {})
        self.processes: list[subprocess.Popen] = []
        self.names: dict[int, str] = {}
        self.s3: S3Server | None = None
        self.url = ""
        self.timings: dict[str, float] = {}

    def env(self, **extra) -> dict:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CASEFORGE_", "AWS_"))}
        return {**base, "PREFECT_API_URL": f"{self.url}/api", "DO_NOT_TRACK": "1",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", **extra}

    def background(self, name: str, command: list[str], env: dict, cwd: Path) -> subprocess.Popen:
        log = (self.work / f"{name}.log").open("w")
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append(process)
        self.names[process.pid] = name
        return process

    def api(self, method: str, path: str, **kwargs):
        response = httpx.request(method, f"{self.url}/api{path}", timeout=30, **kwargs)
        response.raise_for_status()
        return response.json()

    def start(self) -> None:
        began = time.monotonic()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        home = self.work / "server-home"
        home.mkdir()
        server = self.background("server", [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                            str(port)], self.env(PREFECT_HOME=str(home)), home)
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"prefect server exited:\n{self.log('server')}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prefect server not up after 180 s:\n{self.log('server')}")
            time.sleep(0.5)
        self.timings["server_s"] = round(time.monotonic() - began, 1)
        if self.store == "s3":
            self.s3 = S3Server(self.work / "seaweedfs").start()
        began = time.monotonic()
        admin = self.env(GPU_POOL_TYPE="process", PREFECT_HOME=str(self.work / "admin-home"))
        for command in (["bash", "deployments/setup.sh"],
                        [str(BIN / "prefect"), "deploy", "--prefect-file", "deployments/prefect.yaml", "--name", "gpu",
                         "--no-prompt"]):
            done = subprocess.run(command, cwd=ROOT, env=admin, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        self.timings["setup_and_deploy_s"] = round(time.monotonic() - began, 1)

    def store_env(self) -> dict:
        return self.s3.env() if self.s3 else {}

    def start_workers(self, variant: str, count: int) -> list[subprocess.Popen]:
        """GPU machines: each its own folder and HOME, the API URL, the store's credentials; nothing else."""
        kind, query_seconds, _ = VARIANTS[variant]
        began, workers = time.monotonic(), []
        for number in range(count):
            name = f"{variant}-worker-{number + 1}"
            folder = self.work / name
            (folder / "home").mkdir(parents=True)
            env = self.env(HOME=str(folder / "home"), PREFECT_HOME=str(folder / "home" / ".prefect"),
                           PREFECT_WORKER_QUERY_SECONDS=str(query_seconds), **self.store_env(), **self.model_env)
            command = ([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type", "process", "--limit", "1"]
                       if kind == "prefect" else [sys.executable, "-m", "caseforge.runtime.warm_worker", "--pool", POOL])
            workers.append(self.background(name, [*command, "--name", name], env, folder))
        wanted = {self.names[w.pid] for w in workers}
        deadline = time.monotonic() + 300
        while True:
            online = {w["name"] for w in self.api("POST", f"/work_pools/{POOL}/workers/filter", json={})
                      if w.get("status") == "ONLINE"}
            warm = all("ready" in self.log(name) for name in wanted) if kind == "warm" else True
            if wanted <= online and warm:
                break
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                raise RuntimeError("workers not ready:\n" + "\n".join(self.log(n) for n in sorted(wanted)))
            time.sleep(0.5)
        self.timings[f"{variant}_workers_s"] = round(time.monotonic() - began, 1)
        return workers

    def stop_workers(self, workers: list[subprocess.Popen]) -> None:
        for process in workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds so far of the server, each worker (with what it started) and SeaweedFS."""
        found = {self.names[p.pid]: group_cpu_s(p.pid) for p in self.processes if p.poll() is None}
        if self.s3 is not None and self.s3.process is not None:
            found["seaweedfs"] = group_cpu_s(self.s3.process.pid)
        return found

    def log(self, name: str) -> str:
        path = self.work / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        self.stop_workers([p for p in self.processes if self.names[p.pid] != "server"])
        self.stop_workers([p for p in self.processes if self.names[p.pid] == "server"])
        if self.s3 is not None:
            self.s3.stop()


def nightly(deployment: Deployment, name: str, samples: Path, settings: str, quick: str | None) -> dict:
    """`caseforge run nightly --from-samples` on a fresh warehouse, from the project folder: seconds, CPU seconds."""
    folder = deployment.work / name
    folder.mkdir()
    config = folder / "caseforge.toml"
    config.write_text(settings + QUICK_SETTINGS.format(base_url=quick) if quick else settings)
    command = [str(BIN / "caseforge"), "run", "nightly", "--from-samples", "--samples", str(samples),
               "--db", str(folder / "cf.duckdb")]
    if quick:
        command += ["--sources", "oyez"]
    env = deployment.env(CASEFORGE_CONFIG=str(config), CASEFORGE_SAMPLES=str(samples), **deployment.store_env())
    load = load_average()
    cpu_before, children_before = deployment.cpu_s(), resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    started = datetime.now().astimezone()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - began
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {k: round(v - cpu_before.get(k, 0.0), 1) for k, v in deployment.cpu_s().items() if k in cpu_before}
    cpu["nightly"] = round(children.ru_utime + children.ru_stime - children_before.ru_utime - children_before.ru_stime, 1)
    (folder / "nightly.log").write_text(done.stdout + done.stderr)
    if done.returncode not in (0, 1):         # 1: it ran to the end and reports what the small models wrote
        raise RuntimeError(f"the {name} nightly could not run (exit {done.returncode}):\n{done.stderr[-4000:]}")
    print(f"{name}: {seconds:.1f} s (exit {done.returncode}, load average {load:.1f} -> {load_average():.1f})",
          flush=True)
    return {"name": name, "seconds": seconds, "exit": done.returncode, "db": folder / "cf.duckdb", "started": started,
            "load": [load, load_average()], "cpu_s": cpu, **outcome(folder / "cf.duckdb")}


def outcome(db: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        stages = {(s, n): (status, float(d)) for s, n, status, d in con.execute(
            "SELECT stage, name, status, duration_s FROM ops.nightly_stages ORDER BY stage, name").fetchall()}
        calls = con.execute("SELECT identity, step, status, response_text, latency_ms FROM ops.llm_calls").fetchall()
    finally:
        con.close()
    return {"stages": stages, "calls": {c[0]: c[1:4] for c in calls},
            "model_s": {step: sum((c[4] or 0) for c in calls if c[1] == step) / 1000 for step in {c[1] for c in calls}}}


def shard_runs(deployment: Deployment, since: datetime) -> list[dict]:
    """The llm-shard flow runs created since `since`, oldest first: when each was created (submitted), taken by a
    worker (Pending), running (its process had loaded the flow), and ended."""
    runs = deployment.api("POST", "/flow_runs/filter", json={"flow_runs": {"tags": {"all_": ["llm-shard"]}},
                                                             "sort": "EXPECTED_START_TIME_ASC", "limit": 200})
    rows = []
    for run in runs:
        created = datetime.fromisoformat(run["created"])
        if created < since:
            continue
        first = {}
        for state in sorted(deployment.api("GET", f"/flow_run_states/?flow_run_id={run['id']}"),
                            key=lambda s: s["timestamp"]):
            first.setdefault(state["type"], datetime.fromisoformat(state["timestamp"]))
        pending, running = first.get("PENDING"), first.get("RUNNING")
        ended = next((first[t] for t in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") if t in first), None)
        rows.append({"name": run["name"], "step": run["parameters"].get("step"), "state": run["state_type"],
                     "created": created, "ended": ended,
                     "queued_s": seconds_between(created, pending), "start_s": seconds_between(pending, running),
                     "run_s": seconds_between(running, ended)})
    return sorted(rows, key=lambda r: r["created"])


def seconds_between(a: datetime | None, b: datetime | None) -> float | None:
    return (b - a).total_seconds() if a and b else None


def fanout_jobs(deployment: Deployment, runs: list[dict], since: datetime) -> list[dict]:
    """The LLM jobs that fanned out, from the llm-fanout-<step> table each published when it ended, with their
    shard runs (those of the step created since the step's previous job ended)."""
    found = deployment.api("POST", "/artifacts/filter", json={"artifacts": {"key": {"like_": "llm-fanout-"}},
                                                              "sort": "CREATED_DESC", "limit": 200})
    jobs, last_end = [], {}
    for artifact in sorted(found, key=lambda a: a["created"]):
        key, ended = artifact["key"], datetime.fromisoformat(artifact["created"])
        if ended < since:
            continue
        mine = [r for r in runs if f"llm-fanout-{artifact_key(r['step'])}" == key
                and last_end.get(key, since) < r["created"] <= ended]
        last_end[key] = ended
        if not mine:
            continue
        data = artifact["data"]
        table = json.loads(data) if isinstance(data, str) else data
        last_run_end = max((r["ended"] for r in mine if r["ended"]), default=ended)
        jobs.append({"step": mine[0]["step"], "shards": len(table), "runs": mine,
                     "requests": sum(int(row["requests"]) for row in table),
                     "seconds": (ended - min(r["created"] for r in mine)).total_seconds(),
                     "merge_s": (ended - last_run_end).total_seconds()})
    return jobs


def total(values) -> float:
    return sum(v for v in values if v is not None)


def report(alone: dict, fanned: list[dict]) -> dict:
    order = ["source", "builder", "evaluation", "export"]
    names = [f["name"] for f in fanned]
    print("\n| stage | status | in process s | " + " | ".join(f"{n} s" for n in names) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in names) + " |")
    for key in sorted(alone["stages"], key=lambda k: (order.index(k[0]) if k[0] in order else 9, k[1])):
        seconds = [alone["stages"][key][1], *(f["stages"].get(key, ("", float("nan")))[1] for f in fanned)]
        if max(seconds) >= 0.05:
            print(f"| {key[0]} {key[1]} | {alone['stages'][key][0]} | " + " | ".join(f"{s:.1f}" for s in seconds) + " |")
    print(f"| the whole nightly | | {alone['seconds']:.1f} | " + " | ".join(f"{f['seconds']:.1f}" for f in fanned) + " |")
    summary = {"in_process_s": round(alone["seconds"], 1), "llm_calls": len(alone["calls"]),
               "model_calls_s_in_process": round(sum(alone["model_s"].values()), 1),
               "cpu_s_in_process": alone["cpu_s"], "load_average_in_process": alone["load"], "variants": {}}
    for f in fanned:
        same_stages = {k: v[0] for k, v in alone["stages"].items()} == {k: v[0] for k, v in f["stages"].items()}
        same_calls = alone["calls"] == f["calls"]
        print(f"\n{f['name']}: {f['seconds']:.1f} s, {f['seconds'] / alone['seconds']:.2f}x in process; same stage "
              f"statuses: {same_stages}; same LLM calls and answers: {same_calls}. Each fanned-out LLM job, its shard "
              "runs summed: queued (until a worker took the run), starting (until its flow ran), running (store, "
              "model load, the model's calls); merged after (from the last run's end until the job was done).")
        print("\n| LLM job | requests | shards | job s | queued s | starting s | running s | model calls s | merged after s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for job in f["jobs"]:
            rs = job["runs"]
            print(f"| {job['step']} | {job['requests']} | {job['shards']} | {job['seconds']:.1f} | "
                  f"{total(r['queued_s'] for r in rs):.1f} | {total(r['start_s'] for r in rs):.1f} | "
                  f"{total(r['run_s'] for r in rs):.1f} | {f['model_s'].get(job['step'], 0):.1f} | {job['merge_s']:.1f} |")
        runs = f["runs"]
        summary["variants"][f["name"]] = {
            "fanned_out_s": round(f["seconds"], 1), "ratio": round(f["seconds"] / alone["seconds"], 3),
            "target_met": f["seconds"] <= 1.5 * alone["seconds"], "same_stage_statuses": same_stages,
            "same_llm_calls": same_calls, "jobs": len(f["jobs"]), "shard_runs": len(runs),
            "job_s": round(total(j["seconds"] for j in f["jobs"]), 1),
            "queued_s": round(total(r["queued_s"] for r in runs), 1),
            "starting_s": round(total(r["start_s"] for r in runs), 1),
            "running_s": round(total(r["run_s"] for r in runs), 1),
            "merged_after_s": round(total(j["merge_s"] for j in f["jobs"]), 1),
            "median_starting_s": round(statistics.median([r["start_s"] for r in runs if r["start_s"] is not None]
                                                         or [0]), 2),
            "model_calls_s": round(sum(f["model_s"].values()), 1), "cpu_s": f["cpu_s"], "load_average": f["load"],
            "worker": VARIANTS[f["name"]][0], "worker_query_seconds": VARIANTS[f["name"]][1],
            "settings": VARIANTS[f["name"]][2]}
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="before,cold,warm",
                        help=f"fanned-out setups, in this order (of {', '.join(VARIANTS)})")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--store", choices=("s3", "folder"), default="s3")
    parser.add_argument("--samples", default=os.environ.get("CASEFORGE_SAMPLES", str(ROOT.parent / "shared" / "samples")))
    parser.add_argument("--keep", help="work in this folder and keep it (logs, warehouses)")
    parser.add_argument("--quick", action="store_true", help="the oyez source, one case per builder, the warm variant")
    args = parser.parse_args()
    variants = ["warm"] if args.quick else [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}")
    if args.quick:
        args.workers, args.store = 1, "folder"
    samples = Path(args.samples)
    if not samples.is_dir():
        print(f"samples folder {samples} not found (set CASEFORGE_SAMPLES)", file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fanout-nightly-"))
    work.mkdir(parents=True, exist_ok=True)
    double, quick = None, None
    if args.quick:            # the LLM: a scripted double on loopback, for the nightly and the workers alike
        double = subprocess.Popen([sys.executable, "-m", "caseforge.llm.doubles", "--latency-s", "0.05",
                                   "--models", "smollm2-135m-instruct,gemma-3-270m"],     # QUICK_SETTINGS' models
                                  stdout=subprocess.PIPE, text=True)
        quick = f"http://127.0.0.1:{int(double.stdout.readline())}/v1"
    deployment = Deployment(work, args.store, {"CASEFORGE_OPENAI_BASE_URL": quick} if quick else {})
    try:
        deployment.start()
        print(f"server, store, pool and deployment ready: {deployment.timings}", flush=True)
        alone = nightly(deployment, "in-process", samples, "", quick)
        store = f"s3://{deployment.s3.bucket}/nightly" if deployment.s3 else str(work / "shard-store")
        fanned = []
        for variant in variants:
            workers = deployment.start_workers(variant, args.workers)
            try:
                settings = "\n".join(["[fanout]", f'pool = "{POOL}"', f'store = "{store}"', *VARIANTS[variant][2], ""])
                result = nightly(deployment, variant, samples, settings, quick)
            finally:
                deployment.stop_workers(workers)
            result["runs"] = shard_runs(deployment, result["started"])
            result["jobs"] = fanout_jobs(deployment, result["runs"], result["started"])
            fanned.append(result)
        summary = report(alone, fanned)
        summary.update(workers=args.workers, store=args.store, setup=deployment.timings)
        print(json.dumps(summary))
        return 0 if all(v["same_stage_statuses"] and v["same_llm_calls"] for v in summary["variants"].values()) else 1
    finally:
        deployment.stop()
        if double is not None:
            double.terminate()
            double.wait(10)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
