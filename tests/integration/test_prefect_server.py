"""The nightly deployment on a real Prefect server (loopback): deployed from deployments/prefect.yaml,
picked up by a process worker, finished Completed, with its summary, quality and plot artifacts."""
import json
from pathlib import Path

import pytest


pytestmark = [pytest.mark.samples, pytest.mark.slow]


def test_nightly_deployment_runs_on_a_real_server(samples_dir, prefect_server, nightly_flow_run, nightly_artifacts):
    run = nightly_flow_run
    assert run["state"]["type"] == "COMPLETED", (run["state"], run["_worker_log"])
    assert run["work_pool_name"] == "caseforge-test-pool"

    artifacts = nightly_artifacts
    assert {"nightly-summary", "nightly-quality", "nightly-plots"} <= set(artifacts)
    summary = artifacts["nightly-summary"]
    assert summary["type"] == "table"
    rows = json.loads(summary["data"]) if isinstance(summary["data"], str) else summary["data"]
    oyez = next(r for r in rows if r["stage"] == "source" and r["name"] == "oyez")
    assert oyez["status"] == "succeeded" and oyez["new"] == 20  # the cases the fixture links
    assert "data:image/png;base64," in artifacts["nightly-plots"]["data"]

    release = Path(run["_work_dir"]) / "releases" / "scotus"
    assert (release / "MANIFEST.sha256").exists()
    print("timings:", prefect_server.timings)
