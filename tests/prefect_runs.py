"""What the Prefect server tests share besides their fixtures (tests/integration/conftest.py): where CI keeps what a
person looks at, the test copy of deployments/prefect.yaml, a nightly's run log as the UI shows it, the browser's
screen. Test modules import these from here (a module named `conftest` is any of the suite's conftest files)."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CI_ARTIFACTS = PROJECT_ROOT / "out" / "ci-artifacts"

SCREEN = {"width": 1440, "height": 1000}       # the bound: what a laptop screen shows without scrolling
LOAD_MS = 60_000                               # a page on a busy machine


def prefect_file_for_test(path: Path, deployment: str, pool: str, parameters: dict | None = None) -> dict:
    """deployments/prefect.yaml with only one deployment, on a test pool (a process pool: the real pool's job
    variables, image and volumes, are left out, and so is a pull step into an image's folder: runs start in
    this project, CASEFORGE_HOME), unscheduled. Returns that deployment."""
    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    chosen = next(d for d in config["deployments"] if d["name"] == deployment)
    chosen.update(schedules=[], work_pool={"name": pool})
    chosen.pop("pull", None)
    if parameters is not None:
        chosen["parameters"] = parameters
    config["deployments"] = [chosen]
    config.pop("definitions", None)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return chosen


def _post(server, path: str, body: dict) -> list[dict]:
    return server.api("POST", path, content=json.dumps(body), headers={"content-type": "application/json"}).json()


def flow_run_logs(server, flow_run_ids: list[str]) -> list[dict]:
    """Every log record the server keeps for these flow runs, oldest first (the API pages by 200)."""
    records, offset = [], 0
    while True:
        page = _post(server, "/logs/filter", {"logs": {"flow_run_id": {"any_": flow_run_ids}},
                                              "sort": "TIMESTAMP_ASC", "limit": 200, "offset": offset})
        records += page
        if len(page) < 200:
            return records
        offset += 200


def capture_nightly_log(server, flow_run: dict, path: Path, worker_log: str = "worker") -> Path:
    """The nightly as a person sees it, kept as a CI artifact: the run log the Prefect UI shows (the nightly
    and its subflow runs, read from the server's API) and what the flow run's process wrote on its terminal
    (the worker's output)."""
    runs = {flow_run["id"]: flow_run["name"]}
    frontier = [flow_run["id"]]
    while frontier:                      # subflows (a source's flow inside the nightly), at any depth
        children = _post(server, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": frontier}}})
        frontier = [c["id"] for c in children if c["id"] not in runs]
        runs.update({c["id"]: c["name"] for c in children})
    lines = [f"# nightly flow run {flow_run['name']} ({flow_run['id']}): {flow_run['state']['type']}",
             f"# flow runs: {len(runs)} (the nightly and its subflows)", "",
             "## run log (Prefect API, what the UI shows)", ""]
    for record in flow_run_logs(server, list(runs)):
        level = logging_level_name(record["level"])
        lines.append(f"{record['timestamp'][11:23]} | {level:<7} | {runs.get(record['flow_run_id'], '?')} | "
                     f"{record['name']} - {record['message']}")
    worker = server.home / f"{worker_log}.log"
    lines += ["", "## the flow run process's terminal output (the worker's log)", "",
              worker.read_text(errors="replace") if worker.exists() else "(no worker log)"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def logging_level_name(level: int) -> str:
    import logging

    return logging.getLevelName(level)
