"""Every benchmark release runs where researchers evaluate models (issue 42): the inspect_ai task and the
lm-evaluation-harness task that caseforge writes into each release (CaseFacts, AQuAECHR, CaseGen, built from the
samples) run in .venv-harness, which has the harnesses and no caseforge (`make setup-harness`), against a real
OpenAI-compatible server (llama_cpp.server with the packaged SmolLM2), keep only the items decided after a day with
`after=`, score the same answers to the same numbers as `caseforge eval`, and refuse a release changed after export
in one line.

The equality tests replay one answer set through both sides: RecordedAnswersDouble (a test double of the evaluated
model, its judge and caseforge's NLI judge) answers behind ChatServerDouble only the exact messages caseforge's
evaluation renders for each item, so a harness prompt that differs from caseforge's by a character is refused, not
scored. lm-eval indexes its thousands of built-in tasks at every start (tens of seconds), so each scenario runs the
three releases' lm-eval tasks in one command, from a folder holding the three task folders.
"""
from __future__ import annotations

import ast
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chat_server_double import ChatServerDouble
from llama_server import ALIAS, free_port, llama_cpp_server
from s3_server import stop_process_group
from sample_releases import build_sample_releases

from caseforge.release import verify_release
from caseforge.release.writer import not_our_release

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HARNESS_BIN = PROJECT_ROOT / ".venv-harness" / "bin"
DATASETS = ("casefacts", "aquaechr", "casegen")
TIMINGS: dict[str, float] = {}

# each test's budget counts the module's fixtures it is the first to need (the releases: about a minute on 2 idle cores)
pytestmark = [pytest.mark.slow, pytest.mark.samples, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module", autouse=True)
def timings():
    """The wall time of every harness command of the module, printed at its end (pytest -s) for the lead's note."""
    yield TIMINGS
    print("\n" + "\n".join(f"{seconds:7.1f} s  {label}" for label, seconds in TIMINGS.items()))


@pytest.fixture(scope="module")
def harness_bin() -> Path:
    if not (HARNESS_BIN / "inspect").exists() or not (HARNESS_BIN / "lm-eval").exists():
        message = f"no harness venv at {HARNESS_BIN.parent} (make setup-harness)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; CI installs it", pytrace=False)
        pytest.skip(message)
    return HARNESS_BIN


@pytest.fixture(scope="module")
def built(samples_dir, tmp_path_factory, harness_bin):
    started = time.monotonic()
    releases = build_sample_releases(samples_dir, tmp_path_factory.mktemp("harness_releases"))
    TIMINGS["build three releases from the samples"] = round(time.monotonic() - started, 1)
    return releases


def harness_env(work: Path, base_url: str | None = None) -> dict:
    """A child's environment with the harness venv first and nothing of caseforge's (its PYTHONPATH, settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASEFORGE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{HARNESS_BIN}{os.pathsep}{env.get('PATH', '')}", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               HF_HOME=str(work / "hf"), INSPECT_LOG_DIR=str(work / "inspect_logs"), INSPECT_DISPLAY="none",
               LOCAL_API_KEY="x")
    if base_url:
        env["LOCAL_BASE_URL"] = base_url
    return env


def timed(label: str, command: list[str], cwd: Path, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    TIMINGS[label] = round(time.monotonic() - started, 1)
    return done


def inspect_eval(release: Path, work: Path, base_url: str, model: str, *args: str, label: str):
    logs = work / f"inspect_{label.replace(' ', '_')}"
    done = timed(label, [str(HARNESS_BIN / "inspect"), "eval", "harness/inspect_task.py", "--model",
                         f"openai-api/local/{model}", "--log-dir", str(logs), *args],
                 release, harness_env(work, base_url))
    return done, logs


def inspect_log(logs: Path) -> dict:
    """The run's log, as `inspect log dump` gives it (the .eval file is a zip inspect reads)."""
    [path] = list(logs.glob("*.eval"))
    dumped = subprocess.run([str(HARNESS_BIN / "inspect"), "log", "dump", str(path)], capture_output=True, text=True,
                            timeout=300, env=harness_env(logs))
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    return json.loads(dumped.stdout)


def inspect_metrics(log: dict) -> dict[str, float]:
    """metric name → value: a score's mean under its own name, a breakdown's entries under theirs, `failed` as
    n_failed."""
    found = {}
    for score in log["results"]["scores"]:
        for metric in score["metrics"].values():
            name = {"mean": score["name"], "total": "n_failed"}.get(metric["name"], metric["name"])
            found[name] = metric["value"]
    return found


def lm_eval_folder(releases: dict[str, Path], work: Path) -> Path:
    """One folder holding the three releases' lm-eval task files (links to them: lm-eval does not enter a linked
    folder, and utils.py finds its release by the file a link resolves to), for one lm-eval command."""
    folder = work / "lm_eval_tasks"
    for name, release in releases.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        for path in (release / "harness" / "lm_eval").iterdir():
            if not (folder / name / path.name).exists():
                (folder / name / path.name).symlink_to(path)
    return folder


def lm_eval(tasks_folder: Path, work: Path, base_url: str, model: str, *args: str, label: str,
            tasks: str = ",".join(f"caseforge_{d}" for d in DATASETS)):
    out = work / f"lm_eval_{label.replace(' ', '_')}"
    done = timed(label, [str(HARNESS_BIN / "lm-eval"), "run", "--include_path", str(tasks_folder), "--tasks", tasks,
                         "--model", "local-chat-completions", "--model_args",
                         f"base_url={base_url}/chat/completions,model={model},tokenizer_backend=None",
                         "--apply_chat_template", "--output_path", str(out), "--log_samples", *args],
                 work, harness_env(work))
    return done, out


def lm_eval_results(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """(task → metric → value, task → logged samples)."""
    [results_file] = list(out.rglob("results_*.json"))
    results = json.loads(results_file.read_text())["results"]
    metrics = {task: {key.split(",")[0]: value for key, value in found.items() if "," in key and "stderr" not in key}
               for task, found in results.items()}
    samples = {}
    for path in out.rglob("samples_*.jsonl"):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return metrics, samples


def positions(release: Path, ids: list[str]) -> list[int]:
    """Where the samples `ids` stand among the release's CaseGen samples, as lm-eval's --samples counts them (the
    release's own caseforge_harness orders them; pyarrow and nltk are in caseforge's venv too)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"caseforge_harness_{release.name}",
                                                  release / "harness" / "caseforge_harness.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    order = [s["id"] for s in module.load_samples(module.open_release(release / "harness"), "generate")]
    return sorted(order.index(i) for i in ids)


def dated_ids(release: Path, split: str, id_column: str, date_column: str, after: str) -> list[str]:
    """The ids of the rows of data/<split>.parquet dated after `after`, read straight from the data."""
    rows = pq.read_table(release / "data" / f"{split}.parquet").to_pylist()
    return sorted(str(r[id_column]) for r in rows if r[date_column] is not None and str(r[date_column])[:10] > after)


# ---------------------------------------------------------------- no caseforge


def test_the_harness_venv_has_the_harnesses_and_no_caseforge(harness_bin, built):
    done = subprocess.run([str(harness_bin / "python"), "-c", "import caseforge"], capture_output=True, text=True,
                          cwd=built.releases["casefacts"], env=harness_env(built.root))
    assert done.returncode != 0 and "No module named 'caseforge'" in done.stderr
    for name, release in built.releases.items():
        files = sorted(p.relative_to(release).as_posix() for p in (release / "harness").rglob("*") if p.is_file())
        assert files == ["harness/caseforge_harness.py", "harness/inspect_task.py",
                         f"harness/lm_eval/caseforge_{name}.yaml", "harness/lm_eval/utils.py", "harness/pin.json",
                         "harness/samples.parquet"], name
        for path in ("harness/caseforge_harness.py", "harness/inspect_task.py", "harness/lm_eval/utils.py"):
            tree = ast.parse((release / path).read_text())
            imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
            assert not [m for m in imported if m.split(".")[0] == "caseforge"], path


# ---------------------------------------------------------------- a real OpenAI-compatible server


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory, harness_bin):
    started = time.monotonic()
    with llama_cpp_server(tmp_path_factory.mktemp("llama_cpp_server"), n_ctx=4096) as base_url:
        TIMINGS["llama_cpp.server start"] = round(time.monotonic() - started, 1)
        yield base_url


def shortest(release: Path, n: int) -> list[str]:
    """The ids of the `n` CaseGen items with the shortest prompts (the small model's window is 4096 tokens)."""
    rows = pq.read_table(release / "harness" / "samples.parquet").to_pylist()
    return [r["id"] for r in sorted(rows, key=lambda r: (len(r["messages"]), r["id"]))[:n]]


def test_each_release_runs_in_both_harnesses_against_llama_cpp_server(built, smollm2, tmp_path):
    """A few items of each (CaseFacts 2, AQuAECHR 1 with its five retrieved passages, CaseGen its shortest item) and
    48 new tokens a reply, so that the 135M model on 2 CPU cores takes minutes, not an hour: every run exits 0 and
    its log holds a score for every sample it ran. (The judge of CaseGen is exercised by the replayed answers.)"""
    casegen_ids = shortest(built.releases["casegen"], 1)
    options = {"casefacts": ["--limit", "2"], "aquaechr": ["--limit", "1"], "casegen": ["--sample-id", casegen_ids[0]]}
    for name, release in built.releases.items():
        done, logs = inspect_eval(release, tmp_path, smollm2, ALIAS, "--max-tokens", "48", *options[name],
                                  label=f"inspect {name} on llama_cpp.server")
        assert done.returncode == 0, done.stderr[-3000:]
        log = inspect_log(logs)
        assert log["status"] == "success" and len(log["samples"]) == {"casefacts": 2}.get(name, 1), name
        assert all(sample["scores"] for sample in log["samples"]), name
    chosen = {"caseforge_casefacts": [0, 1], "caseforge_aquaechr": [0],
              "caseforge_casegen": positions(built.releases["casegen"], casegen_ids)}
    done, out = lm_eval(lm_eval_folder(built.releases, tmp_path), tmp_path, smollm2, ALIAS,
                        "--samples", json.dumps(chosen), "--gen_kwargs", "max_gen_toks=48",
                        label="lm-eval three tasks on llama_cpp.server")
    assert done.returncode == 0, done.stderr[-3000:]
    metrics, samples = lm_eval_results(out)
    assert set(metrics) == set(samples) == set(chosen)
    for task, logged in samples.items():
        assert len(logged) == len(chosen[task]), task
        assert all(any(key in entry for key in ("verdict_accuracy", "rouge_l", "rougeL_char_f1")) for entry in logged)


# ---------------------------------------------------------------- after=


AFTER = {"casefacts": ("1950-01-01", "test", "claim_id", "source_date"),
         "aquaechr": ("2023-08-30", "aquaechr_qa", "qa_id", "source_date"),
         "casegen": ("2018-12-31", "casegen_items", "item_id", "judgment_date")}


def any_answer(messages: list[dict]) -> str:
    """Test double of a model that answers every prompt with something each scorer reads."""
    text = messages[-1]["content"]
    if "Statement:" in text:
        return '{"verdict": "SUPPORTED", "cases": []}'
    if "待评价" in text:
        return '{"分析": "与参考文本基本一致。", "总体评分": 7}'
    if "任务" in text:
        return "经审理查明，双方签订合同后被告未按约履行。"
    return '{"answer": "The Court applies a strict test [Doc 1]."}'


def test_after_keeps_only_the_items_decided_after_the_day(built, tmp_path):
    with ChatServerDouble(any_answer) as double:
        for name, release in built.releases.items():
            after, split, id_column, date_column = AFTER[name]
            expected = dated_ids(release, split, id_column, date_column, after)
            every = dated_ids(release, split, id_column, date_column, "0000-00-00")
            done, logs = inspect_eval(release, tmp_path, double.base_url, "double", "-T", f"after={after}",
                                      label=f"inspect {name} after={after}")
            assert done.returncode == 0, done.stderr[-3000:]
            ran = sorted(s["id"] for s in inspect_log(logs)["samples"])
            assert ran == expected and ran, name
            if name != "aquaechr":         # its sample guide has one version date: every pair is as new as the next
                assert len(ran) < len(every), name
        done, _ = inspect_eval(built.releases["aquaechr"], tmp_path, double.base_url, "double", "-T",
                               "after=2023-08-31", label="inspect aquaechr after its newest day")
        assert done.returncode != 0
        assert done.stderr.strip().splitlines()[-1] == ("caseforge release refused: aquaechr: no rtg-vanilla sample "
                                                        "in aquaechr_qa was decided after 2023-08-31 (the newest is "
                                                        "from 2023-08-31)")
        days = {name: AFTER[name][0] for name in DATASETS}
        done, out = lm_eval(lm_eval_folder(built.releases, tmp_path), tmp_path, double.base_url, "double",
                            "--metadata", json.dumps({"after": days}), label="lm-eval three tasks with after=")
    assert done.returncode == 0, done.stderr[-3000:]
    _, samples = lm_eval_results(out)
    for name, release in built.releases.items():
        after, split, id_column, date_column = AFTER[name]
        assert sorted(entry["doc"]["id"] for entry in samples[f"caseforge_{name}"]) == \
            dated_ids(release, split, id_column, date_column, after), name


# ---------------------------------------------------------------- the same numbers as caseforge eval


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


def casefacts_answers(double: RecordedAnswersDouble, built, work: Path) -> Path:
    """Every claim of both splits with a verdict reply of one of seven kinds; returns the claims file caseforge eval
    reads (the release's claims in the paper's format)."""
    from caseforge.retrieval.corpora import scotus_case_names, scotus_corpus
    from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
    from caseforge.tasks.casefacts.eval.systems import case_names_of, closed_book_request
    from caseforge.tasks.casefacts.harness import claims_file_rows
    from caseforge.warehouse.connection import connect

    release = built.releases["casefacts"]
    frame = pa.concat_tables([pq.read_table(release / "data" / f"{s}.parquet") for s in ("test", "train")]).to_pandas()
    con = connect(built.warehouses["casefacts"])
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


def aquaechr_answers(double: RecordedAnswersDouble, built) -> None:
    """Every pair's retrieve-then-generate prompt with an answer made of its reference's sentences, citing the
    shown gold passages and others, or no JSON, or an answer past the 650 characters the reply may have."""
    from caseforge.tasks.aquaechr.eval.citations import split_sentences
    from caseforge.tasks.aquaechr.eval.items import build_passages, db_paragraphs, load_db_items
    from caseforge.tasks.aquaechr.eval.pipeline import passage_retriever
    from caseforge.tasks.aquaechr.eval.systems import answer_request, shown_docs
    from caseforge.warehouse.connection import connect

    con = connect(built.warehouses["aquaechr"])
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


def casegen_answers(double: RecordedAnswersDouble, built) -> None:
    """The first CASEGEN_LIMIT items of each task: a draft (the first half of the reference, all of it, its last two
    thirds, or nothing) and the judge's reply to it (JSON, lines, or no overall score)."""
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig, generation_requests, judge_request, load_items
    from caseforge.tasks.casegen.eval.judge import DIMENSIONS
    from caseforge.warehouse.connection import connect

    con = connect(built.warehouses["casegen"])
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


def caseforge_eval_metrics(built, work: Path, base_url: str, claims: Path) -> dict[str, dict]:
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
        report = casefacts_run.evaluate(load_settings(built.warehouses["casefacts"]), casefacts_run.Options(
            claims=str(claims), system="closed-book", llm="openai", model="double-casefacts",
            out_dir=str(work / "cf_reports")))
        ids["casefacts"] = report.results["eval_run_id"]
        report = aquaechr_run.evaluate(load_settings(built.warehouses["aquaechr"]), aquaechr_run.Options(
            system="rtg-vanilla", llm="openai", model="double-aquaechr", nli_model="double-nli", no_bertscore=True,
            out_dir=str(work / "aq_reports")))
        ids["aquaechr"] = report.results["eval_run_id"]
        params = casegen_pipeline.EvalParams(models=["double-qwen-drafter"], llm="openai",
                                             judge_model="double-llama-judge", limit=CASEGEN_LIMIT, plots=False,
                                             out_dir=str(work / "cg_reports"))
        report, _ = casegen_pipeline.run_eval(load_settings(built.warehouses["casegen"]), params)
        ids["casegen"] = report.results["eval_run_ids"]["double-qwen-drafter"]
    finally:
        del os.environ["CASEFORGE_OPENAI_BASE_URL"]
    found, items = {}, {}
    for name, run_id in ids.items():
        con = connect(built.warehouses[name])
        try:
            found[name] = evalstore.load_metrics(con, run_id)
            items[name] = [r[0] for r in con.execute("SELECT item_id FROM eval.item_outputs WHERE eval_run_id = ?",
                                                      [run_id]).fetchall()]
        finally:
            con.close()
    found["_items"] = items
    return found


@pytest.fixture(scope="module")
def both_ways(built, tmp_path_factory):
    """One answer set through caseforge eval, each release's inspect task and their lm-eval tasks."""
    work = tmp_path_factory.mktemp("same_numbers")
    double = RecordedAnswersDouble()
    claims = casefacts_answers(double, built, work)
    aquaechr_answers(double, built)
    casegen_answers(double, built)
    with ChatServerDouble(double) as server:
        started = time.monotonic()
        caseforge = caseforge_eval_metrics(built, work, server.base_url, claims)
        TIMINGS["caseforge eval, three benchmarks (plain steps)"] = round(time.monotonic() - started, 1)
        casegen_ids = sorted(caseforge["_items"]["casegen"])
        options = {"casefacts": ["-T", "split=all"], "aquaechr": [],
                   "casegen": ["--sample-id", ",".join(casegen_ids), "-T", "judge=openai-api/local/double-llama-judge"]}
        models = {"casefacts": "double-casefacts", "aquaechr": "double-aquaechr", "casegen": "double-qwen-drafter"}
        inspect = {}
        for name, release in built.releases.items():
            done, logs = inspect_eval(release, work, server.base_url, models[name], *options[name],
                                      label=f"inspect {name} replayed answers")
            assert done.returncode == 0, done.stderr[-3000:]
            inspect[name] = inspect_metrics(inspect_log(logs))
        chosen = {"caseforge_casefacts": list(range(11)), "caseforge_aquaechr": list(range(5)),
                  "caseforge_casegen": positions(built.releases["casegen"], casegen_ids)}
        metadata = {"split": "all", "judge_model": "double-llama-judge", "judge_base_url": server.base_url}
        done, out = lm_eval(lm_eval_folder(built.releases, work), work, server.base_url, "double", "--samples", json.dumps(chosen),
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


# ---------------------------------------------------------------- a changed release


def test_a_release_changed_after_export_is_refused_by_both_harnesses_in_one_line(built, tmp_path):
    release = tmp_path / "casefacts"
    shutil.copytree(built.releases["casefacts"], release)
    table = pq.read_table(release / "data" / "test.parquet")
    labels = ["SUPPORTED"] * table.num_rows
    pq.write_table(table.set_column(table.schema.get_field_index("label"), "label", pa.array(labels)),
                   release / "data" / "test.parquet")
    line = (f"caseforge release refused: casefacts {json.loads((release / 'release.json').read_text())['version']}: "
            "data/test.parquet changed after export (sha256 differs from MANIFEST.sha256); score only the release as "
            "it was written")
    with ChatServerDouble(any_answer) as double:
        done, _ = inspect_eval(release, tmp_path, double.base_url, "double", label="inspect on a changed release")
        assert done.returncode != 0 and done.stderr.strip().splitlines()[-1] == line, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        done, _ = lm_eval(release / "harness" / "lm_eval", tmp_path, double.base_url, "double",
                          tasks="caseforge_casefacts", label="lm-eval on a changed release")
        assert done.returncode != 0 and done.stderr.strip().splitlines()[-1] == line, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert double.asked == []


# ---------------------------------------------------------------- docs/evaluate.md, run as written

DOCS = PROJECT_ROOT / "docs" / "evaluate.md"
SECTION = "## Two commands: inspect and lm-eval against vLLM"
MARKED = re.compile(r"<!-- docs-test: (?P<kind>[\w-]+) (?P<name>[\w-]+) -->\n+```bash\n(?P<body>.*?)```", re.S)


def test_the_two_commands_of_docs_evaluate_run_as_written(built, tmp_path):
    """Every block of the page's walk-through, copied from the page: `vllm serve` stands in for a GPU machine and is
    replaced by the recorded-answers server (its URL for http://gpu-box:8000/v1), the viewer gets a free port; the
    commands run beside a copy of the CaseFacts release where the nightly writes it. README shows the same two."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1)]
    found = [m.groupdict() for m in MARKED.finditer(section)]
    assert len(found) == section.count("```") // 2, "a fenced block of the walk-through has no docs-test marker"
    assert [(b["kind"], b["name"]) for b in found] == [("stand-in", "vllm"), ("run", "inspect"), ("run", "lm-eval"),
                                                      ("serve", "inspect-view")]
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    for block in found[1:3]:
        assert block["body"].splitlines()[-1] in readme, f"README does not show the {block['name']} command"
    shutil.copytree(built.releases["casefacts"], tmp_path / "data" / "caseforge-releases" / "casefacts")
    port = free_port()
    with ChatServerDouble(any_answer) as double:
        env = harness_env(tmp_path)
        for block in found[1:3]:
            script = block["body"].replace("http://gpu-box:8000/v1", double.base_url)
            done = timed(f"docs/evaluate.md: {block['name']}", ["bash", "-c", script], tmp_path, env)
            assert done.returncode == 0, done.stderr[-3000:]
        assert len(inspect_log(tmp_path / "evals" / "inspect")["samples"]) == 2
        metrics, samples = lm_eval_results(tmp_path / "evals" / "lm_eval")
        assert len(samples["caseforge_casefacts"]) == 2 and "verdict_accuracy" in metrics["caseforge_casefacts"]
    # the harness ran in place: the release is still whole, and still caseforge's to replace at the next nightly
    release = tmp_path / "data" / "caseforge-releases" / "casefacts"
    assert verify_release(release) == [] and not_our_release(release, "casefacts") is None
    viewer = subprocess.Popen(["bash", "-c", found[3]["body"].replace("--port 7575", f"--port {port}")], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert viewer.poll() is None, "inspect view ended"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "inspect view did not serve within 120 s"
            time.sleep(0.5)
    finally:
        stop_process_group(viewer, 10)

