"""CaseFacts stages. Each stage reads what the previous one left, asks the LLM through cached jobs,
writes its own table through the gate, and records every dropped claim with its reason."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from caseforge.artifacts import publish_table
from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.config import Backends
from caseforge.load import CuratedTable, gate_and_load
from caseforge.stage_report import StageReport
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.calibration import calibrate_window
from caseforge.tasks.casefacts.chains import overlap_groups
from caseforge.tasks.casefacts.config import BuildConfig
from caseforge.tasks.casefacts.leaks import find_leaks
from caseforge.tasks.casefacts.screening import screen_pairs
from caseforge.tasks.casefacts.splits import Candidate, assign_splits, keep_one_per_fact
from caseforge.tasks.casefacts.temporal import check_overruling
from caseforge.text import html_to_text
from caseforge.warehouse.statements import run_sql, transaction

log = logging.getLogger(__name__)
KINDS = ("contradiction", "overlap")
DELIVERABLE = "claims"      # curated.casefacts_claims; every other casefacts_* table is a build intermediate


@dataclass
class BuildContext:
    con: duckdb.DuckDBPyConnection
    run_id: int | None
    report: StageReport
    config: BuildConfig
    backends: Backends | dict            # per step and role; a dict of role → backend (test doubles) works too
    embedder: object = None
    cases: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self):
        if isinstance(self.backends, dict):
            self.backends = Backends(fixed=self.backends)

    def backend(self, step: str):
        """The backend answering `step` (its role from the config; its model from the settings)."""
        return self.backends.for_step(f"casefacts.{step}", self.config.role_of(step))

    def case(self, case_id: int) -> dict:
        return self._by_id[int(case_id)]

    def load_cases(self) -> None:
        self.cases = run_sql(self.con, "casefacts/source_cases.sql", {"limit": self.config.limit}).df()
        self._by_id = {int(r["case_id"]): r for r in self.cases.to_dict("records")}


def _params(config: BuildConfig, step: str, max_tokens: int = 400) -> SamplingParams:
    return SamplingParams(temperature=config.temperature, top_p=config.top_p, max_tokens=max_tokens,
                          seed=config.seed)


def _job(ctx: BuildContext, step: str, requests: list, model_cls):
    backend = ctx.backend(step)
    result = run_job(ctx.con, f"casefacts.{step}", backend, requests, model_cls)
    for name, value in result.counts().items():
        ctx.report.add(f"{step}.{name}", value)
    ctx.report.add("cache_hits", result.cache_hits)        # the name every stage shares (nightly summary)
    if requests:
        run_sql(ctx.con, "casefacts/record_build_step.sql",
                [ctx.run_id, step, backend.model, requests[0].template_id, requests[0].template_sha,
                 len(requests)])
    return result


def stage_schema(table: str) -> str:
    """Where casefacts_<table> lives: curated for the dataset users query, build for the stage tables
    only later stages (and the dataset card) read back."""
    return "curated" if table == DELIVERABLE else "build"


def _load(ctx: BuildContext, table: str, frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Gate a stage table and replace <stage_schema>.casefacts_<table>; returns the rows that passed, in key
    order."""
    name = f"casefacts_{table}"
    identifiers = {"schema": stage_schema(table), "table": name, "key": key}
    if frame.empty:
        _clear(ctx, identifiers)
        ctx.report.add(f"{table}.rows", 0)
        _stage_artifact(table, 0, 0, [])
        return run_sql(ctx.con, "casefacts/stage_rows.sql", identifiers=identifiers).df()   # empty, with its columns
    deliverable = table == DELIVERABLE
    outcome = gate_and_load(ctx.con, ctx.run_id, frame, CuratedTable(
        name, "casefacts/replace_stage_table.sql", key, identifiers,
        change_counts_sql="ops/row_change_counts.sql" if deliverable else None))
    if not outcome.staged and not (deliverable and outcome.batch_rejected):
        # nothing passed the gate: this build's stage holds no row (never the last build's rows); a rejected batch
        # of the deliverable leaves curated as it was, as every rejected batch does
        _clear(ctx, identifiers)
    # the dataset's claims are the build's records: new/changed in the columns every stage shares
    outcome.report_to(ctx.report, f"{table}.rows", changes_prefix=f"{table}.", records=deliverable)
    _stage_artifact(table, outcome.staged, outcome.quarantined, outcome.reasons)
    # in key order: later stages index rows by position (pair orientation, screening), so it must not vary
    return run_sql(ctx.con, "casefacts/stage_rows.sql", identifiers=identifiers).df()


def _clear(ctx: BuildContext, identifiers: dict) -> None:
    with transaction(ctx.con):
        run_sql(ctx.con, "ops/clear_staging_table.sql", identifiers=identifiers)
        run_sql(ctx.con, "casefacts/replace_stage_table.sql", identifiers=identifiers)


def _stage_artifact(table: str, staged: int, quarantined: int, reasons: list[str]) -> None:
    rows = [{"table": f"{stage_schema(table)}.casefacts_{table}", "rows": staged, "quarantined": quarantined,
             "problems": len(reasons)}]
    publish_table(f"casefacts-{table}", rows, "; ".join(reasons[:20]) or f"casefacts stage table {table}")


def _clean(text: str | None) -> str:
    return " ".join((html_to_text(text or "") or "").split())


# 1. generation ---------------------------------------------------------------------------------
def generate_claims(ctx: BuildContext) -> pd.DataFrame:
    requests = [request_from_template(
        f"gen:{r['case_id']}", "casefacts/generate_claims.j2", params=_params(ctx.config, "generate", 2500),
        facts=_clean(r["facts"]), question=_clean(r["question"]), conclusion=_clean(r["conclusion"]))
        for r in ctx.cases.to_dict("records")]
    result = _job(ctx, "generate", requests, out.GeneratedClaims)
    rows = []
    for r in ctx.cases.to_dict("records"):
        key = f"gen:{r['case_id']}"
        if key in result.failures:
            ctx.report.fail(f"generate case {r['case_id']}: no claims ({result.failures[key].reason[:200]})")
            continue
        seen = set()
        for i, claim in enumerate(result.outputs[key].claims):
            claim = _clean(claim)
            if not claim or claim.lower() in seen:
                ctx.report.add("generate.empty_or_duplicate_dropped")
                continue
            seen.add(claim.lower())
            rows.append({"claim_id": f"c{r['case_id']}-{i}", "case_id": int(r["case_id"]), "claim_index": i,
                         "claim": claim, "model": ctx.backend("generate").model})
    return _load(ctx, "generated", pd.DataFrame(rows), "claim_id")


# 2. factuality (closed world: the claim's own case only) -----------------------------------------
def _leaks(ctx: BuildContext, claim: str, case_ids: list[int]) -> list[str]:
    """Identifiers in a claim (party names, dates, citations, court phrasing): it must state a principle."""
    cases = [ctx.case(c) for c in case_ids]
    return find_leaks(claim, [c["name"] for c in cases],
                      {c["name"]: (c["first_party"], c["second_party"]) for c in cases})


def check_factuality(ctx: BuildContext, generated: pd.DataFrame) -> pd.DataFrame:
    """Each claim against its own case only; a claim that names its parties, dates or citations is removed
    first, with the leaks as its reason (no call is spent on it)."""
    requests, leaked = [], {}
    for r in generated.to_dict("records"):
        case = ctx.case(r["case_id"])
        leaks = _leaks(ctx, r["claim"], [r["case_id"]])
        if leaks:
            leaked[r["claim_id"]] = "; ".join(leaks)[:500]
            continue
        requests.append(request_from_template(
            f"fact:{r['claim_id']}", "casefacts/check_factuality.j2", params=_params(ctx.config, "factuality"),
            claim=r["claim"], facts=_clean(case["facts"]), question=_clean(case["question"]),
            conclusion=_clean(case["conclusion"])))
    result = _job(ctx, "factuality", requests, out.Factuality)
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
    table = _load(ctx, "factuality", pd.DataFrame(rows), "claim_id")
    ctx.report.add("factuality.removed", int((table["status"] != "supported").sum()) if len(table) else 0)
    keep = set(table.loc[table["status"] == "supported", "claim_id"]) if len(table) else set()
    return generated[generated["claim_id"].isin(keep)].reset_index(drop=True)


# 3. same-case contradictions and redundancies -------------------------------------------------------
def _case_pairs(claims: pd.DataFrame) -> list[tuple[dict, dict]]:
    pairs = []
    for _, group in claims.groupby("case_id", sort=True):
        items = group.sort_values("claim_id").to_dict("records")
        pairs += [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]
    return pairs


def resolve_same_case(ctx: BuildContext, claims: pd.DataFrame) -> pd.DataFrame:
    pairs = _case_pairs(claims)
    pid = {id(p): f"{p[0]['claim_id']}|{p[1]['claim_id']}" for p in pairs}
    contra = _job(ctx, "same_case_contradiction", [request_from_template(
        f"scc:{pid[id(p)]}", "casefacts/same_case_contradiction.j2", params=_params(ctx.config, "scc"),
        claim1=p[0]["claim"], claim2=p[1]["claim"]) for p in pairs], out.Contradiction)
    redund = _job(ctx, "same_case_redundancy", [request_from_template(
        f"scr:{pid[id(p)]}", "casefacts/same_case_redundancy.j2", params=_params(ctx.config, "scr"),
        claim1=p[0]["claim"], claim2=p[1]["claim"]) for p in pairs], out.Redundancy)
    detected = [p for p in pairs if f"scc:{pid[id(p)]}" in contra.outputs
                and contra.outputs[f"scc:{pid[id(p)]}"].contradict]
    resolutions = _job(ctx, "same_case_resolution", [request_from_template(
        f"res:{pid[id(p)]}", "casefacts/same_case_resolution.j2", params=_params(ctx.config, "res", 700),
        claim1=p[0]["claim"], claim2=p[1]["claim"], facts=_clean(ctx.case(p[0]["case_id"])["facts"]),
        conclusion=_clean(ctx.case(p[0]["case_id"])["conclusion"])) for p in detected], out.SameCaseResolution)

    dropped: dict[str, str] = {}
    decided_by: dict[str, str] = {}          # claim_id dropped (or added) -> the pair whose decision did it
    added: list[dict] = []
    rows = []
    for p in pairs:
        a, b = p
        key = pid[id(p)]
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
                    corrected = _clean(res.corrected_claim)
                    if res.choice == "merged" and corrected:
                        row["corrected_claim"] = corrected
                        added.append({"claim_id": f"{a['claim_id']}+m", "case_id": int(a["case_id"]),
                                      "claim": corrected, "origin": "merged_correction"})
                        decided_by[f"{a['claim_id']}+m"] = row["pair_id"]
                decided_by.update({c["claim_id"]: row["pair_id"] for c in (a, b) if c["claim_id"] in dropped})
        rows.append(row)
    for p in pairs:
        a, b = p
        key = pid[id(p)]
        row = _same_case_row("redundancy", key, a, b)
        if f"scr:{key}" in redund.failures:
            row.update(resolution="llm_failed", reason=redund.failures[f"scr:{key}"].reason[:300])
            ctx.report.add("same_case.check_failed")
        else:
            verdict = redund.outputs[f"scr:{key}"]
            row.update(detected=verdict.redundant, reason=verdict.reason, resolution="keep_both")
            if verdict.redundant:
                row["resolution"] = f"claim{verdict.better}"
                if a["claim_id"] not in dropped and b["claim_id"] not in dropped:
                    worse = b if verdict.better == 1 else a
                    dropped[worse["claim_id"]] = f"redundant with {key}: claim{verdict.better} better written"
                    decided_by[worse["claim_id"]] = row["pair_id"]
                    row["applied"] = True
        rows.append(row)
    passed = _load(ctx, "same_case_pairs", pd.DataFrame(rows), "pair_id")
    rejected = {row["pair_id"] for row in rows} - set(passed["pair_id"])
    for row in rows:
        if row["pair_id"] in rejected and row["applied"] and row["resolution"] != "llm_failed":
            # a decision is only as good as the reasoning behind it: the gate quarantined this one's, so it does
            # not stand; a contradiction it was to resolve stays unresolved, and both its claims leave
            undone = {claim_id for claim_id, pair_id in decided_by.items() if pair_id == row["pair_id"]}
            for claim_id in undone:
                dropped.pop(claim_id, None)
            added = [claim for claim in added if claim["claim_id"] not in undone]
            if row["kind"] == "contradiction":
                for claim_id in (row["claim_id_1"], row["claim_id_2"]):
                    dropped.setdefault(claim_id, f"unresolved same-case contradiction {row['pair_id']}: its "
                                                 "resolution was rejected by the content gate")
            ctx.report.add("same_case.decisions_rejected")
    for claim_id, reason in sorted(dropped.items()):
        ctx.report.add("same_case.removed")
        log.debug("dropped %s: %s", claim_id, reason)
    kept = claims[~claims["claim_id"].isin(dropped)][["claim_id", "case_id", "claim"]].copy()
    kept["origin"] = "generated"
    kept = pd.concat([kept, pd.DataFrame(added, columns=list(kept.columns))], ignore_index=True)
    kept["case_id"] = kept["case_id"].astype("int64")
    return _load(ctx, "kept_claims", kept, "claim_id")


def _same_case_row(kind: str, key: str, a: dict, b: dict) -> dict:
    """A curated.same_case_pairs row for one pair before any check has said anything."""
    return {"pair_id": f"{kind}:{key}", "case_id": int(a["case_id"]), "kind": kind,
            "claim_id_1": a["claim_id"], "claim_id_2": b["claim_id"], "detected": None, "resolution": None,
            "corrected_claim": None, "applied": False, "reason": None}


# 4. embeddings -------------------------------------------------------------------------------------
def embed_claims(ctx: BuildContext, kept: pd.DataFrame) -> np.ndarray:
    vectors = ctx.embedder.encode(kept["claim"].tolist()) if len(kept) else np.zeros((0, 384), np.float32)
    frame = pd.DataFrame({"claim_id": kept["claim_id"], "model": ctx.embedder.name,
                          "vector": [v.tolist() for v in vectors]})
    _load(ctx, "embeddings", frame, "claim_id")
    return vectors


# 5–6. cross-case screening, calibration, checks -----------------------------------------------------------
def _judge_pairs(ctx: BuildContext, kind: str, pairs: list[tuple[str, str]], kept: pd.DataFrame):
    text = dict(zip(kept["claim_id"], kept["claim"]))
    step, template, model_cls = (("cross_contradiction", "casefacts/cross_contradiction.j2", out.Contradiction)
                                 if kind == "contradiction" else
                                 ("cross_overlap", "casefacts/cross_overlap.j2", out.Overlap))
    requests = [request_from_template(f"{kind}:{a}|{b}", template, params=_params(ctx.config, step),
                                      claim1=text[a], claim2=text[b]) for a, b in pairs]
    return _job(ctx, step, requests, model_cls)


def _positive(result, kind: str, key: str) -> bool | None:
    if key in result.failures:
        return None
    answer = result.outputs[key]
    return answer.contradict if kind == "contradiction" else answer.overlap


def calibrate(ctx: BuildContext, kept: pd.DataFrame, vectors: np.ndarray) -> dict[str, tuple[float, float]]:
    ids = kept["claim_id"].to_numpy()
    screen = screen_pairs(vectors, kept["case_id"].to_numpy(), {}, ctx.config.screening, sample=True)
    sample_rows, windows = [], []
    pairs_by_bin = [(b, ids[p.left[k]], ids[p.right[k]], float(p.similarity[k]), len(p))
                    for b, p in sorted(screen.samples.items()) for k in range(len(p))]
    bounds = {}
    for kind in KINDS:
        result = _judge_pairs(ctx, kind, [(a, c) for _, a, c, _, _ in pairs_by_bin], kept)
        sims, flags, weights = [], [], []
        for b, a, c, sim, drawn in pairs_by_bin:
            positive = _positive(result, kind, f"{kind}:{a}|{c}")
            sample_rows.append({"pair_id": f"{kind}:{a}|{c}", "kind": kind, "claim_id_1": a, "claim_id_2": c,
                                "similarity": sim, "bin": b, "bin_population": screen.bin_counts.get(b, 0),
                                "detected": positive, "status": "llm_failed" if positive is None else "judged"})
            if positive is not None:
                sims.append(sim)
                flags.append(positive)
                weights.append(screen.bin_counts.get(b, 0) / max(drawn, 1))
        try:
            window = calibrate_window(np.array(sims), np.array(flags, bool), ctx.config.coverage,
                                      np.array(weights) if ctx.config.weight_by_bin_population else None,
                                      min_positives=ctx.config.min_positives)
            bounds[kind] = window.as_tuple()
            windows.append({"kind": kind, "low": window.low, "high": window.high, "positives": window.positives,
                            "judged": window.judged, "coverage": window.coverage, "method": "calibrated"})
        except ValueError as exc:
            # Too few positives to estimate a window: judge every pair that could have been sampled.
            bounds[kind] = (ctx.config.screening.sample_from, 1.0)
            windows.append({"kind": kind, "low": bounds[kind][0], "high": 1.0, "positives": int(sum(flags)),
                            "judged": len(flags), "coverage": ctx.config.coverage,
                            "method": f"fallback: {exc}"})
            ctx.report.add(f"calibration.{kind}_fallback")
    _load(ctx, "calibration_samples", pd.DataFrame(sample_rows), "pair_id")
    _load(ctx, "windows", pd.DataFrame(windows), "kind")
    return bounds


def cross_case_checks(ctx: BuildContext, kept: pd.DataFrame, vectors: np.ndarray,
                      bounds: dict[str, tuple[float, float]]) -> pd.DataFrame:
    ids = kept["claim_id"].to_numpy()
    cases = kept["case_id"].to_numpy()
    screen = screen_pairs(vectors, cases, bounds, ctx.config.screening, sample=False)
    rows = []
    for kind in KINDS:
        window = screen.windows[kind]
        pairs = [(ids[i], ids[j], float(s), int(cases[i]), int(cases[j]))
                 for i, j, s in zip(window.left, window.right, window.similarity)]
        ctx.report.add(f"cross.{kind}_pairs_in_window", len(pairs))
        result = _judge_pairs(ctx, kind, [(a, b) for a, b, *_ in pairs], kept)
        for a, b, sim, ca, cb in pairs:
            key = f"{kind}:{a}|{b}"
            positive = _positive(result, kind, key)
            rows.append({"pair_id": key, "kind": kind, "claim_id_1": a, "claim_id_2": b, "case_id_1": ca,
                         "case_id_2": cb, "similarity": sim, "detected": positive,
                         "status": "llm_failed" if positive is None else "judged",
                         "reason": (result.failures[key].reason[:300] if positive is None
                                    else result.outputs[key].reason)})
    return _load(ctx, "cross_pairs", pd.DataFrame(rows), "pair_id")


# 7. overrulings ---------------------------------------------------------------------------------------
def resolve_overrulings(ctx: BuildContext, kept: pd.DataFrame, cross: pd.DataFrame) -> pd.DataFrame:
    text = dict(zip(kept["claim_id"], kept["claim"]))
    found = cross[(cross["kind"] == "contradiction") & (cross["detected"] == True)] if len(cross) else cross  # noqa: E712
    items = found.to_dict("records") if len(found) else []

    def decided(case_id) -> str:
        value = ctx.case(case_id)["decided_date"]
        return "unknown date" if value is None or pd.isna(value) else pd.Timestamp(value).date().isoformat()

    requests = [request_from_template(
        f"ovr:{r['pair_id']}", "casefacts/resolve_overruling.j2", params=_params(ctx.config, "overruling"),
        case1_name=ctx.case(r["case_id_1"])["name"], case1_decided=decided(r["case_id_1"]),
        claim1=text[r["claim_id_1"]], conclusion1=_clean(ctx.case(r["case_id_1"])["conclusion"]),
        case2_name=ctx.case(r["case_id_2"])["name"], case2_decided=decided(r["case_id_2"]),
        claim2=text[r["claim_id_2"]], conclusion2=_clean(ctx.case(r["case_id_2"])["conclusion"]))
        for r in items]
    result = _job(ctx, "overruling", requests, out.OverrulingProposal)
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
    return _load(ctx, "overrulings", pd.DataFrame(rows), "pair_id")


# 8. overlaps (confirmations) ----------------------------------------------------------------------------
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
        f"merge:{g.anchor[0]}|{g.anchor[1]}", "casefacts/merge_overlap.j2", params=_params(ctx.config, "merge", 700),
        claim1=text[g.anchor[0]], claim2=text[g.anchor[1]]) for g in groups]
    result = _job(ctx, "overlap_merge", requests, out.MergeDecision)
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
            merged = _clean(decision.merged_claim)
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
    passed = set(_load(ctx, "merges", pd.DataFrame(rows), "group_id")["group_id"])
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


# 9. negations and their rewrite into short principles ------------------------------------------------------
def negate(ctx: BuildContext, supported: dict[str, dict], kept: pd.DataFrame) -> dict[str, str]:
    case_of = dict(zip(kept["claim_id"], kept["case_id"].astype(int)))
    ids = sorted(supported)
    neg = _job(ctx, "negate", [request_from_template(
        f"neg:{cid}", "casefacts/negate_claim.j2", params=_params(ctx.config, "negate"),
        claim=supported[cid]["claim"], facts=_clean(ctx.case(case_of[cid])["facts"]),
        conclusion=_clean(ctx.case(case_of[cid])["conclusion"])) for cid in ids], out.Negation)
    lengths = [len(supported[cid]["claim"]) for cid in ids]
    target = int(np.median(lengths)) if lengths else 120
    ok = [cid for cid in ids if f"neg:{cid}" in neg.outputs]
    rewrite = _job(ctx, "rewrite", [request_from_template(
        f"rw:{cid}", "casefacts/rewrite_principle.j2", params=_params(ctx.config, "rewrite"),
        claim=_clean(neg.outputs[f"neg:{cid}"].negation), target_chars=target) for cid in ok], out.Principle)
    rows = []
    for cid in ids:
        row = {"claim_id": cid, "negation": None, "rewrite": None, "status": "ok", "reason": None}
        if f"neg:{cid}" in neg.failures:
            row.update(status="negation_failed", reason=neg.failures[f"neg:{cid}"].reason[:300])
        else:
            row["negation"] = _clean(neg.outputs[f"neg:{cid}"].negation)
            if f"rw:{cid}" in rewrite.failures:
                row.update(status="rewrite_failed", reason=rewrite.failures[f"rw:{cid}"].reason[:300])
            else:
                row["rewrite"] = _clean(rewrite.outputs[f"rw:{cid}"].principle)
                leaks = _leaks(ctx, row["rewrite"], [case_of[cid]])
                if leaks:
                    row.update(status="rewrite_leaks_identifiers", reason="; ".join(leaks)[:300])
        if row["status"] != "ok":
            ctx.report.add("negation.failed")
        rows.append(row)
    # only what passed the gate becomes a REFUTED claim: a degenerate negation or rewrite is quarantined
    table = _load(ctx, "negations", pd.DataFrame(rows), "claim_id")
    ok = table[table["status"] == "ok"] if len(table) else table
    return dict(zip(ok["claim_id"], ok["rewrite"])) if len(ok) else {}


# 10. final dataset -------------------------------------------------------------------------------------------
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
        return _load(ctx, "claims", pd.DataFrame(columns=["claim_id", "fact_id", "claim", "label",
                                                          "evidence_case_ids", "overruling_case_ids", "split"]),
                     "claim_id")
    frame["split"] = frame["fact_id"].map(splits)
    frame["evidence_case_ids"] = frame["evidence_case_ids"].map(json.dumps)
    frame["overruling_case_ids"] = frame["overruling_case_ids"].map(json.dumps)
    return _load(ctx, "claims", frame.sort_values("claim_id").reset_index(drop=True), "claim_id")


def plain_stage(name: str, fn):
    return fn


def run_pipeline(ctx: BuildContext, stage=plain_stage) -> pd.DataFrame:
    """All stages in order; returns curated.casefacts_claims as built.

    `stage(name, fn)` wraps each stage function; the Prefect flow passes one that makes it a task.
    """
    ctx.load_cases()
    ctx.report.add("cases", len(ctx.cases))
    generated = stage("generate", generate_claims)(ctx)
    factual = stage("factuality", check_factuality)(ctx, generated)
    kept = stage("same-case", resolve_same_case)(ctx, factual)
    vectors = stage("embed", embed_claims)(ctx, kept)
    bounds = stage("calibrate-windows", calibrate)(ctx, kept, vectors)
    cross = stage("cross-case", cross_case_checks)(ctx, kept, vectors, bounds)
    overrulings = stage("overrulings", resolve_overrulings)(ctx, kept, cross)
    overruled = set(overrulings.loc[overrulings["accepted"] == True, "overruled_claim_id"]) if len(overrulings) else set()  # noqa: E712,E501
    final = stage("overlap-merge", merge_overlaps)(ctx, kept, cross, overruled)
    refuted = stage("negate-rewrite", negate)(ctx, {k: v for k, v in final.items() if k not in overruled}, kept)
    claims = stage("assemble-splits", assemble)(ctx, final, overrulings, refuted, kept)
    ctx.report.results["summary"] = funnel(ctx, generated, factual, kept, claims)
    return claims


def funnel(ctx: BuildContext, generated: pd.DataFrame, factual: pd.DataFrame, kept: pd.DataFrame,
           claims: pd.DataFrame) -> str:
    """What survived each check, and with which models: the line a run's summary shows. `factual` holds the
    claims that passed the factuality check."""
    supported = len(factual)
    labels = ", ".join(f"{n} {label}" for label, n in sorted(claims["label"].value_counts().items())) \
        if len(claims) else "none"
    return (f"{len(generated)} claims generated from {len(ctx.cases)} cases by {ctx.backend('generate').model}; "
            f"{supported} of {len(generated)} survived factuality with {ctx.backend('factuality').model}; "
            f"{len(kept)} after the same-case checks; {len(claims)} in the dataset ({labels})")
