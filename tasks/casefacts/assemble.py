"""Stage 10: the dataset: SUPPORTED, REFUTED and OVERRULED claims, one per fact, split into train and test by
fact, into curated.casefacts_claims."""
from __future__ import annotations

import json

import pandas as pd

from caseforge.tasks.casefacts.context import BuildContext, load_stage
from caseforge.tasks.casefacts.splits import Candidate, assign_splits, keep_one_per_fact


def assemble(ctx: BuildContext, final: dict[str, dict], overrulings: pd.DataFrame,
             refuted: dict[str, str], kept: pd.DataFrame) -> pd.DataFrame:
    accepted = overrulings[overrulings["accepted"] == True] if len(overrulings) else overrulings  # noqa: E712
    overruled_by: dict[str, set[int]] = {}
    for r in accepted.to_dict("records") if len(accepted) else []:
        overruled_by.setdefault(r["overruled_claim_id"], set()).add(int(r["overruling_case_id"]))
    case_of = dict(zip(kept["claim_id"], kept["case_id"].astype(int)))
    text = dict(zip(kept["claim_id"], kept["claim"]))
    rows: dict[str, dict] = {}
    for cid, item in final.items():
        if cid in overruled_by:
            continue
        rows[cid] = {"claim_id": cid, "fact_id": f"f:{cid}", "claim": item["claim"], "label": "SUPPORTED",
                     "evidence_case_ids": sorted(item["evidence_case_ids"]), "overruling_case_ids": []}
        if cid in refuted:
            rows[f"{cid}~neg"] = {"claim_id": f"{cid}~neg", "fact_id": f"f:{cid}", "claim": refuted[cid],
                                  "label": "REFUTED", "evidence_case_ids": sorted(item["evidence_case_ids"]),
                                  "overruling_case_ids": []}
    for cid, newer in overruled_by.items():
        rows[cid] = {"claim_id": cid, "fact_id": f"f:{cid}", "claim": text[cid], "label": "OVERRULED",
                     "evidence_case_ids": sorted({case_of[cid], *newer}), "overruling_case_ids": sorted(newer)}
    candidates = [Candidate(r["claim_id"], r["fact_id"], r["label"]) for r in rows.values()]
    chosen = keep_one_per_fact(candidates, ctx.config.seed)
    splits = assign_splits([c.fact_id for c in chosen], ctx.config.test_fraction, ctx.config.seed)
    frame = pd.DataFrame([rows[c.claim_id] for c in chosen])
    if frame.empty:
        return load_stage(ctx, "claims", pd.DataFrame(columns=["claim_id", "fact_id", "claim", "label",
                                                          "evidence_case_ids", "overruling_case_ids", "split"]),
                     "claim_id")
    frame["split"] = frame["fact_id"].map(splits)
    frame["evidence_case_ids"] = frame["evidence_case_ids"].map(json.dumps)
    frame["overruling_case_ids"] = frame["overruling_case_ids"].map(json.dumps)
    return load_stage(ctx, "claims", frame.sort_values("claim_id").reset_index(drop=True), "claim_id")
