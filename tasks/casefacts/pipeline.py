"""The CaseFacts stages in order, one module each. Each stage reads what the previous one left, asks the LLM
through cached jobs, writes its own table through the gate, and records every dropped claim with its reason.

    1 generate      2 factuality    3 same_case     4 embed         5 windows
    6 cross_case    7 overrulings   8 overlaps      9 negations     10 assemble
"""
from __future__ import annotations

import pandas as pd

from caseforge.tasks.casefacts.assemble import assemble
from caseforge.tasks.casefacts.context import BuildContext, stage_schema  # noqa: F401  (the build's and tests' names)
from caseforge.tasks.casefacts.cross_case import cross_case_checks
from caseforge.tasks.casefacts.embed import embed_claims
from caseforge.tasks.casefacts.factuality import check_factuality
from caseforge.tasks.casefacts.generate import generate_claims
from caseforge.tasks.casefacts.negations import negate
from caseforge.tasks.casefacts.overlaps import merge_overlaps
from caseforge.tasks.casefacts.overrulings import resolve_overrulings
from caseforge.tasks.casefacts.same_case import resolve_same_case
from caseforge.tasks.casefacts.windows import calibrate


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
