"""Dataset-level gate on curated.casefacts_claims (row rules live in expectations/casefacts_claims.json)."""
from __future__ import annotations

import json

import pandas as pd
from scipy import stats

from caseforge.tasks.casefacts.leaks import find_leaks


def gate_dataset(claims: pd.DataFrame, cases: pd.DataFrame, max_label_share: float = 0.9,
                 max_length_ks: float = 0.35, min_rows_for_distribution: int = 20) -> list[str]:
    """One reason per failed check: label balance, fact_id leakage across splits, leaks, length artifacts."""
    reasons: list[str] = []
    if claims.empty:
        return ["casefacts_claims: the dataset is empty"]
    names = dict(zip(cases["case_id"].astype(int), cases["name"]))
    parties = {names[int(r["case_id"])]: (r["first_party"], r["second_party"]) for r in cases.to_dict("records")}
    labels = claims["label"].value_counts()
    if len(claims) >= min_rows_for_distribution:
        top = labels.iloc[0] / len(claims)
        if top > max_label_share:
            reasons.append(f"label {labels.index[0]} is {top:.0%} of the claims (more than {max_label_share:.0%})")
        for needed in ("SUPPORTED", "REFUTED"):
            if needed not in labels:
                reasons.append(f"no {needed} claims")
    crossing = claims.groupby("fact_id")["split"].nunique()
    if (crossing > 1).any():
        reasons.append(f"{int((crossing > 1).sum())} fact_id(s) appear in more than one split")
    for row in claims.to_dict("records"):
        case_names = [names.get(int(c), "") for c in json.loads(row["evidence_case_ids"])]
        leaks = find_leaks(row["claim"], case_names, parties)
        if leaks:
            reasons.append(f"claim {row['claim_id']} leaks identifiers: {'; '.join(leaks)}")
    supported = claims.loc[claims["label"] == "SUPPORTED", "claim"].str.len()
    refuted = claims.loc[claims["label"] == "REFUTED", "claim"].str.len()
    if len(supported) >= 5 and len(refuted) >= 5:
        ks = stats.ks_2samp(supported, refuted).statistic
        if ks > max_length_ks:
            reasons.append(f"SUPPORTED and REFUTED lengths differ (KS {ks:.2f} > {max_length_ks}; "
                           f"medians {supported.median():.0f} vs {refuted.median():.0f} chars)")
    return reasons
