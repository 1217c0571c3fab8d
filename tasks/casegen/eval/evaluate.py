"""Evaluation stages: generate drafts, judge them, score them with reference metrics, compare with people."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from caseforge.llm import SamplingParams, request_from_template
from caseforge.runs import StageReport
from caseforge.tasks.casegen.eval import metrics
from caseforge.tasks.casegen.items import SECTION_TITLES, TASK_INPUTS, render_evidence
from caseforge.tasks.casegen.eval.judge import read_judge_reply
from caseforge.tasks.casegen.eval.text_job import run_text_job
from caseforge.tasks.casegen.eval.truncate import cut_middle
from caseforge.warehouse import run_sql, run_sql_over_rows, sql_text

GENERATE_STEP = "casegen-generate"
JUDGE_STEP = "casegen-judge"


@dataclass(frozen=True)
class EvalConfig:
    max_input_chars: int = 8000         # model input budget (characters), cut from the middle beyond it
    max_new_tokens: int = 1024
    judge_max_input_chars: int = 6000   # the judge sees the (cut) model input too
    judge_max_new_tokens: int = 1024
    max_input_tokens: int | None = None  # a token budget instead, counted by the tokenizer below
    tokenizer_path: str | None = None    # LOCAL tokenizer folder of the evaluated model (never downloaded)


def input_measure(config: EvalConfig):
    """(budget, measure): characters by default; tokens of a local tokenizer when one is configured."""
    if config.max_input_tokens is None:
        return config.max_input_chars, len
    if not config.tokenizer_path or not Path(config.tokenizer_path).is_dir():
        raise FileNotFoundError(f"a token budget needs a local tokenizer folder; not found: {config.tokenizer_path}")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(config.tokenizer_path, local_files_only=True)
    return config.max_input_tokens, lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def load_items(con: duckdb.DuckDBPyConnection, task: str | None, limit: int | None) -> list[dict]:
    rows = run_sql(con, "casegen/select_items.sql", {"task": task, "limit": limit}).fetchall()
    return [{"item_id": r[0], "doc_id": r[1], "task": r[2], "inputs": json.loads(r[3]), "reference": r[4],
             "source": r[5]} for r in rows]


def case_input_text(task: str, inputs: dict) -> str:
    """The task's gold input sections as one text, each under its title, in the task's order."""
    parts = []
    for name in TASK_INPUTS[task]:
        body = render_evidence(inputs.get(name, [])) if name == "evidence" else inputs.get(name, "")
        parts.append(f"【{SECTION_TITLES[name]}】\n{body}")
    return "\n\n".join(parts)


def generation_requests(items: list[dict], config: EvalConfig):
    requests, cuts = [], {}
    params = SamplingParams(temperature=0.0, max_tokens=config.max_new_tokens)
    budget, measure = input_measure(config)
    for item in items:
        cut = cut_middle(case_input_text(item["task"], item["inputs"]), budget, measure)
        cuts[item["item_id"]] = cut
        requests.append(request_from_template(item["item_id"], f"casegen/eval/generate_{item['task']}.j2", params=params,
                                              case_input=cut.text))
    return requests, cuts


def run_generation(con, run_id: int | None, backend, items: list[dict], config: EvalConfig,
                   report: StageReport) -> None:
    requests, cuts = generation_requests(items, config)
    unit = "chars" if config.max_input_tokens is None else "tokens"
    result = run_text_job(con, GENERATE_STEP, backend, requests)
    for name, n in result.counts(f"generate_{backend.model}").items():
        report.add(name, n)
    rows = []
    for item in items:
        key, cut = item["item_id"], cuts[item["item_id"]]
        failed = result.failures.get(key)
        if failed:
            report.fail(f"generation {backend.model} {key}: {failed}")
        report.add("inputs_cut", int(cut.cut))
        rows.append({
            "item_id": key, "model": backend.model, "backend": backend.name, "task": item["task"],
            "request_identity": result.identities[key], "input_cut": cut.cut, "input_unit": unit,
            "input_length": cut.original_length, "input_length_kept": cut.kept_length, "output_text": result.texts.get(key),
            "status": "ok" if key in result.texts else "failed", "error": failed, "run_id": run_id})
    run_sql_over_rows(con, "casegen/upsert_generation.sql", rows)


def generations_to_score(con, models: list[str]) -> list[dict]:
    rows = run_sql(con, "casegen/generations_to_score.sql", {"models": models}).fetchall()
    return [{"item_id": r[0], "model": r[1], "task": r[2], "output": r[3], "reference": r[4],
             "inputs": json.loads(r[5])} for r in rows]


def run_judging(con, run_id: int | None, judge_backend, generations: list[dict], config: EvalConfig,
                report: StageReport) -> None:
    params = SamplingParams(temperature=0.0, max_tokens=config.judge_max_new_tokens)
    requests = []
    for g in generations:
        case_input = cut_middle(case_input_text(g["task"], g["inputs"]), config.judge_max_input_chars).text
        requests.append(request_from_template(f"{g['item_id']}|{g['model']}", f"casegen/eval/judge_{g['task']}.j2",
                                              params=params, case_input=case_input, reference=g["reference"],
                                              candidate=g["output"]))
    result = run_text_job(con, JUDGE_STEP, judge_backend, requests)
    for name, n in result.counts("judge").items():
        report.add(name, n)
    rows = []
    for g in generations:
        key = f"{g['item_id']}|{g['model']}"
        common = {"item_id": g["item_id"], "model": g["model"], "judge_model": judge_backend.model, "task": g["task"],
                  "request_identity": result.identities[key], "run_id": run_id}
        if key not in result.texts:
            reason = f"judge call failed: {result.failures.get(key)}"
            report.fail(f"judge {key}: {result.failures.get(key)}")
            rows.append({**common, "dimension": "overall", "score": None, "status": "judge_failed",
                         "reason": reason, "reply_format": None})
            continue
        reading = read_judge_reply(result.texts[key], g["task"])
        for score in reading.scores:
            report.add(f"judge_scores_{score.status}")
            rows.append({**common, "dimension": score.dimension, "score": score.score, "status": score.status,
                         "reason": score.reason, "reply_format": reading.fmt})
    run_sql_over_rows(con, "casegen/upsert_judgement.sql", rows)


def run_metrics(con, run_id: int | None, generations: list[dict], bert_scorer, bert_skip_reason: str | None,
                report: StageReport) -> None:
    rows = []
    for g in generations:
        ref, out = g["reference"], g["output"]
        values: dict[str, float | None] = {
            "rougeL_char_f1": metrics.rouge_l(ref, out, "char").f1,
            "rougeL_word_f1": metrics.rouge_l(ref, out, "word").f1,
            "rougeL_compat_f1": metrics.rouge_l_compat(ref, out).f1,
            **metrics.bleu(ref, out),
        }
        reasons = {"rougeL_compat_f1": metrics.COMPAT_LABEL}
        if bert_scorer is not None:
            values["bertscore_f1"] = bert_scorer.score(ref, out).f1
            reasons["bertscore_f1"] = f"model {bert_scorer.name}"
        else:
            values["bertscore_f1"] = None
            reasons["bertscore_f1"] = bert_skip_reason
        for metric, value in values.items():
            rows.append({
                "item_id": g["item_id"], "model": g["model"], "task": g["task"], "metric": metric, "value": value,
                "status": "ok" if value is not None else "skipped", "reason": reasons.get(metric), "run_id": run_id})
        report.add("metrics_scored")
    run_sql_over_rows(con, "casegen/upsert_metric.sql", rows)
    if bert_scorer is None and generations:
        report.add("bertscore_skipped", len(generations))


# ---------------------------------------------------------------- agreement with human scores


def read_human_scores(path: Path) -> list[dict]:
    """CSV or JSONL with item_id, model, score (1-10, one expert's or the experts' mean)."""
    if not path.exists():
        raise FileNotFoundError(f"human scores file not found: {path}")
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    else:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for number, row in enumerate(rows, start=1):
        missing = [k for k in ("item_id", "model", "score") if row.get(k) in (None, "")]
        if missing:
            raise ValueError(f"{path}: row {number} lacks {', '.join(missing)}")
        out.append({"item_id": str(row["item_id"]), "model": str(row["model"]), "score": float(row["score"])})
    return out


def agreement_table(con, human: list[dict], judge_model: str) -> dict[str, dict]:
    """Per scorer (the judge's overall score, ROUGE-L char/word/compat, BERTScore): per-task coefficients."""
    run_sql(con, "casegen/create_human_scores.sql")
    con.executemany(sql_text("casegen/insert_human_score.sql"), [(h["item_id"], h["model"], h["score"]) for h in human])
    pairs = run_sql(con, "casegen/human_pairs.sql", {"judge_model": judge_model}).fetchall()
    by_scorer: dict[str, dict[str, tuple[list, list]]] = {}
    for scorer, task, machine, person in pairs:
        if machine is None or (isinstance(machine, float) and math.isnan(machine)):
            continue
        m, h = by_scorer.setdefault(scorer, {}).setdefault(task, ([], []))
        m.append(machine)
        h.append(person)
    return {scorer: metrics.agreement_by_task(tasks) for scorer, tasks in sorted(by_scorer.items())}
