"""Stage 8: overlaps (confirmations): claims of different cases that state one rule are grouped, and each group
becomes one claim (merged, or one of its anchors kept) with every case as its evidence."""
from __future__ import annotations

import json

import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.chains import overlap_groups
from caseforge.tasks.casefacts.context import BuildContext, clean, job, load_stage, params


def merge_overlaps(ctx: BuildContext, kept: pd.DataFrame, cross: pd.DataFrame,
                   overruled: set[str]) -> dict[str, dict]:
    """Claim id → {claim, evidence_case_ids}; claims absorbed into a group are left out (recorded)."""
    text = dict(zip(kept["claim_id"], kept["claim"]))
    case_of = dict(zip(kept["claim_id"], kept["case_id"].astype(int)))
    found = cross[(cross["kind"] == "overlap") & (cross["detected"] == True)] if len(cross) else cross  # noqa: E712
    pairs = [(r["claim_id_1"], r["claim_id_2"], float(r["similarity"])) for r in found.to_dict("records")
             if r["claim_id_1"] not in overruled and r["claim_id_2"] not in overruled] if len(found) else []
    groups = overlap_groups(pairs)
    requests = [request_from_template(
        f"merge:{g.anchor[0]}|{g.anchor[1]}", "casefacts/merge_overlap.j2", params=params(ctx.config, "merge", 700),
        claim1=text[g.anchor[0]], claim2=text[g.anchor[1]]) for g in groups]
    result = job(ctx, "overlap_merge", requests, out.MergeDecision)
    final = {cid: {"claim": text[cid], "evidence_case_ids": [case_of[cid]]} for cid in kept["claim_id"]}
    rows, kept_ids = [], []
    for g in groups:
        key = f"merge:{g.anchor[0]}|{g.anchor[1]}"
        evidence = sorted({case_of[c] for c in g.claim_ids})
        row = {"group_id": "+".join(g.claim_ids), "claim_ids": json.dumps(list(g.claim_ids)),
               "anchor_claim_id_1": g.anchor[0], "anchor_claim_id_2": g.anchor[1], "action": None,
               "result_claim": None, "evidence_case_ids": json.dumps(evidence), "reason": None}
        if key in result.failures:
            # Unmerged overlaps would put one rule under two fact_ids: keep the anchor's first claim only.
            row.update(action="llm_failed", reason=result.failures[key].reason[:300])
            keep_id, claim = g.anchor[0], text[g.anchor[0]]
        else:
            decision = result.outputs[key]
            merged = clean(decision.merged_claim)
            if decision.action == "merge" and merged:
                keep_id, claim = g.anchor[0], merged
            else:
                keep_id = g.anchor[1] if decision.action == "keep2" else g.anchor[0]
                claim = text[keep_id]
            row.update(action=decision.action, reason=decision.reason)
        row["result_claim"] = claim
        rows.append(row)
        kept_ids.append(keep_id)
    # a decision the gate quarantined (a degenerate merged claim or reasoning) is treated as a failed call
    passed = set(load_stage(ctx, "merges", pd.DataFrame(rows), "group_id")["group_id"])
    for g, row, keep_id in zip(groups, rows, kept_ids):
        claim = row["result_claim"]
        if row["group_id"] not in passed:
            keep_id, claim = g.anchor[0], text[g.anchor[0]]
            ctx.report.add("overlap.decisions_quarantined")
        for cid in g.claim_ids:
            final.pop(cid, None)
        final[keep_id] = {"claim": claim, "evidence_case_ids": json.loads(row["evidence_case_ids"])}
        ctx.report.add("overlap.claims_absorbed", len(g.claim_ids) - 1)
    return final
