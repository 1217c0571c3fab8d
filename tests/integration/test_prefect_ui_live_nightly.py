"""A live nightly on a machine without network, through the real deployment, worker and UI: every source's base
URL ([upstream] in the settings, set by the run's `settings` parameter) points at a loopback port that
refuses connections. The run must end within minutes, Failed only for the sources that could not be fetched,
each of them a Failed task run in the Prefect UI (read with headless Chromium); the worker must not log
Prefect's "Unexpected result for failed state". The screenshot is kept as a CI artifact."""
import json
import socket
import time
from pathlib import Path

import pytest
import yaml
from conftest import capture_nightly_log, prefect_file_for_test
from test_prefect_ui import ARTIFACTS_DIR, CHROMIUM, chromium, visible_text

pytestmark = [pytest.mark.slow]

POOL = "caseforge-live-test-pool"
DEPLOYMENT = "nightly-live"
LIVE_SOURCES = ("guides", "hudoc", "oyez")      # the registry's sources with a live fetcher
BUDGET_S = 600                                   # the bound: a nightly without network ends within 10 minutes


def refusing_base_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def task_runs_of(server, flow_run_id: str) -> dict[str, dict]:
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
    found = server.api("POST", "/task_runs/filter", content=json.dumps(body),
                       headers={"content-type": "application/json"}).json()
    return {run["name"]: run for run in found}


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)")
def test_a_live_nightly_without_network_fails_its_sources_within_minutes_and_the_ui_shows_them(
        prefect_server, tmp_path):
    server = prefect_server
    base = refusing_base_url()
    parameters = {"db": str(tmp_path / "cf.duckdb"), "release_dir": str(tmp_path / "releases"),
                  "settings": {"upstream": {name: base for name in LIVE_SOURCES}}}
    prefect_file = tmp_path / "prefect.yaml"
    prefect_file_for_test(prefect_file, "nightly", POOL, parameters)
    config = yaml.safe_load(prefect_file.read_text())
    config["deployments"][0]["name"] = DEPLOYMENT          # beside the samples nightly of the other tests
    prefect_file.write_text(yaml.safe_dump(config, sort_keys=False))

    server.prefect("work-pool", "create", POOL, "--type", "process")
    server.prefect("deploy", "--prefect-file", str(prefect_file), "--name", DEPLOYMENT, "--no-prompt")
    deployment = server.api("GET", f"/deployments/name/nightly/{DEPLOYMENT}").json()
    worker = server.background("worker-live", "worker", "start", "--pool", POOL, "--type", "process")
    try:
        flow_run = server.api("POST", f"/deployments/{deployment['id']}/create_flow_run", json={}).json()
        started = time.monotonic()
        while True:
            flow_run = server.api("GET", f"/flow_runs/{flow_run['id']}").json()
            if flow_run["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                break
            if time.monotonic() - started > BUDGET_S:
                pytest.fail(f"live nightly still {flow_run['state']['type']} after {BUDGET_S} s:\n"
                            f"{server.log('worker-live')}")
            time.sleep(2)
        elapsed = time.monotonic() - started
        time.sleep(3)                                    # the flow-run process's last lines reach the worker log
        worker_log = (server.home / "worker-live.log").read_text(errors="replace")
        captured = capture_nightly_log(server, flow_run, ARTIFACTS_DIR / "nightly-live.log", worker_log="worker-live")
    finally:
        server.stop_process(worker)
    print(f"live nightly without network: {elapsed:.0f} s, {flow_run['state']['type']}")

    # Failed, listing the three sources, each with the unreachable host in its reason
    assert flow_run["state"]["type"] == "FAILED", (flow_run["state"], worker_log)
    message = flow_run["state"]["message"]
    assert "3 stage(s) failed (source guides, source hudoc, source oyez)" in message, message
    runs = task_runs_of(server, flow_run["id"])
    states = {name: run["state"]["type"] for name, run in runs.items()}
    for name in LIVE_SOURCES:
        assert states.get(f"source-{name}") == "FAILED", states
        assert base.removeprefix("http://") in runs[f"source-{name}"]["state"]["message"], runs[f"source-{name}"]["state"]
    # (the subflows' placeholder task runs, `<flow>-<uuid>`, are Failed with their subflows: not stages)
    others = {name: state for name, state in states.items() if name.startswith(("builder-", "evaluation-", "export-"))}
    assert others and set(others.values()) == {"COMPLETED"}, others   # builders, evaluations, exports: skipped, not failed
    assert any(name.startswith("builder-") for name in others) and any(name.startswith("export-") for name in others)
    # The flow-run process raises the run's own failure (Prefect 3.8.8 logs every failed flow run's exception
    # there, "Engine execution exited with unexpected exception"), no longer a TypeError about the state's data.
    assert "Unexpected result for failed state" not in worker_log, worker_log[-4000:]
    assert "RunFailed: nightly " in worker_log, worker_log[-4000:]

    # out/ci-artifacts/nightly-live.log: fetch progress (HUDOC's metadata pages by date window, the guides and
    # Oyez listings) and the host given up, in the run log the UI shows
    run_log = captured.read_text().partition("## the flow run process's terminal output")[0]
    for line in ("hudoc metadata pages: started", "hudoc metadata pages: 0 pages done", "windows ", "unreachable"):
        assert line in run_log, f"the live nightly's run log lacks {line!r}: {run_log[-3000:]}"

    # The UI: each failed source's task run page says Failed; the flow run page says Failed too.
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    for name in LIVE_SOURCES:
        page = f"{server.url}/runs/task-run/{runs[f'source-{name}']['id']}"
        for attempt in range(3):                         # a busy machine may need a reload
            dom = chromium(page, tmp_path / f"profile-{name}-{attempt}", "--dump-dom")
            text = visible_text(dom.stdout)
            if f"source-{name}" in text and "Failed" in text:
                break
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert f"source-{name}" in text and "Failed" in text, f"task run page of source-{name}: {text[:1500]}"

    run_page = f"{server.url}/runs/flow-run/{flow_run['id']}"
    dom = chromium(run_page, tmp_path / "profile-run", "--dump-dom")
    (ARTIFACTS_DIR / "prefect-ui-live-nightly.html").write_text(dom.stdout)
    text = visible_text(dom.stdout)
    assert f"Flow Run: {flow_run['name']}" in text and "Failed" in text, text[:1500]

    screenshot = ARTIFACTS_DIR / "prefect-ui-live-nightly.png"
    screenshot.unlink(missing_ok=True)
    shot = chromium(run_page, tmp_path / "profile-shot", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    assert elapsed < BUDGET_S
    Path(tmp_path / "elapsed.txt").write_text(f"{elapsed:.0f}\n")
