"""Stage 5: calibrated similarity windows: a sample of pairs per similarity bin is judged for each kind, and the
window that holds the kind's positives (at the configured coverage) is where stage 6 looks; too few positives
fall back to every pair that could have been sampled."""
from __future__ import annotations

import numpy as np
import pandas as pd

from caseforge.tasks.casefacts.calibration import calibrate_window
from caseforge.tasks.casefacts.context import BuildContext, load_stage
from caseforge.tasks.casefacts.cross_case import KINDS, is_positive, judge_pairs
from caseforge.tasks.casefacts.screening import screen_pairs


def calibrate(ctx: BuildContext, kept: pd.DataFrame, vectors: np.ndarray) -> dict[str, tuple[float, float]]:
    ids = kept["claim_id"].to_numpy()
    screen = screen_pairs(vectors, kept["case_id"].to_numpy(), {}, ctx.config.screening, sample=True)
    sample_rows, windows = [], []
    pairs_by_bin = [(b, ids[p.left[k]], ids[p.right[k]], float(p.similarity[k]), len(p))
                    for b, p in sorted(screen.samples.items()) for k in range(len(p))]
    bounds = {}
    for kind in KINDS:
        result = judge_pairs(ctx, kind, [(a, c) for _, a, c, _, _ in pairs_by_bin], kept)
        sims, flags, weights = [], [], []
        for b, a, c, sim, drawn in pairs_by_bin:
            positive = is_positive(result, kind, f"{kind}:{a}|{c}")
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
    load_stage(ctx, "calibration_samples", pd.DataFrame(sample_rows), "pair_id")
    load_stage(ctx, "windows", pd.DataFrame(windows), "kind")
    return bounds
