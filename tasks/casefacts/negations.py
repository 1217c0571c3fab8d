"""Stage 9: negations, rewritten into short principles: each supported claim's negation becomes its REFUTED
counterpart when the negation, its rewrite and the content gate all hold (and the rewrite names no party)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, claim_leaks, clean, job, load_stage, params


def negate(ctx: BuildContext, supported: dict[str, dict], kept: pd.DataFrame) -> dict[str, str]:
    case_of = dict(zip(kept["claim_id"], kept["case_id"].astype(int)))
    ids = sorted(supported)
    neg = job(ctx, "negate", [request_from_template(
        f"neg:{cid}", "casefacts/negate_claim.j2", params=params(ctx.config, "negate"),
        claim=supported[cid]["claim"], facts=clean(ctx.case(case_of[cid])["facts"]),
        conclusion=clean(ctx.case(case_of[cid])["conclusion"])) for cid in ids], out.Negation)
    lengths = [len(supported[cid]["claim"]) for cid in ids]
    target = int(np.median(lengths)) if lengths else 120
    ok = [cid for cid in ids if f"neg:{cid}" in neg.outputs]
    rewrite = job(ctx, "rewrite", [request_from_template(
        f"rw:{cid}", "casefacts/rewrite_principle.j2", params=params(ctx.config, "rewrite"),
        claim=clean(neg.outputs[f"neg:{cid}"].negation), target_chars=target) for cid in ok], out.Principle)
    rows = []
    for cid in ids:
        row = {"claim_id": cid, "negation": None, "rewrite": None, "status": "ok", "reason": None}
        if f"neg:{cid}" in neg.failures:
            row.update(status="negation_failed", reason=neg.failures[f"neg:{cid}"].reason[:300])
        else:
            row["negation"] = clean(neg.outputs[f"neg:{cid}"].negation)
            if f"rw:{cid}" in rewrite.failures:
                row.update(status="rewrite_failed", reason=rewrite.failures[f"rw:{cid}"].reason[:300])
            else:
                row["rewrite"] = clean(rewrite.outputs[f"rw:{cid}"].principle)
                leaks = claim_leaks(ctx, row["rewrite"], [case_of[cid]])
                if leaks:
                    row.update(status="rewrite_leaks_identifiers", reason="; ".join(leaks)[:300])
        if row["status"] != "ok":
            ctx.report.add("negation.failed")
        rows.append(row)
    # only what passed the gate becomes a REFUTED claim: a degenerate negation or rewrite is quarantined
    table = load_stage(ctx, "negations", pd.DataFrame(rows), "claim_id")
    ok = table[table["status"] == "ok"] if len(table) else table
    return dict(zip(ok["claim_id"], ok["rewrite"])) if len(ok) else {}
