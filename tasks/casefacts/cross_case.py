"""Stage 6: cross-case checks: every pair of claims of different cases whose similarity falls in a kind's
calibrated window is judged for that kind (contradiction, overlap)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from caseforge.llm import request_from_template
from caseforge.tasks.casefacts import models as out
from caseforge.tasks.casefacts.context import BuildContext, job, load_stage, params
from caseforge.tasks.casefacts.screening import screen_pairs

KINDS = ("contradiction", "overlap")


def judge_pairs(ctx: BuildContext, kind: str, pairs: list[tuple[str, str]], kept: pd.DataFrame):
    text = dict(zip(kept["claim_id"], kept["claim"]))
    step, template, model_cls = (("cross_contradiction", "casefacts/cross_contradiction.j2", out.Contradiction)
                                 if kind == "contradiction" else
                                 ("cross_overlap", "casefacts/cross_overlap.j2", out.Overlap))
    requests = [request_from_template(f"{kind}:{a}|{b}", template, params=params(ctx.config, step),
                                      claim1=text[a], claim2=text[b]) for a, b in pairs]
    return job(ctx, step, requests, model_cls)


def is_positive(result, kind: str, key: str) -> bool | None:
    if key in result.failures:
        return None
    answer = result.outputs[key]
    return answer.contradict if kind == "contradiction" else answer.overlap


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
        result = judge_pairs(ctx, kind, [(a, b) for a, b, *_ in pairs], kept)
        for a, b, sim, ca, cb in pairs:
            key = f"{kind}:{a}|{b}"
            positive = is_positive(result, kind, key)
            rows.append({"pair_id": key, "kind": kind, "claim_id_1": a, "claim_id_2": b, "case_id_1": ca,
                         "case_id_2": cb, "similarity": sim, "detected": positive,
                         "status": "llm_failed" if positive is None else "judged",
                         "reason": (result.failures[key].reason[:300] if positive is None
                                    else result.outputs[key].reason)})
    return load_stage(ctx, "cross_pairs", pd.DataFrame(rows), "pair_id")
