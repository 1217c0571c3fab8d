"""Stage 3: contradictions and redundancies among the claims of one case: each pair checked for both, a
contradiction resolved (one claim kept, both dropped, or merged into a corrected claim), the worse-written of a
redundant pair dropped; a decision whose reasoning the content gate quarantined does not stand."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, clean, job, load_stage, params

log = logging.getLogger(__name__)


def _case_pairs(claims: pd.DataFrame) -> list[tuple[dict, dict]]:
    pairs = []
    for _, group in claims.groupby("case_id", sort=True):
        items = group.sort_values("claim_id").to_dict("records")
        pairs += [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]
    return pairs


@dataclass
class _Decisions:
    """What the checks decided for the claims of every case, as the pairs are gone through."""
    dropped: dict[str, str] = field(default_factory=dict)       # claim_id -> why it leaves
    decided_by: dict[str, str] = field(default_factory=dict)    # claim_id dropped (or added) -> the pair that did it
    added: list[dict] = field(default_factory=list)             # corrected claims a merge put in their pair's place


def resolve_same_case(ctx: BuildContext, claims: pd.DataFrame) -> pd.DataFrame:
    pairs = _case_pairs(claims)
    keys = [f"{a['claim_id']}|{b['claim_id']}" for a, b in pairs]
    contra, redund, resolutions = _judge(ctx, pairs, keys)
    decisions = _Decisions()
    rows = _contradiction_rows(ctx, pairs, keys, contra, resolutions, decisions)
    rows += _redundancy_rows(ctx, pairs, keys, redund, decisions)
    passed = load_stage(ctx, "same_case_pairs", pd.DataFrame(rows), "pair_id")
    _undo_rejected_decisions(ctx, rows, set(passed["pair_id"]), decisions)
    for claim_id, reason in sorted(decisions.dropped.items()):
        ctx.report.add("same_case.removed")
        log.debug("dropped %s: %s", claim_id, reason)
    kept = claims[~claims["claim_id"].isin(decisions.dropped)][["claim_id", "case_id", "claim"]].copy()
    kept["origin"] = "generated"
    kept = pd.concat([kept, pd.DataFrame(decisions.added, columns=list(kept.columns))], ignore_index=True)
    kept["case_id"] = kept["case_id"].astype("int64")
    return load_stage(ctx, "kept_claims", kept, "claim_id")


def _judge(ctx: BuildContext, pairs: list[tuple[dict, dict]], keys: list[str]):
    """Every pair checked for a contradiction and for redundancy; each contradiction found, resolved."""
    contra = job(ctx, "same_case_contradiction", [request_from_template(
        f"scc:{key}", "casefacts/same_case_contradiction.j2", params=params(ctx.config, "scc"),
        claim1=a["claim"], claim2=b["claim"]) for (a, b), key in zip(pairs, keys)], out.Contradiction)
    redund = job(ctx, "same_case_redundancy", [request_from_template(
        f"scr:{key}", "casefacts/same_case_redundancy.j2", params=params(ctx.config, "scr"),
        claim1=a["claim"], claim2=b["claim"]) for (a, b), key in zip(pairs, keys)], out.Redundancy)
    detected = [(p, key) for p, key in zip(pairs, keys)
                if f"scc:{key}" in contra.outputs and contra.outputs[f"scc:{key}"].contradict]
    resolutions = job(ctx, "same_case_resolution", [request_from_template(
        f"res:{key}", "casefacts/same_case_resolution.j2", params=params(ctx.config, "res", 700),
        claim1=a["claim"], claim2=b["claim"], facts=clean(ctx.case(a["case_id"])["facts"]),
        conclusion=clean(ctx.case(a["case_id"])["conclusion"])) for (a, b), key in detected], out.SameCaseResolution)
    return contra, redund, resolutions


def _contradiction_rows(ctx: BuildContext, pairs, keys, contra, resolutions, decisions: _Decisions) -> list[dict]:
    rows = []
    dropped, decided_by = decisions.dropped, decisions.decided_by
    for (a, b), key in zip(pairs, keys):
        row = _same_case_row("contradiction", key, a, b)
        if f"scc:{key}" in contra.failures:
            row.update(resolution="llm_failed", reason=contra.failures[f"scc:{key}"].reason[:300])
            rows.append(row)
            ctx.report.add("same_case.check_failed")
            continue
        verdict = contra.outputs[f"scc:{key}"]
        row.update(detected=verdict.contradict, reason=verdict.reason)
        if verdict.contradict:
            if f"res:{key}" in resolutions.failures:
                # An unresolved contradiction cannot be trusted either way: both claims leave, with the reason.
                row.update(resolution="llm_failed", applied=True)
                for c in (a, b):
                    dropped.setdefault(c["claim_id"], f"unresolved same-case contradiction {key}")
            elif a["claim_id"] in dropped or b["claim_id"] in dropped:
                row.update(resolution=resolutions.outputs[f"res:{key}"].choice, reason="already dropped")
            else:
                res = resolutions.outputs[f"res:{key}"]
                row.update(resolution=res.choice, reason=res.reason, applied=True)
                if res.choice == "claim1":
                    dropped[b["claim_id"]] = f"same-case contradiction {key}: claim1 kept"
                elif res.choice == "claim2":
                    dropped[a["claim_id"]] = f"same-case contradiction {key}: claim2 kept"
                else:
                    for c in (a, b):
                        dropped[c["claim_id"]] = f"same-case contradiction {key}: {res.choice}"
                    corrected = clean(res.corrected_claim)
                    if res.choice == "merged" and corrected:
                        row["corrected_claim"] = corrected
                        decisions.added.append({"claim_id": f"{a['claim_id']}+m", "case_id": int(a["case_id"]),
                                                "claim": corrected, "origin": "merged_correction"})
                        decided_by[f"{a['claim_id']}+m"] = row["pair_id"]
                decided_by.update({c["claim_id"]: row["pair_id"] for c in (a, b) if c["claim_id"] in dropped})
        rows.append(row)
    return rows


def _redundancy_rows(ctx: BuildContext, pairs, keys, redund, decisions: _Decisions) -> list[dict]:
    rows = []
    for (a, b), key in zip(pairs, keys):
        row = _same_case_row("redundancy", key, a, b)
        if f"scr:{key}" in redund.failures:
            row.update(resolution="llm_failed", reason=redund.failures[f"scr:{key}"].reason[:300])
            ctx.report.add("same_case.check_failed")
        else:
            verdict = redund.outputs[f"scr:{key}"]
            row.update(detected=verdict.redundant, reason=verdict.reason, resolution="keep_both")
            if verdict.redundant:
                row["resolution"] = f"claim{verdict.better}"
                if a["claim_id"] not in decisions.dropped and b["claim_id"] not in decisions.dropped:
                    worse = b if verdict.better == 1 else a
                    decisions.dropped[worse["claim_id"]] = (f"redundant with {key}: claim{verdict.better} better "
                                                            "written")
                    decisions.decided_by[worse["claim_id"]] = row["pair_id"]
                    row["applied"] = True
        rows.append(row)
    return rows


def _undo_rejected_decisions(ctx: BuildContext, rows: list[dict], passed: set[str], decisions: _Decisions) -> None:
    """A decision is only as good as the reasoning behind it: one whose row the gate quarantined does not stand; a
    contradiction it was to resolve stays unresolved, and both its claims leave."""
    rejected = {row["pair_id"] for row in rows} - passed
    for row in rows:
        if row["pair_id"] in rejected and row["applied"] and row["resolution"] != "llm_failed":
            undone = {claim_id for claim_id, pair_id in decisions.decided_by.items() if pair_id == row["pair_id"]}
            for claim_id in undone:
                decisions.dropped.pop(claim_id, None)
            decisions.added = [claim for claim in decisions.added if claim["claim_id"] not in undone]
            if row["kind"] == "contradiction":
                for claim_id in (row["claim_id_1"], row["claim_id_2"]):
                    decisions.dropped.setdefault(claim_id, f"unresolved same-case contradiction {row['pair_id']}: "
                                                           "its resolution was rejected by the content gate")
            ctx.report.add("same_case.decisions_rejected")


def _same_case_row(kind: str, key: str, a: dict, b: dict) -> dict:
    """A curated.same_case_pairs row for one pair before any check has said anything."""
    return {"pair_id": f"{kind}:{key}", "case_id": int(a["case_id"]), "kind": kind,
            "claim_id_1": a["claim_id"], "claim_id_2": b["claim_id"], "detected": None, "resolution": None,
            "corrected_claim": None, "applied": False, "reason": None}
