"""One real pipeline step for tests/integration/test_llm_fanout_prefect.py, run as its own process: CaseFacts' factuality
check (tasks/casefacts/factuality.py:check_factuality) over the curated Oyez cases of --db, --claims-per-case
claims per case (3 by default), with the `openai` backend pointed at --base-url (a scripted server double).

With the settings in $CASEFORGE_CONFIG naming a pool, this process is the orchestrator of a fan-out and runs
the step inside a Prefect flow on the server of $PREFECT_API_URL (as a build would); without, the step runs in
process (the test calls `run` directly for that). Prints one JSON line: the stage table's rows, the
ops.llm_calls rows and the fan-out report.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import pandas as pd

from caseforge.flows.wiring import install
from caseforge.llm.config import Backends
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.tasks.casefacts import context, factuality
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.warehouse.connection import connect

CLAIMS_PER_CASE = 3


def claims_for(cases: pd.DataFrame, per_case: int = CLAIMS_PER_CASE) -> pd.DataFrame:
    """`per_case` claims per case, each text unique (the test tells requests apart by it), that name no party
    and no date (the build drops those before this step)."""
    rows = []
    for case in cases.to_dict("records"):
        tag = f"c{case['case_id']}"
        texts = [f"A majority of {case.get('majority_vote')} justices agreed on how dispute {tag} should end.",
                 f"The dissenting side of the bench in dispute {tag} had {case.get('minority_vote')} justices.",
                 f"In dispute {tag} the justices were asked whether a lower ruling should stand."]
        texts += [f"Point {k} of dispute {tag}: the court heard both sides before it ruled." for k in range(4, per_case + 1)]
        for number, text in enumerate(texts[:per_case]):
            rows.append({"claim_id": f"{case['case_id']}-{number}", "case_id": case["case_id"], "claim": text})
    return pd.DataFrame(rows)


def run(db: str, base_url: str, concurrency: int, claims_per_case: int = CLAIMS_PER_CASE, batch_size: int = 2) -> dict:
    """The step on the cases of `db`: its stage rows, the ops.llm_calls rows and the fan-out report."""
    con = connect(db)
    backends = Backends(llm="openai", models={"validator": "double-validator"}, base_url=base_url,
                        concurrency=concurrency, batch_size=batch_size, structured="none", max_retries=2)
    ctx = context.BuildContext(con, None, StageReport("casefacts-factuality"), BuildConfig(), backends)
    ctx.load_cases()
    generated = claims_for(ctx.cases, claims_per_case)

    reports = []
    run_job = context.run_job

    def run_job_keeping_the_report(*a, **kw):
        result = run_job(*a, **kw)
        reports.append(result.fanout)
        return result
    context.run_job = run_job_keeping_the_report
    started = time.monotonic()
    try:
        if load_settings().file.fanout.enabled:
            from prefect import flow

            @flow(name="fanout-probe")
            def probe():
                return factuality.check_factuality(ctx, generated)
            probe()
        else:
            factuality.check_factuality(ctx, generated)
    finally:
        context.run_job = run_job
    seconds = time.monotonic() - started

    rows = con.execute("SELECT claim_id, case_id, supported, status, reason, model FROM build.casefacts_factuality "
                       "ORDER BY claim_id").fetchall()
    calls = con.execute("SELECT identity, step, backend, model, status, CAST(parsed AS VARCHAR), response_text, "
                        "error, attempts FROM ops.llm_calls ORDER BY identity").fetchall()
    con.close()
    report = reports[0] if reports else None
    return json.loads(json.dumps({"claims": len(generated), "rows": rows, "calls": calls, "seconds": round(seconds, 1),
                                  "counts": ctx.report.counts,
                                  "report": dataclasses.asdict(report) if report is not None else None}, default=str))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--claims-per-case", type=int, default=CLAIMS_PER_CASE)
    parser.add_argument("--batch-size", type=int, default=2)
    args = parser.parse_args()
    install()                       # the fan-out's shard runs, as a command's flows get them
    print(json.dumps(run(args.db, args.base_url, args.concurrency, args.claims_per_case, args.batch_size)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
