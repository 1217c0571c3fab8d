"""Evaluation stages: generate drafts, judge them, score them with reference metrics, compare with people."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import pandas as pd

from caseforge import gate
from caseforge.llm import SamplingParams, request_from_template
from caseforge.stage_report import StageReport
from caseforge.tasks.casegen.eval import metrics
from caseforge.tasks.casegen.eval.judge import DimensionScore, read_judge_reply, reply_schema
from caseforge.tasks.casegen.eval.text_job import run_text_job
from caseforge.tasks.casegen.eval.truncate import cut_middle
from caseforge.tasks.casegen.items import SECTION_TITLES, TASK_INPUTS, render_evidence
from caseforge.warehouse.statements import run_sql, sql_text

GENERATE_STEP = "casegen-generate"
JUDGE_STEP = "casegen-judge"
DRAFTS_SUITE = "casegen_drafts"                  # expectations/casegen_drafts.json: what a draft must be
JUDGE_REPLIES_SUITE = "casegen_judge_replies"    # expectations/casegen_judge_replies.json: the judge's reasoning


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
             "source": r[5], "content_sha256": r[6]} for r in rows]


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


@dataclass(frozen=True)
class Generation:
    """One model's draft for one item, with the facts of the input cut and the request identity
    (ops.llm_calls.identity). A failed generation has `error`: the call failed (no text), the draft was cut off
    at max_new_tokens, or the content gate rejected it (the text kept, to be read, never scored)."""
    item_id: str
    task: str
    model: str
    backend: str
    request_identity: str
    input_cut: bool
    input_unit: str              # chars | tokens (of the configured local tokenizer)
    input_length: int
    input_length_kept: int
    text: str | None
    error: str | None = None
    output_cut: bool = False     # the draft reached max_new_tokens: a failed generation, its text kept

    @property
    def ok(self) -> bool:
        return self.text is not None and self.error is None

    @property
    def key(self) -> str:
        return f"{self.item_id}|{self.model}"


@dataclass(frozen=True)
class Judgement:
    """The judge's reading of one draft: every dimension of the task and the overall score, each a number in
    1..10 or None with its status (missing | invalid) and reason; `error` when the judge call failed."""
    judge_model: str
    judge_backend: str
    request_identity: str
    reply_format: str | None     # json | lines | none; None when the call failed
    scores: tuple[DimensionScore, ...] = ()
    error: str | None = None     # the call failed, or the content gate rejected the reply: no score is read
    analysis: str | None = None  # the judge's free-text reasoning


def run_generation(con, backend, items: list[dict], config: EvalConfig, report: StageReport) -> list[Generation]:
    """One draft per item by `backend`'s model (cached by request identity): every item gives a Generation.
    A failed call, a draft cut off at max_new_tokens and a draft the content gate rejects are failed
    generations with the reason, each one a failure line on the report; only the others are judged and scored."""
    requests, cuts = generation_requests(items, config)
    unit = "chars" if config.max_input_tokens is None else "tokens"
    result = run_text_job(con, GENERATE_STEP, backend, requests)
    for name, n in result.counts(f"generate_{backend.model}").items():
        report.add(name, n)
    generations = []
    for item in items:
        key, cut = item["item_id"], cuts[item["item_id"]]
        text, failed = result.texts.get(key), result.failures.get(key)
        output_cut = text is None and key in result.cut_texts
        if output_cut:
            text = result.cut_texts[key]
            report.add("drafts_cut_at_max_new_tokens")
        if failed:
            report.fail(f"generation {backend.model} {key}: {failed}")
        report.add("inputs_cut", int(cut.cut))
        generations.append(Generation(
            item_id=key, task=item["task"], model=backend.model, backend=backend.name,
            request_identity=result.identities[key], input_cut=cut.cut, input_unit=unit,
            input_length=cut.original_length, input_length_kept=cut.kept_length, text=text,
            error=(failed or "no output") if failed or text is None else None, output_cut=output_cut))
    return gate_drafts(con, generations, report)


def gate_drafts(con, generations: list[Generation], report: StageReport) -> list[Generation]:
    """The drafts through the content gate (expectations/casegen_drafts.json): a degenerate draft (too short,
    mostly digits or punctuation, a phrase or character repeated, the prompt's instructions written back) is a
    failed generation with the rules it broke; it is quarantined and recorded with the quality results."""
    drafts = [g for g in generations if g.ok]
    if not drafts:
        return generations
    frame = pd.DataFrame({"key": [g.key for g in drafts], "task": [g.task for g in drafts],
                          "draft": [g.text for g in drafts]})
    rejected = gate.rejected_rows(con, report.run_id, DRAFTS_SUITE, frame, "key")
    out = []
    for g in generations:
        if g.key in rejected:
            g = replace(g, error=f"rejected by the content gate: {rejected[g.key]}")
            report.add("drafts_rejected")
            report.fail(f"generation {g.model} {g.item_id}: {g.error}")
        out.append(g)
    return out


def judge_request(key: str, item: dict, candidate: str, config: EvalConfig, reference: str | None = None):
    """The judge's request for the draft `candidate` of `item` (its reference: the item's, unless given)."""
    params = SamplingParams(temperature=0.0, max_tokens=config.judge_max_new_tokens)
    case_input = cut_middle(case_input_text(item["task"], item["inputs"]), config.judge_max_input_chars).text
    request = request_from_template(key, f"casegen/eval/judge_{item['task']}.j2", params=params, case_input=case_input,
                                    reference=item["reference"] if reference is None else reference,
                                    candidate=candidate)
    return request.model_copy(update={"json_schema": reply_schema(item["task"])})


def run_judging(con, judge_backend, generations: list[Generation], items: list[dict], config: EvalConfig,
                report: StageReport) -> dict[str, Judgement]:
    """The judge's reading of every successful draft, by Generation.key."""
    by_id = {i["item_id"]: i for i in items}
    judged = [g for g in generations if g.ok]
    requests = [judge_request(g.key, by_id[g.item_id], g.text, config) for g in judged]
    result = run_text_job(con, JUDGE_STEP, judge_backend, requests)
    for name, n in result.counts("judge").items():
        report.add(name, n)
    judgements = {}
    for g in judged:
        common = {"judge_model": judge_backend.model, "judge_backend": judge_backend.name,
                  "request_identity": result.identities[g.key]}
        if g.key not in result.texts:
            report.fail(f"judge {g.key}: {result.failures.get(g.key)}")
            judgements[g.key] = Judgement(**common, reply_format=None,
                                          error=f"judge call failed: {result.failures.get(g.key)}")
            continue
        reading = read_judge_reply(result.texts[g.key], g.task)
        for score in reading.scores:
            report.add(f"judge_scores_{score.status}")
        judgements[g.key] = Judgement(**common, reply_format=reading.fmt, scores=tuple(reading.scores),
                                      analysis=reading.analysis)
    judgements = gate_judge_replies(con, judgements, report)
    read = sum(1 for j in judgements.values() if not j.error and any(s.status == "ok" for s in j.scores))
    if judged and not read:
        report.fail(f"judge {judge_backend.model}: 0 of {len(judged)} judged drafts gave a readable score")
    return judgements


def gate_judge_replies(con, judgements: dict[str, Judgement], report: StageReport) -> dict[str, Judgement]:
    """The judge's reasoning through the content gate (expectations/casegen_judge_replies.json): a reply whose
    analysis is degenerate (" 1000000000…", "...") is a failed judgement with the rules it broke, and none of
    its scores is read."""
    read = {key: j for key, j in judgements.items() if not j.error}
    if not read:
        return judgements
    keys = list(read)
    frame = pd.DataFrame({"key": keys, "analysis": [read[k].analysis for k in keys]})
    out = dict(judgements)
    for key, reasons in gate.rejected_rows(con, report.run_id, JUDGE_REPLIES_SUITE, frame, "key").items():
        out[key] = replace(read[key], scores=(), error=f"judge reply rejected by the content gate: {reasons}")
        report.add("judge_replies_rejected")
        report.fail(f"judge {key}: {out[key].error}")
    return out


def reference_scores(reference: str, output: str, bert_scorer) -> dict[str, float | None]:
    """ROUGE-L (characters, jieba words, the original code's ASCII-only mode), BLEU-1..4 and BERTScore
    (None when no scorer)."""
    return {
        "rougeL_char_f1": metrics.rouge_l(reference, output, "char").f1,
        "rougeL_word_f1": metrics.rouge_l(reference, output, "word").f1,
        "rougeL_compat_f1": metrics.rouge_l_compat(reference, output).f1,
        **metrics.bleu(reference, output),
        "bertscore_f1": bert_scorer.score(reference, output).f1 if bert_scorer is not None else None,
    }


def run_metrics(generations: list[Generation], items: list[dict], bert_scorer,
                report: StageReport) -> dict[str, dict[str, float | None]]:
    """Reference metrics of every successful draft, by Generation.key."""
    by_id = {i["item_id"]: i for i in items}
    scores = {}
    for g in generations:
        if not g.ok:
            continue
        scores[g.key] = reference_scores(by_id[g.item_id]["reference"], g.text, bert_scorer)
        report.add("metrics_scored")
    if bert_scorer is None and scores:
        report.add("bertscore_skipped", len(scores))
    return scores


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


def agreement_table(con, human: list[dict], run_ids: list[str]) -> dict[str, dict]:
    """Per scorer (the judge's overall score, ROUGE-L char/word/compat, BERTScore): per-task coefficients
    between the stored scores of the runs `run_ids` (eval.item_outputs) and people's scores of the same
    (item, model)."""
    run_sql(con, "casegen/create_human_scores.sql")
    con.executemany(sql_text("casegen/insert_human_score.sql"), [(h["item_id"], h["model"], h["score"]) for h in human])
    pairs = run_sql(con, "casegen/human_pairs.sql", {"run_ids": list(run_ids)}).fetchall()
    by_scorer: dict[str, dict[str, tuple[list, list]]] = {}
    for scorer, task, machine, person in pairs:
        if machine is None or (isinstance(machine, float) and math.isnan(machine)):
            continue
        m, h = by_scorer.setdefault(scorer, {}).setdefault(task, ([], []))
        m.append(machine)
        h.append(person)
    return {scorer: metrics.agreement_by_task(tasks) for scorer, tasks in sorted(by_scorer.items())}
