"""CaseGen evaluation runs in the evaluation store (caseforge.evalstore): one run per evaluated model, its
per-item gold, draft, judge reading and scores in eval.item_outputs, and its means and counts in eval.metrics.

Metric names: `judge_<dimension>` (the judge's 1-10 scores, `judge_overall` among them), the reference metrics
(`rougeL_char_f1`, `rougeL_word_f1`, `rougeL_compat_f1`, `bleu1`..`bleu4`, `bertscore_f1`) and the counts
(`n`, `n_failed`, `n_inputs_cut`, `n_judge_failed`, `n_judge_scores_missing`, `n_judge_scores_invalid`), each
over all tasks and per task as `<name>/<task>` (the CaseFacts store's `<metric>/<class>` form). A failed item (the
call failed, the draft was cut off at max_new_tokens, or the content gate rejected it; its reason says which) has
no score: every mean is over the items that did not fail, and `n_failed` says how many did. Migration 112
computes the same names for the rows it moved from the old eval.casegen_* tables.
"""
from __future__ import annotations

import hashlib
from datetime import datetime

import duckdb
import pandas as pd

from caseforge import evalstore
from caseforge.evalstore import ItemResult
from caseforge.tasks.casegen.eval.evaluate import Generation, Judgement
from caseforge.tasks.casegen.eval.metrics import COMPAT_LABEL
from caseforge.tasks.casegen.items import TASKS
from caseforge.warehouse.statements import run_sql

TASK = "casegen"
DATASET = "curated.casegen_items"
JUDGE_PREFIX = "judge_"
COUNTS = ("n", "n_failed", "n_inputs_cut", "n_judge_failed", "n_judge_scores_missing", "n_judge_scores_invalid")


def dataset_sha(items: list[dict]) -> str:
    """The evaluated items' identity: sha256 over their ids and content hashes, in item id order."""
    text = "\n".join(f"{i['item_id']}\t{i['content_sha256']}" for i in sorted(items, key=lambda i: i["item_id"]))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_reading(judgement: Judgement | None) -> dict | None:
    """The judge's reading as stored in `predicted.judge` (None: not judged)."""
    if judgement is None:
        return None
    return {"model": judgement.judge_model, "backend": judgement.judge_backend,
            "request_identity": judgement.request_identity, "reply_format": judgement.reply_format,
            "status": "failed" if judgement.error else "ok", "reason": judgement.error,
            "analysis": judgement.analysis,
            "dimensions": {s.dimension: {"score": s.score, "status": s.status, "reason": s.reason}
                           for s in judgement.scores}}


def item_results(items: list[dict], generations: list[Generation], judgements: dict[str, Judgement],
                 scores: dict[str, dict[str, float | None]], ops_run_id: int | None = None) -> list[ItemResult]:
    """One model's rows of eval.item_outputs, one per item. gold: the task and the reference's identity
    (the item's content hash and the reference's own hash; the text stays in curated.casegen_items).
    predicted: the draft, its request identity, the input cut and the judge's reading. scores: every judge
    dimension (`judge_<dimension>`, None when missing or invalid) and every reference metric. A failed
    generation is a failed item with the reason, and no score."""
    by_id = {i["item_id"]: i for i in items}
    results = []
    for g in generations:
        item = by_id[g.item_id]
        reference = item["reference"]
        gold = {"task": g.task, "doc_id": item["doc_id"], "source": item["source"],
                "content_sha256": item["content_sha256"],
                "reference_sha256": hashlib.sha256(reference.encode("utf-8")).hexdigest(),
                "reference_chars": len(reference)}
        judgement = judgements.get(g.key)
        predicted = {"text": g.text, "backend": g.backend, "request_identity": g.request_identity,
                     "input": {"cut": g.input_cut, "unit": g.input_unit, "length": g.input_length,
                               "kept": g.input_length_kept},
                     "output_cut_at_max_new_tokens": g.output_cut,
                     "judge": judge_reading(judgement), "ops_run_id": ops_run_id}
        item_scores: dict[str, float | None] = {}
        if judgement is not None and not judgement.error:
            item_scores.update({JUDGE_PREFIX + s.dimension: s.score for s in judgement.scores})
        item_scores.update(scores.get(g.key, {}))
        results.append(ItemResult(g.item_id, g.task, gold, predicted, item_scores,
                                  "ok" if g.ok else "failed", None if g.ok else f"generation failed: {g.error}"))
    return results


REJECTED = "generation failed: rejected by the content gate"


def failure_summary(results: list[ItemResult]) -> str:
    """Why the failed items failed, counted: "2 cut off at max_new_tokens, 1 rejected by the content gate"."""
    kinds: dict[str, int] = {}
    for r in results:
        if r.status != "failed":
            continue
        kind = ("cut off at max_new_tokens" if r.predicted.get("output_cut_at_max_new_tokens")
                else "rejected by the content gate" if (r.reason or "").startswith(REJECTED) else "call failed")
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _summary(results: list[ItemResult]) -> dict[str, float | None]:
    judges = [(r.predicted.get("judge") or {}) for r in results]
    dimensions = [d for j in judges for d in (j.get("dimensions") or {}).values()]
    out: dict[str, float | None] = {
        "n": float(len(results)),
        "n_failed": float(sum(r.status == "failed" for r in results)),
        "n_inputs_cut": float(sum(bool((r.predicted.get("input") or {}).get("cut")) for r in results)),
        "n_judge_failed": float(sum(j.get("status") == "failed" for j in judges)),
        "n_judge_scores_missing": float(sum(d["status"] == "missing" for d in dimensions)),
        "n_judge_scores_invalid": float(sum(d["status"] == "invalid" for d in dimensions)),
    }
    for name in sorted({name for r in results for name in r.scores}):
        values = [r.scores[name] for r in results if r.scores.get(name) is not None]
        out[name] = sum(values) / len(values) if values else None
    return out


def summarise(results: list[ItemResult]) -> dict[str, float | None]:
    """Means of every judge dimension and reference metric (over the items that have a value; None when
    none has) and the counts, over all tasks and per task (`<name>/<task>`)."""
    metrics = _summary(results)
    for task in TASKS:
        group = [r for r in results if r.gold["task"] == task]
        if group:
            metrics.update({f"{name}/{task}": value for name, value in _summary(group).items()})
    return metrics


def metric_notes(metrics: dict, judge: str | None, bert_note: str) -> dict[str, str]:
    """Notes kept next to the values: the compat ROUGE label, how BERTScore was made or why it was skipped,
    which judge scored (or that none did)."""
    base = {"rougeL_compat_f1": COMPAT_LABEL, "bertscore_f1": bert_note,
            "judge_overall": f"judge {judge}; scores 1-10, mean over the scores read" if judge
            else "no judge (--skip-judge): reference metrics only"}
    return {name: base[name.split("/")[0]] for name in metrics if name.split("/")[0] in base}


def save_model_run(con: duckdb.DuckDBPyConnection, model: str, backend: str, params: dict, items: list[dict],
                   results: list[ItemResult], judge: str | None, bert_note: str, started: datetime) -> str:
    """Replace the run of (model, items, params) in the store; return its id."""
    sha = dataset_sha(items)
    run_id = evalstore.eval_run_id(TASK, model, sha, params)
    metrics = summarise(results)
    if not judge:
        metrics["judge_overall"] = None
    evalstore.save_run(con, run_id, TASK, model, DATASET, sha, params, results, metrics, started, backend=backend,
                       model=model, notes=metric_notes(metrics, judge, bert_note))
    return run_id


# ---------------------------------------------------------------- reading runs back for the reports


def leaderboard_long(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    """Per-task means of the runs: model, task, scorer ('judge' | 'metric'), measure (the judge's dimension
    or the metric), mean."""
    rows = []
    for model, metric, value in run_sql(con, "casegen/leaderboard.sql", {"run_ids": list(run_ids)}).fetchall():
        name, _, task = metric.partition("/")
        if name in COUNTS:
            continue
        judged = name.startswith(JUDGE_PREFIX)
        rows.append({"model": model, "task": task, "scorer": "judge" if judged else "metric",
                     "measure": name.removeprefix(JUDGE_PREFIX) if judged else name, "mean": value})
    frame = pd.DataFrame(rows, columns=["model", "task", "scorer", "measure", "mean"])
    frame["mean"] = frame["mean"].astype(float)      # a skipped metric's None is NaN, shown as '–'
    return frame


def overall_scores(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pd.DataFrame:
    """The judge's overall score of every judged draft of the runs: model, task, score."""
    return run_sql(con, "casegen/overall_scores.sql", {"run_ids": list(run_ids)}).df()
