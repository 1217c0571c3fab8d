"""Shard runs whose worker died are marked Crashed by the Prefect server: Prefect's documented "detect zombie
flows" automation, scoped to LLM shard runs (tag `llm-shard`, which caseforge.llm.fanout gives every shard it
submits) and made by deployments/setup.sh.

A flow run started from a deployment sends a `prefect.flow-run.heartbeat` event every
PREFECT_FLOWS_HEARTBEAT_FREQUENCY seconds (at least 30; deployments/prefect.yaml sets 30 for the GPU pool).
When a shard run's heartbeat is followed by neither another heartbeat nor a final state within the window (three
heartbeats by default; CASEFORGE_ZOMBIE_WINDOW_S, Settings.zombie_window_s, to change), the automation sets the run
Crashed. The orchestrator sees the Crashed run and merges what the store holds or submits the shard again (Prefect
does not retry Crashed runs). It watches the heartbeats itself too ([fanout] stale_after_s), so a server without the
automation still loses no shard; the automation is what shows the run as Crashed in the UI at once.
Run again, it updates the automation.

    python -m caseforge.runtime.zombie_runs          # what deployments/setup.sh runs
"""
from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from caseforge.settings import load_settings

AUTOMATION_NAME = "caseforge-crash-zombie-shard-runs"
SHARD_TAG = "llm-shard"
HEARTBEAT_S = 30                      # PREFECT_FLOWS_HEARTBEAT_FREQUENCY of the GPU deployment (Prefect's minimum)
MESSAGE = "Shard run marked as crashed: no flow-run heartbeat within {window} s (its worker is gone)"


def zombie_automation(window_s: int):
    from prefect.automations import Automation, ChangeFlowRunState, EventTrigger, Posture
    from prefect.client.schemas.objects import StateType

    return Automation(
        name=AUTOMATION_NAME,
        description=f"Marks an LLM shard run (tag {SHARD_TAG}) Crashed when no heartbeat follows its last one within "
                    f"{window_s} s; made by deployments/setup.sh (caseforge.runtime.zombie_runs)",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                    "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"},
            match={"prefect.resource.id": ["prefect.flow-run.*"]},
            match_related=[{"prefect.resource.id": f"prefect.tag.{SHARD_TAG}", "prefect.resource.role": "tag"}],
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive, threshold=1, within=timedelta(seconds=window_s)),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, message=MESSAGE.format(window=window_s))],
    )


def install(window_s: int) -> str:
    from caseforge.runtime.notifications import save_automation

    if window_s < 3 * HEARTBEAT_S:
        raise ValueError(f"a window of {window_s} s is less than three heartbeats ({3 * HEARTBEAT_S} s): live shard "
                         "runs would be marked Crashed")
    done = save_automation(zombie_automation(window_s))
    return (f"automation {AUTOMATION_NAME!r} {done}: a shard run (tag {SHARD_TAG}) with no heartbeat for {window_s} s "
            "is marked Crashed")


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m caseforge.runtime.zombie_runs", description=__doc__.split("\n\n")[0]
                            ).parse_args(argv)
    try:
        print(install(load_settings().zombie_window_s))
    except ValueError as exc:
        print(f"zombie shard runs: not set up: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
