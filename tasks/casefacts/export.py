"""Export of the built CaseFacts dataset: Parquet + JSONL per split and a dataset card."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from caseforge.config import settings as load_settings
from caseforge.warehouse import connect, run_sql


def _card(claims: pd.DataFrame, steps: pd.DataFrame, payloads: pd.DataFrame, windows: pd.DataFrame) -> str:
    lines = ["# CaseFacts (caseforge build)", "",
             "Plain-language legal claims labelled SUPPORTED, REFUTED or OVERRULED against U.S. Supreme Court "
             "cases (Oyez summaries). Overrulings are kept only when the overruling case was decided after the "
             "overruled one and its disposition is a reversal.", "",
             f"Claims: {len(claims)}", "", "## Labels per split", "", "| split | label | claims |", "|---|---|---|"]
    for (split, label), n in claims.groupby(["split", "label"]).size().items():
        lines.append(f"| {split} | {label} | {n} |")
    lines += ["", "## Similarity windows (calibrated from judged samples)", "",
              "| kind | low | high | positives | judged | method |", "|---|---|---|---|---|---|"]
    for r in windows.to_dict("records"):
        lines.append(f"| {r['kind']} | {r['low']} | {r['high']} | {r['positives']} | {r['judged']} | {r['method']} |")
    lines += ["", "## Models and prompts per step", "", "| step | model | prompt | prompt sha256 | requests |",
              "|---|---|---|---|---|"]
    for r in steps.to_dict("records"):
        lines.append(f"| {r['step']} | {r['model']} | {r['template_id']} | {r['template_sha'][:16]} | {r['requests']} |")
    digest = hashlib.sha256("".join(payloads["raw_sha256"].tolist()).encode()).hexdigest()
    lines += ["", "## Sources", "", f"{len(payloads)} Oyez case payloads; sha256 over their payload hashes: "
              f"`{digest}` (per case in source_payloads.csv).", ""]
    return "\n".join(lines)


def export_casefacts(con, out: Path) -> dict[str, int]:
    claims = run_sql(con, "casefacts/export_claims.sql").df()
    if claims.empty:
        raise RuntimeError("curated.casefacts_claims is empty: run `caseforge build casefacts` first")
    for column in ("evidence_case_ids", "overruling_case_ids"):
        claims[column] = claims[column].map(json.loads)
    for column in ("evidence_case_names", "overruling_case_names"):
        claims[column] = claims[column].map(lambda v: list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else [])
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, part in claims.groupby("split"):
        part = part.reset_index(drop=True)
        part.to_parquet(out / f"{split}.parquet", index=False)
        part.to_json(out / f"{split}.jsonl", orient="records", lines=True, force_ascii=False)
        counts[split] = len(part)
    steps = run_sql(con, "casefacts/build_steps.sql").df()
    payloads = run_sql(con, "casefacts/source_payloads.sql").df()
    payloads.to_csv(out / "source_payloads.csv", index=False)
    windows = con.execute("SELECT * FROM curated.casefacts_windows ORDER BY kind").df()
    (out / "README.md").write_text(_card(claims, steps, payloads, windows), encoding="utf-8")
    return counts


def export_casefacts_command(db: str | None, out: Path) -> int:
    con = connect(load_settings(db).db_path)
    try:
        counts = export_casefacts(con, out)
    finally:
        con.close()
    print(f"casefacts exported to {out}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0
