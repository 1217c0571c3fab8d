"""A live nightly on a machine without network, through the real deployment, worker and UI: every source's base
URL ([upstream] in the settings, set by the run's `settings` parameter) points at a loopback port that
refuses connections. The run must end within minutes, Failed only for the sources that could not be fetched,
each of them a Failed task run in the Prefect UI (read in the shared headless browser) with its one line; the
worker must not log Prefect's "Unexpected result for failed state". The screenshot is kept as a CI artifact.

Before the run, deployments/setup.sh sets up failure notifications (CASEFORGE_NOTIFY_URL) to a loopback
webhook: the failed nightly posts exactly one message there, naming its failed stages, each with the line its task
run's state says, and linking the run."""
import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from prefect_runs import CI_ARTIFACTS as ARTIFACTS_DIR, PROJECT_ROOT, capture_nightly_log, prefect_file_for_test

POOL = "caseforge-live-test-pool"
DEPLOYMENT = "nightly-live"
LIVE_SOURCES = ("guides", "hudoc", "oyez")      # the registry's sources with a live fetcher
BUDGET_S = 600                                   # the bound: a nightly without network ends within 10 minutes
pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUDGET_S + 300)]


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


class WebhookReceiver:
    """A loopback webhook that keeps the JSON of every POST it gets (bounded: 5 s per request, stopped by the test)."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            timeout = 5

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                received.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/caseforge-failures"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def messages_about(self, flow_run_id: str, wait_s: float) -> list[dict]:
        """The messages about this flow run (its link names its id: its name, `nightly-<run id>`, is the same for
        every warehouse's first nightly), once one has come (or after wait_s), and 3 s more for a second."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not self._about(flow_run_id):
            time.sleep(0.5)
        time.sleep(3)
        return self._about(flow_run_id)

    def _about(self, flow_run_id: str) -> list[dict]:
        return [m for m in list(self.received) if flow_run_id in m.get("body", "")]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def failure_webhook(prefect_server):
    """deployments/setup.sh against the loopback server with CASEFORGE_NOTIFY_URL on a loopback webhook. Its
    pools and limits are not this test's business (test_deployments.py checks them; the other server tests
    make their own pools): PREFECT=true makes those steps no-ops, the notification step runs for real."""
    receiver = WebhookReceiver()
    try:
        done = subprocess.run(["bash", str(PROJECT_ROOT / "deployments" / "setup.sh")], cwd=PROJECT_ROOT,
                              env={**prefect_server.env, "PREFECT": "true", "PYTHON": sys.executable,
                                   "CASEFORGE_NOTIFY_URL": receiver.url},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        receiver.setup_output = done.stdout
        yield receiver
    finally:
        receiver.stop()


@pytest.fixture(scope="module")
def live_nightly(prefect_server, failure_webhook, tmp_path_factory) -> dict:
    """The live nightly without network, deployed and run through a worker: the finished flow run, its stage
    task runs, the worker's log, the captured run log and how long it took."""
    server = prefect_server
    work = tmp_path_factory.mktemp("live_nightly")
    base = refusing_base_url()
    parameters = {"db": str(work / "cf.duckdb"), "release_dir": str(work / "releases"),
                  "settings": {"upstream": {name: base for name in LIVE_SOURCES}}}
    prefect_file = work / "prefect.yaml"
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
    (work / "elapsed.txt").write_text(f"{elapsed:.0f}\n")
    return {"flow_run": flow_run, "base": base, "elapsed": elapsed, "worker_log": worker_log, "captured": captured,
            "task_runs": task_runs_of(server, flow_run["id"])}


def test_a_live_nightly_without_network_fails_its_sources_within_minutes(live_nightly):
    flow_run, base, worker_log = live_nightly["flow_run"], live_nightly["base"], live_nightly["worker_log"]
    # Failed, listing the three sources, each with the unreachable host in its reason
    assert flow_run["state"]["type"] == "FAILED", (flow_run["state"], worker_log)
    message = flow_run["state"]["message"]
    assert "3 stage(s) failed (source hudoc, source oyez, source guides)" in message, message
    runs = live_nightly["task_runs"]
    states = {name: run["state"]["type"] for name, run in runs.items()}
    for name in LIVE_SOURCES:
        assert states.get(f"source-{name}") == "FAILED", states
        assert base.removeprefix("http://") in runs[f"source-{name}"]["state"]["message"], runs[f"source-{name}"]["state"]
    # every task run is a stage (or the report): a source's subflow hangs under its stage's task run, with no
    # placeholder task run of Prefect's (`<flow>-<uuid>`, no logs) beside it
    assert all(re.fullmatch(r"(source|builder|evaluation|export)-[a-z-]+|report", name) for name in states), states
    others = {name: state for name, state in states.items() if name.startswith(("builder-", "evaluation-", "export-"))}
    assert others and set(others.values()) == {"COMPLETED"}, others   # builders, evaluations, exports: skipped, not failed
    assert any(name.startswith("builder-") for name in others) and any(name.startswith("export-") for name in others)
    # The flow-run process raises the run's own failure (Prefect 3.8.8 logs every failed flow run's exception
    # there, "Engine execution exited with unexpected exception"), no longer a TypeError about the state's data.
    assert "Unexpected result for failed state" not in worker_log, worker_log[-4000:]
    assert "RunFailed: nightly " in worker_log, worker_log[-4000:]

    # out/ci-artifacts/nightly-live.log: fetch progress (HUDOC's metadata pages by date window, the guides and
    # Oyez listings) and the host given up, in the run log the UI shows
    run_log = live_nightly["captured"].read_text().partition("## the flow run process's terminal output")[0]
    for line in ("hudoc metadata pages: started", "hudoc metadata pages: 0 pages done", "windows ", "unreachable"):
        assert line in run_log, f"the live nightly's run log lacks {line!r}: {run_log[-3000:]}"
    assert live_nightly["elapsed"] < BUDGET_S


def test_a_failed_nightly_posts_one_message_naming_its_failed_stages_and_linking_the_run(
        prefect_server, live_nightly, failure_webhook):
    flow_run = live_nightly["flow_run"]
    messages = failure_webhook.messages_about(flow_run["id"], wait_s=60)
    assert len(messages) == 1, (messages, failure_webhook.received, failure_webhook.setup_output)
    assert "failure notifications: webhook at http://127.0.0.1:" in failure_webhook.setup_output, \
        failure_webhook.setup_output
    [message] = messages
    assert message["subject"] == f"caseforge: nightly run {flow_run['name']} Failed", message
    body = message["body"]
    assert "nightly (deployment nightly-live)" in body, body
    assert "3 stage(s) failed (source hudoc, source oyez, source guides)" in body, body
    for name in LIVE_SOURCES:                           # the same line as the stage's task run in the UI
        assert live_nightly["task_runs"][f"source-{name}"]["state"]["message"] in body, body
    assert f"{prefect_server.url}/runs/flow-run/{flow_run['id']}" in body, body


def test_the_ui_shows_each_failed_source_with_its_line_and_the_failed_run(prefect_server, live_nightly, browsing):
    """Each failed source's task run page says Failed and shows its one line; the run's page says Failed and names
    the night."""
    server, flow_run, runs, page = prefect_server, live_nightly["flow_run"], live_nightly["task_runs"], browsing.page
    for name in LIVE_SOURCES:
        line = runs[f"source-{name}"]["state"]["message"]
        assert line.startswith(f"source {name} failed: ") and "NoneType" not in line, line
        page.goto(f"{server.url}/runs/task-run/{runs[f'source-{name}']['id']}")
        page.get_by_text(line, exact=False).first.wait_for()
        assert "Failed" in page.inner_text("body")

    page.goto(f"{server.url}/runs/flow-run/{flow_run['id']}")
    page.get_by_text(flow_run["name"], exact=True).first.wait_for()
    assert re.fullmatch(r"nightly-\d+", flow_run["name"]) and "Failed" in page.inner_text("body")
    browsing.shot("live-nightly")
