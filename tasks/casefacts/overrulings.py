"""Stage 7: overrulings: a cross-case contradiction is proposed as an overruling (which case overruled which) and
accepted only when the temporal rule agrees (caseforge.tasks.casefacts.temporal)."""
from __future__ import annotations

import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, clean, job, load_stage, params
from caseforge.tasks.casefacts.temporal import check_overruling


def resolve_overrulings(ctx: BuildContext, kept: pd.DataFrame, cross: pd.DataFrame) -> pd.DataFrame:
    text = dict(zip(kept["claim_id"], kept["claim"]))
    found = cross[(cross["kind"] == "contradiction") & (cross["detected"] == True)] if len(cross) else cross  # noqa: E712
    items = found.to_dict("records") if len(found) else []

    def decided(case_id) -> str:
        value = ctx.case(case_id)["decided_date"]
        return "unknown date" if value is None or pd.isna(value) else pd.Timestamp(value).date().isoformat()

    requests = [request_from_template(
        f"ovr:{r['pair_id']}", "casefacts/resolve_overruling.j2", params=params(ctx.config, "overruling"),
        case1_name=ctx.case(r["case_id_1"])["name"], case1_decided=decided(r["case_id_1"]),
        claim1=text[r["claim_id_1"]], conclusion1=clean(ctx.case(r["case_id_1"])["conclusion"]),
        case2_name=ctx.case(r["case_id_2"])["name"], case2_decided=decided(r["case_id_2"]),
        claim2=text[r["claim_id_2"]], conclusion2=clean(ctx.case(r["case_id_2"])["conclusion"]))
        for r in items]
    result = job(ctx, "overruling", requests, out.OverrulingProposal)
    rows = []
    for r in items:
        key = f"ovr:{r['pair_id']}"
        proposal = "llm_failed" if key in result.failures else result.outputs[key].verdict
        old_claim, new_claim = ((r["claim_id_1"], r["claim_id_2"]) if proposal != "case2_overruled"
                                else (r["claim_id_2"], r["claim_id_1"]))
        old_case, new_case = ((r["case_id_1"], r["case_id_2"]) if proposal != "case2_overruled"
                              else (r["case_id_2"], r["case_id_1"]))
        old, new = ctx.case(old_case), ctx.case(new_case)
        old_date = None if pd.isna(old["decided_date"]) else pd.Timestamp(old["decided_date"]).date()
        new_date = None if pd.isna(new["decided_date"]) else pd.Timestamp(new["decided_date"]).date()
        if proposal in ("case1_overruled", "case2_overruled"):
            verdict = check_overruling(old_date, new_date, new["disposition"])
            accepted, reason = verdict.accepted, verdict.reason
        elif proposal == "consistent":
            accepted, reason = False, "judged consistent: " + result.outputs[key].reason
        else:
            accepted, reason = False, "overruling judgement failed: " + result.failures[key].reason[:300]
        ctx.report.add("overruling.accepted" if accepted else "overruling.rejected")
        rows.append({"pair_id": r["pair_id"], "overruled_claim_id": old_claim, "overruling_claim_id": new_claim,
                     "overruled_case_id": int(old_case), "overruling_case_id": int(new_case),
                     "overruled_decided": old_date, "overruling_decided": new_date,
                     "overruling_disposition": new["disposition"], "proposal": proposal, "accepted": accepted,
                     "reason": reason})
    return load_stage(ctx, "overrulings", pd.DataFrame(rows), "pair_id")
