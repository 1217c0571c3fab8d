"""Stage 1: claims generated from each case's facts, question and conclusion (one request per case); empty and
repeated claims of a case are dropped."""
from __future__ import annotations

import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, clean, job, load_stage, params


def generate_claims(ctx: BuildContext) -> pd.DataFrame:
    requests = [request_from_template(
        f"gen:{r['case_id']}", "casefacts/generate_claims.j2", params=params(ctx.config, "generate", 2500),
        facts=clean(r["facts"]), question=clean(r["question"]), conclusion=clean(r["conclusion"]))
        for r in ctx.cases.to_dict("records")]
    result = job(ctx, "generate", requests, out.GeneratedClaims)
    rows = []
    for r in ctx.cases.to_dict("records"):
        key = f"gen:{r['case_id']}"
        if key in result.failures:
            ctx.report.fail(f"generate case {r['case_id']}: no claims ({result.failures[key].reason[:200]})")
            continue
        seen = set()
        for i, claim in enumerate(result.outputs[key].claims):
            claim = clean(claim)
            if not claim or claim.lower() in seen:
                ctx.report.add("generate.empty_or_duplicate_dropped")
                continue
            seen.add(claim.lower())
            rows.append({"claim_id": f"c{r['case_id']}-{i}", "case_id": int(r["case_id"]), "claim_index": i,
                         "claim": claim, "model": ctx.backend("generate").model})
    return load_stage(ctx, "generated", pd.DataFrame(rows), "claim_id")
