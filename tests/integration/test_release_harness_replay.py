"""The same numbers both ways (issue 42): one answer set, replayed by RecordedAnswersDouble (a test double of the
evaluated model, its judge and caseforge's NLI judge) behind ChatServerDouble, through `caseforge eval`'s steps
and through each release's inspect task and lm-eval task (the releases of tests/sample_releases.py). The double
answers only the exact messages caseforge's evaluation renders for each item, so a harness prompt that differs from
caseforge's by a character is refused, not scored; the harnesses' metrics equal caseforge's to four decimals."""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chat_server_double import ChatServerDouble
from harness_runs import (DATASETS, TIMINGS, inspect_eval, inspect_log, inspect_metrics, lm_eval, lm_eval_folder,
                          lm_eval_results, positions, timings)  # noqa: F401  (timings: the module's report)

pytestmark = [pytest.mark.slow, pytest.mark.samples, pytest.mark.timeout(1500), pytest.mark.usefixtures("timings")]


def key(messages: list[dict]) -> str:
    return json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], ensure_ascii=False)


class RecordedAnswersDouble:
    """Test double of the evaluated model and its judges: one recorded answer per prompt caseforge's evaluation
    renders (keyed by its exact messages); caseforge's own NLI judge (AQuAECHR, not scored here) always says yes."""

    def __init__(self):
        self.answers: dict[str, str] = {}

    def record(self, messages: list[dict], answer: str) -> None:
        self.answers[key(messages)] = answer

    def __call__(self, messages: list[dict]) -> str | None:
        found = self.answers.get(key(messages))
        if found is None and "judge textual entailment" in messages[0]["content"]:
            return '{"entailment": "yes"}'
        return found


def casefacts_answers(double: RecordedAnswersDouble, harness_releases, work: Path) -> Path:
    """Every claim of both splits with a verdict reply of one of seven kinds; returns the claims file caseforge eval
    reads (the release's claims in the paper's format)."""
    from caseforge.retrieval.corpora import scotus_case_names, scotus_corpus
    from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
    from caseforge.tasks.casefacts.eval.systems import case_names_of, closed_book_request
    from caseforge.tasks.casefacts.harness import claims_file_rows
    from caseforge.warehouse.connection import connect

    release = harness_releases.releases["casefacts"]
    frame = pa.concat_tables([pq.read_table(release / "data" / f"{s}.parquet") for s in ("test", "train")]).to_pandas()
    con = connect(harness_releases.warehouses["casefacts"])
    try:
        names = sorted(set(case_names_of(scotus_corpus(con), CaseNameIndex(scotus_case_names(con))).values()))
    finally:
        con.close()
    rows = claims_file_rows(frame)
    other = {"SUPPORTED": "REFUTED", "REFUTED": "OVERRULED", "OVERRULED": "SUPPORTED"}
    for i, row in enumerate(rows):
        gold = row["label"]
        replies = [json.dumps({"verdict": gold, "cases": row["case_name"][:1]}),
                   json.dumps({"verdict": other[gold], "cases": []}),
                   json.dumps({"verdict": f"verdict: {gold.lower()}", "cases": []}),
                   f"I would say the claim is {gold}.",
                   json.dumps({"verdict": gold, "cases": ["a", "b", "c", "d"]}),
                   "```json\n" + json.dumps({"verdict": gold, "cases": []}) + "\n```",
                   json.dumps({"verdict": "SUPPORTED", "cases": []})]
        double.record(closed_book_request("", row["claim"], names).messages, replies[i % len(replies)])
    claims = work / "casefacts_claims.json"
    claims.write_text(json.dumps(rows))
    return claims


def aquaechr_answers(double: RecordedAnswersDouble, harness_releases) -> None:
    """Every pair's retrieve-then-generate prompt with an answer made of its reference's sentences, citing the
    shown gold passages and others, or no JSON, or an answer past the 650 characters the reply may have."""
    from caseforge.tasks.aquaechr.eval.citations import split_sentences
    from caseforge.tasks.aquaechr.eval.items import build_passages, db_paragraphs, load_db_items
    from caseforge.tasks.aquaechr.eval.pipeline import passage_retriever
    from caseforge.tasks.aquaechr.eval.systems import answer_request, shown_docs
    from caseforge.warehouse.connection import connect

    con = connect(harness_releases.warehouses["aquaechr"])
    try:
        items, _ = load_db_items(con)
        passages = build_passages(items, db_paragraphs(con))
    finally:
        con.close()
    hits = passage_retriever(passages).search([i.question for i in items], 5)
    for i, (item, found) in enumerate(zip(items, hits)):
        shown = [pid for pid, _ in found]
        gold_docs = [n for n, pid in enumerate(shown, start=1) if pid in item.gold]
        first, *rest = split_sentences(item.answer) + ["The Court weighs the interests at stake."]
        marks = "".join(f"[Doc {n}]" for n in gold_docs[:2] + [5 - i % 2])
        answers = [f"{first} {marks} {rest[0]} [Doc 2]", f"{first} {rest[0]}", "The Court held so, without JSON.",
                   "x" * 651, f"{first} [Doc 7] {rest[0]} {marks}"]
        answer = answers[i % len(answers)]
        reply = answer if i % len(answers) == 2 else json.dumps({"answer": answer})
        double.record(answer_request(item.item_id, item.question, shown_docs(passages, shown)).messages, reply)


CASEGEN_LIMIT = 2        # items per task caseforge eval takes (--limit), 8 in all


def casegen_answers(double: RecordedAnswersDouble, harness_releases) -> None:
    """The first CASEGEN_LIMIT items of each task: a draft (the first half of the reference, all of it, its last two
    thirds, or nothing) and the judge's reply to it (JSON, lines, or no overall score)."""
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig, generation_requests, judge_request, load_items
    from caseforge.tasks.casegen.eval.judge import DIMENSIONS
    from caseforge.warehouse.connection import connect

    con = connect(harness_releases.warehouses["casegen"])
    try:
        items = load_items(con, None, CASEGEN_LIMIT)
    finally:
        con.close()
    config = EvalConfig()
    requests, _ = generation_requests(items, config)
    for i, (item, request) in enumerate(zip(items, requests)):
        reference = item["reference"]
        # drafts of at least 80 characters: caseforge's content gate fails one of fewer than 20 words, these
        # tasks do not gate (their notes say so), and the answers compared are the ones both score
        draft = [reference[: max(len(reference) // 2, 80)], reference, reference[len(reference) // 3:], ""][i % 4]
        double.record(request.messages, draft)
        if not draft:
            continue
        names = [chinese for _, chinese, _ in DIMENSIONS[item["task"]]]
        analysis = "与参考文本相比，草稿的事实基本一致，但遗漏了部分证据和法律依据，说理不够完整。"
        replies = [json.dumps({"分析": analysis, **{n: 6 + i % 3 for n in names}, "总体评分": 5 + i % 5},
                              ensure_ascii=False),
                   analysis + "\n" + "\n".join(f"{n}：{7}分" for n in names) + f"\n总体评分：{4 + i % 3}/10",
                   json.dumps({"分析": analysis, **{n: 6 for n in names}}, ensure_ascii=False)]
        model = "double-qwen-drafter"
        judge = judge_request(f"{item['item_id']}|{model}", item, draft, config)
        double.record(judge.messages, replies[i % len(replies)])


def caseforge_eval_metrics(harness_releases, work: Path, base_url: str, claims: Path) -> dict[str, dict]:
    """`caseforge eval`'s steps for each benchmark (the plain functions its flows run), through the openai backend
    to the double: the metrics they stored."""
    from caseforge import evalstore
    from caseforge.settings import load_settings
    from caseforge.tasks.aquaechr.eval import run as aquaechr_run
    from caseforge.tasks.casefacts.eval import run as casefacts_run
    from caseforge.tasks.casegen.eval import pipeline as casegen_pipeline
    from caseforge.warehouse.connection import connect

    os.environ["CASEFORGE_OPENAI_BASE_URL"] = base_url
    try:
        ids = {}
        report = casefacts_run.evaluate(load_settings(harness_releases.warehouses["casefacts"]), casefacts_run.Options(
            claims=str(claims), system="closed-book", llm="openai", model="double-casefacts",
            out_dir=str(work / "cf_reports")))
        ids["casefacts"] = report.results["eval_run_id"]
        report = aquaechr_run.evaluate(load_settings(harness_releases.warehouses["aquaechr"]), aquaechr_run.Options(
            system="rtg-vanilla", llm="openai", model="double-aquaechr", nli_model="double-nli", no_bertscore=True,
            out_dir=str(work / "aq_reports")))
        ids["aquaechr"] = report.results["eval_run_id"]
        params = casegen_pipeline.EvalParams(models=["double-qwen-drafter"], llm="openai",
                                             judge_model="double-llama-judge", limit=CASEGEN_LIMIT, plots=False,
                                             out_dir=str(work / "cg_reports"))
        report, _ = casegen_pipeline.run_eval(load_settings(harness_releases.warehouses["casegen"]), params)
        ids["casegen"] = report.results["eval_run_ids"]["double-qwen-drafter"]
    finally:
        del os.environ["CASEFORGE_OPENAI_BASE_URL"]
    found, items = {}, {}
    for name, run_id in ids.items():
        con = connect(harness_releases.warehouses[name])
        try:
            found[name] = evalstore.load_metrics(con, run_id)
            items[name] = [r[0] for r in con.execute("SELECT item_id FROM eval.item_outputs WHERE eval_run_id = ?",
                                                      [run_id]).fetchall()]
        finally:
            con.close()
    found["_items"] = items
    return found


@pytest.fixture(scope="module")
def both_ways(harness_releases, tmp_path_factory):
    """One answer set through caseforge eval, each release's inspect task and their lm-eval tasks."""
    work = tmp_path_factory.mktemp("same_numbers")
    double = RecordedAnswersDouble()
    claims = casefacts_answers(double, harness_releases, work)
    aquaechr_answers(double, harness_releases)
    casegen_answers(double, harness_releases)
    served = ("double", "double-casefacts", "double-aquaechr", "double-nli", "double-llama-judge", "double-qwen-drafter")
    with ChatServerDouble(double, models=served) as server:
        started = time.monotonic()
        caseforge = caseforge_eval_metrics(harness_releases, work, server.base_url, claims)
        TIMINGS["caseforge eval, three benchmarks (plain steps)"] = round(time.monotonic() - started, 1)
        casegen_ids = sorted(caseforge["_items"]["casegen"])
        options = {"casefacts": ["-T", "split=all"], "aquaechr": [],
                   "casegen": ["--sample-id", ",".join(casegen_ids), "-T", "judge=openai-api/local/double-llama-judge"]}
        models = {"casefacts": "double-casefacts", "aquaechr": "double-aquaechr", "casegen": "double-qwen-drafter"}
        inspect = {}
        for name, release in harness_releases.releases.items():
            done, logs = inspect_eval(release, work, server.base_url, models[name], *options[name],
                                      label=f"inspect {name} replayed answers")
            assert done.returncode == 0, done.stderr[-3000:]
            inspect[name] = inspect_metrics(inspect_log(logs))
        chosen = {"caseforge_casefacts": list(range(11)), "caseforge_aquaechr": list(range(5)),
                  "caseforge_casegen": positions(harness_releases.releases["casegen"], casegen_ids)}
        metadata = {"split": "all", "judge_model": "double-llama-judge", "judge_base_url": server.base_url}
        done, out = lm_eval(lm_eval_folder(harness_releases.releases, work), work, server.base_url, "double", "--samples", json.dumps(chosen),
                            "--metadata", json.dumps(metadata), label="lm-eval three tasks replayed answers")
        assert done.returncode == 0, done.stderr[-3000:]
        lm_metrics, _ = lm_eval_results(out)
        refused = server.refused
    return caseforge, inspect, {name: lm_metrics[f"caseforge_{name}"] for name in DATASETS}, refused


COMPARED = {
    "casefacts": ["verdict_accuracy", "verdict_macro_f1", *(f"verdict_accuracy/{label}" for label in
                                                           ("SUPPORTED", "REFUTED", "OVERRULED")),
                  *(f"verdict_f1/{label}" for label in ("SUPPORTED", "REFUTED", "OVERRULED"))],
    "aquaechr": ["rouge_l", "citation_f1", "citation_precision", "citation_recall", "n_failed"],
    "casegen": ["rougeL_char_f1", "judge_overall", "n_failed",
                *(f"{metric}/{task}" for metric in ("rougeL_char_f1", "judge_overall")
                  for task in ("defense", "facts", "reasoning", "judgment"))],
}


def same(a, b) -> bool:
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b)]
    return all(missing) if any(missing) else round(float(a), 4) == round(float(b), 4)


@pytest.mark.parametrize("name", DATASETS)
def test_the_harnesses_score_the_same_answers_as_caseforge_eval(both_ways, name):
    caseforge, inspect, lm, refused = both_ways
    assert refused == [], f"prompts caseforge would not send: {[m[-1]['content'][:80] for m in refused][:3]}"
    ours = caseforge[name]
    compared = [metric for metric in COMPARED[name] if metric in ours]
    assert len(compared) >= 4 and any(ours[m] not in (None, 0, 0.0, 1, 1.0) for m in compared), ours
    for metric in compared:
        assert same(inspect[name].get(metric), ours[metric]), (name, "inspect", metric, inspect[name].get(metric),
                                                               ours[metric])
        assert same(lm[name].get(metric), ours[metric]), (name, "lm-eval", metric, lm[name].get(metric), ours[metric])
