"""Progress a person sees: a flow started by the CLI reports its long stages (parse, gate, fetch) on
stderr and in the flow run's log that Prefect keeps (what the UI shows), read back through the Prefect
client from the loopback server."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from oyez_subset import link_oyez_subset

pytestmark = [pytest.mark.samples, pytest.mark.slow]


async def _run_log(api_url: str, flow_name: str) -> list[str]:
    from prefect.client.orchestration import PrefectClient
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterId, LogFilter
    from prefect.client.schemas.filters import LogFilterFlowRunId

    async with PrefectClient(api_url) as client:
        runs = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])))
        assert runs, f"no {flow_name} run on the server"
        latest = max(runs, key=lambda r: r.created)
        logs = await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[latest.id])))
        del FlowRunFilter, FlowRunFilterId
        return [record.message for record in logs]


def test_ingest_progress_reaches_stderr_and_the_flow_runs_log(samples_dir, prefect_server, tmp_path):
    subset = link_oyez_subset(samples_dir, tmp_path / "samples", 20, 50)
    done = subprocess.run([sys.executable, "-m", "caseforge", "ingest", "oyez", "--from-dir",
                           str(subset / "oyez" / "cases"), "--legacy-table",
                           str(subset / "oyez" / "legacy_justice_table.csv"), "--db", str(tmp_path / "cf.duckdb")],
                          capture_output=True, text=True, timeout=300, env=prefect_server.env)
    assert done.returncode == 0, done.stderr[-3000:]

    # stderr is not a terminal here: plain log lines, no bar
    stderr = done.stderr.splitlines()
    assert any("oyez replay: 20/20" in line for line in stderr), done.stderr[-3000:]
    assert any("gate scotus_cases:" in line and "rows" in line for line in stderr), done.stderr[-3000:]
    assert "\r" not in done.stderr, "a progress bar was drawn on a stream that is not a terminal"

    messages = asyncio.run(_run_log(prefect_server.env["PREFECT_API_URL"], "oyez-refresh"))
    assert any("oyez replay: 20/20" in m for m in messages), messages
    assert any("gate scotus_cases:" in m for m in messages), messages
