"""Stage 2: factuality, in a closed world: each claim against its own case only. A claim that names its parties,
dates or citations is removed first, with the leaks as its reason (no call is spent on it)."""
from __future__ import annotations

import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, claim_leaks, clean, job, load_stage, params


def check_factuality(ctx: BuildContext, generated: pd.DataFrame) -> pd.DataFrame:
    """Each claim against its own case only; a claim that names its parties, dates or citations is removed
    first, with the leaks as its reason (no call is spent on it)."""
    requests, leaked = [], {}
    for r in generated.to_dict("records"):
        case = ctx.case(r["case_id"])
        leaks = claim_leaks(ctx, r["claim"], [r["case_id"]])
        if leaks:
            leaked[r["claim_id"]] = "; ".join(leaks)[:500]
            continue
        requests.append(request_from_template(
            f"fact:{r['claim_id']}", "casefacts/check_factuality.j2", params=params(ctx.config, "factuality"),
            claim=r["claim"], facts=clean(case["facts"]), question=clean(case["question"]),
            conclusion=clean(case["conclusion"])))
    result = job(ctx, "factuality", requests, out.Factuality)
    rows = []
    for r in generated.to_dict("records"):
        key = f"fact:{r['claim_id']}"
        if r["claim_id"] in leaked:
            rows.append({"claim_id": r["claim_id"], "case_id": r["case_id"], "supported": None,
                         "status": "leaks_identifiers", "reason": leaked[r["claim_id"]], "model": None})
        elif key in result.failures:
            rows.append({"claim_id": r["claim_id"], "case_id": r["case_id"], "supported": None,
                         "status": "llm_failed", "reason": result.failures[key].reason[:500],
                         "model": ctx.backend("factuality").model})
        else:
            verdict = result.outputs[key]
            rows.append({"claim_id": r["claim_id"], "case_id": r["case_id"], "supported": verdict.supported,
                         "status": "supported" if verdict.supported else "unsupported", "reason": verdict.reason,
                         "model": ctx.backend("factuality").model})
    table = load_stage(ctx, "factuality", pd.DataFrame(rows), "claim_id")
    ctx.report.add("factuality.removed", int((table["status"] != "supported").sum()) if len(table) else 0)
    keep = set(table.loc[table["status"] == "supported", "claim_id"]) if len(table) else set()
    return generated[generated["claim_id"].isin(keep)].reset_index(drop=True)
