"""CaseGen end to end: build items, generate with a test double, judge, score, report; then replay."""
import importlib.util
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from caseforge.llm.backends.replay import ReplayMiss
from caseforge.settings import load_settings
from caseforge.tasks.casegen import build, pipeline
from caseforge.tasks.casegen.eval import pipeline as eval_pipeline
from caseforge.warehouse.connection import connect
from warehouse_rows import rows as query

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load_double():
    spec = importlib.util.spec_from_file_location("casegen_scripted_double",
                                                  FIXTURES / "casegen" / "scripted_double.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


double = load_double()


@pytest.fixture
def scripted(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "casegen_scripted_double", double)
    double.install(monkeypatch)
    return double


def built(db_path):
    config = load_settings(db_path)
    report = pipeline.run_build(config, from_file=str(double.FIXTURE_CASES))
    assert report.ok, report.failures
    return config


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """One replayed evaluation of the fixture cases, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("casegen-replay")
    db_path = root / "warehouse.duckdb"
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(root / "reports"))
    report, result = eval_pipeline.run_eval(config, params)
    return db_path, params, report, result


def outputs(db_path, run_id):
    """The run's eval.item_outputs rows as dicts, gold/predicted/scores parsed."""
    rows = query(db_path, "SELECT item_id, gold, predicted, scores, status, reason FROM eval.item_outputs "
                          "WHERE eval_run_id = ? ORDER BY item_id", [run_id])
    return [{"item_id": i, "gold": json.loads(g), "predicted": json.loads(p), "scores": json.loads(s),
             "status": st, "reason": r} for i, g, p, s, st, r in rows]


def stored_metrics(db_path, run_id):
    return {name: (value, note) for name, value, note in
            query(db_path, "SELECT metric, value, note FROM eval.metrics WHERE eval_run_id = ?", [run_id])}


def test_build_is_idempotent_and_records_nothing_twice(replayed):
    db_path = replayed[0]
    again = pipeline.run_build(load_settings(db_path), from_file=str(double.FIXTURE_CASES))
    assert again.counts["items_unchanged"] == 12 and again.counts["items_new"] == 0
    assert query(db_path, "SELECT task, count(*) FROM curated.casegen_items GROUP BY task ORDER BY task") == [
        ("defense", 3), ("facts", 3), ("judgment", 3), ("reasoning", 3)]


def test_unreadable_lines_are_quarantined_and_the_rest_is_built(db_path, tmp_path):
    source = tmp_path / "cases.jsonl"
    source.write_text(double.FIXTURE_CASES.read_text(encoding="utf-8") + "{broken json\n[1, 2]\n", encoding="utf-8")
    report = pipeline.run_build(load_settings(db_path), from_file=str(source))
    assert report.counts["items_loaded"] == 12 and report.counts["quarantined"] == 2
    assert any("cases.jsonl:4: not a CaseGen record" in f for f in report.failures)
    assert query(db_path, "SELECT count(*) FROM ops.quarantine WHERE table_name = 'casegen_items'") == [(2,)]


def test_skipped_tasks_are_recorded_with_reasons(db_path, tmp_path):
    source = tmp_path / "partial.jsonl"
    source.write_text(json.dumps({"id": "p1", "fact": "经审理查明：借款属实。", "reasoning": "本院认为：应当还款。",
                                  "judgement": "被告归还借款。"}, ensure_ascii=False) + "\n", encoding="utf-8")
    pipeline.run_build(load_settings(db_path), from_file=str(source))
    rows = query(db_path, "SELECT task, reason FROM curated.casegen_item_skips ORDER BY task")
    assert [r[0] for r in rows] == ["defense", "facts", "reasoning"]
    assert rows[2][1] == "missing gold section(s): claims, defense"


def test_an_empty_cn_judgments_table_is_a_clear_error(db_path):
    con = connect(db_path)
    with pytest.raises(build.SourceTableMissing, match="no complete ordinary-procedure judgment"):
        build.select_source_rows(con, None)


def test_sources_from_cn_judgments_prefer_the_latest_representatives(db_path):
    con = connect(db_path)
    for doc_id, simplified, complete in [("a", None, True), ("b", None, True), ("c", "简易程序", True),
                                         ("d", None, False)]:
        con.execute("INSERT INTO curated.cn_judgments (doc_id, source_format, content_sha256, raw_sha256, updated_at, simplified, complete, full_text, "
                    "claims, defense, facts, reasoning, judgment) "
                    "VALUES (?, 'test', 'x', 'x', now(), ?, ?, '全文', '诉称', '辩称', '查明', '认为', '判决')",
                    [doc_id, simplified, complete])
    assert list(build.select_source_rows(con, None)["doc_id"]) == ["a", "b"]
    for selection, doc_id, when in [("old", "a", "2026-01-01"), ("new", "b", "2026-02-01")]:
        con.execute("INSERT INTO curated.cn_representatives (selection, doc_id, cluster, distance, rank_in_cluster, "
                    "cluster_size, embedder, n_clusters, seed, selected_at) VALUES (?, ?, 0, 0.1, 1, 1, 'tfidf-char', "
                    "1, 0, ?)", [selection, doc_id, when])
    assert list(build.select_source_rows(con, None)["doc_id"]) == ["b"]


def test_end_to_end_with_the_double_then_a_rerun_makes_no_llm_calls(db_path, tmp_path, scripted):
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                 plots=False)
    report, result = eval_pipeline.run_eval(config, params)
    assert report.ok, report.failures
    assert report.counts["judge_llm_calls"] == 12
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    assert query(db_path, "SELECT task, system, backend, model, dataset, n_items, n_failed FROM eval.runs") == [
        ("casegen", double.DRAFTER, "scripted-double", double.DRAFTER, "curated.casegen_items", 12, 0)]
    rows = outputs(db_path, run_id)
    assert [r["status"] for r in rows] == ["ok"] * 12
    # every dimension is a number in 1..10 or None with a reason, and the scores say the same
    for row in rows:
        judge = row["predicted"]["judge"]
        assert judge["model"] == double.JUDGE and judge["status"] == "ok" and judge["reply_format"] in ("json", "lines")
        for dimension, reading in judge["dimensions"].items():
            assert (reading["score"] is None) == (reading["reason"] is not None) == (reading["status"] != "ok")
            assert reading["score"] is None or 1 <= reading["score"] <= 10
            assert row["scores"]["judge_" + dimension] == reading["score"]
    again, again_result = eval_pipeline.run_eval(config, params)
    assert again.counts.get("judge_llm_calls", 0) == 0 and again.counts["judge_cache_hits"] == 12
    assert again.counts[f"generate_{double.DRAFTER}_llm_calls"] == 0
    assert again_result["eval_run_ids"] == {double.DRAFTER: run_id}
    assert query(db_path, "SELECT count(*) FROM eval.item_outputs") == [(12,)]
    # the leaderboard belongs to its warehouse: <db dir>/<db name>-reports/casegen/ (not ./data/reports/casegen/)
    assert sorted(result["files"]) == [str(db_path.parent / f"{db_path.stem}-reports" / "casegen" / name)
                                       for name in ("casegen_leaderboard.csv", "casegen_leaderboard.md")]


def test_replay_file_reproduces_the_run_end_to_end(replayed):
    db_path, params, report, result = replayed
    assert report.ok, report.failures
    assert report.counts["judge_ok"] == 12 and report.counts["metrics_scored"] == 12
    assert report.counts.get("judge_llm_calls", 0) == 12     # answered by the replay backend, not a cache
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    # the double leaves a dimension out for some items: recorded as missing, never as a number
    missing = [d for row in outputs(db_path, run_id) for d in row["predicted"]["judge"]["dimensions"].values()
               if d["status"] == "missing"]
    assert len(missing) == report.counts["judge_scores_missing"] > 0 and all(d["score"] is None for d in missing)
    metrics = stored_metrics(db_path, run_id)
    assert metrics["n_judge_scores_missing"][0] == len(missing)
    assert "compat" in metrics["rougeL_compat_f1"][1] and "compat" in metrics["rougeL_compat_f1/facts"][1]
    skipped = "skipped: no BERTScore model configured (--bert-model PATH to a local folder)"
    assert metrics["bertscore_f1"] == (None, skipped)
    out_dir = Path(params.out_dir)
    markdown = (out_dir / "casegen_leaderboard.md").read_text(encoding="utf-8")
    assert "### defense" in markdown and "### judgment" in markdown and "BERTScore skipped" in markdown
    csv_header = (out_dir / "casegen_leaderboard.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "defense/overall" in csv_header and "judgment/provision_accuracy" in csv_header
    assert (out_dir / "casegen_scores_reasoning.png").stat().st_size > 1000


def test_replay_refuses_an_unrecorded_model(replayed, tmp_path):
    config = load_settings(replayed[0])
    params = eval_pipeline.EvalParams(models=["qwen-unrecorded"], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(tmp_path / "r"))
    with pytest.raises(ReplayMiss):
        eval_pipeline.run_eval(config, params)


def test_human_scores_give_agreement_per_task_and_averaged(replayed, tmp_path):
    db_path = tmp_path / "copy.duckdb"
    shutil.copy(replayed[0], db_path)
    overall = query(db_path, "SELECT item_id, gold ->> 'task', (scores ->> 'judge_overall')::DOUBLE FROM "
                             "eval.item_outputs WHERE (scores ->> 'judge_overall') IS NOT NULL")
    assert len(overall) > 6
    # people who agree with the judge's ranking exactly: a monotone transform of its overall score
    human = tmp_path / "human.jsonl"
    human.write_text("\n".join(json.dumps({"item_id": i, "model": double.DRAFTER, "score": 2 * s + 1})
                               for i, _, s in overall), encoding="utf-8")
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(tmp_path / "reports"), human_scores=str(human),
                                 plots=False)
    report, result = eval_pipeline.run_eval(load_settings(db_path), params)
    assert report.counts["judge_cache_hits"] == 12
    judge = result["agreement"]["llm_judge"]
    defined = [t for t in ("defense", "facts", "reasoning", "judgment") if judge[t]["kendall"] == judge[t]["kendall"]]
    assert defined and all(judge[t]["spearman"] == pytest.approx(1.0) for t in defined)
    assert judge["average"]["pearson"] == pytest.approx(1.0)
    assert "rougeL_char_f1" in result["agreement"]
    assert (tmp_path / "reports" / "casegen_agreement.json").exists()


def test_same_family_judge_is_refused(db_path, tmp_path):
    from caseforge.families import SameFamily

    params = eval_pipeline.EvalParams(models=["qwen2.5-7b"], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model="qwen2.5-72b", out_dir=str(tmp_path))
    with pytest.raises(SameFamily):
        eval_pipeline.run_eval(load_settings(db_path), params)


def test_failed_drafts_and_judge_errors_are_recorded_not_dropped(db_path, tmp_path, monkeypatch, scripted):
    from caseforge.llm.types import Completion

    original = double.ScriptedCaseGenBackendDouble._answer

    def flaky_answer(self, request):
        if request.template_id.endswith("generate_defense.j2"):
            return ""                                        # an empty draft
        return original(self, request)

    def flaky_batch(self, requests):
        out = []
        for request in requests:
            if request.template_id.endswith("judge_facts.j2"):
                out.append(Completion(text=None, error="HTTP 500 from judge server"))
            else:
                out.append(Completion(text=flaky_answer(self, request)))
        return out

    monkeypatch.setattr(double.ScriptedCaseGenBackendDouble, "complete_batch", flaky_batch)
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                 out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert not report.ok
    assert sum("generation" in f and "empty output" in f for f in report.failures) == 3
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    rows = outputs(db_path, run_id)
    assert len(rows) == 12                                    # nothing dropped
    failed = [r for r in rows if r["status"] == "failed"]
    assert {(r["gold"]["task"], r["reason"]) for r in failed} == {("defense", "generation failed: empty output")}
    assert len(failed) == 3 and all(r["predicted"]["text"] is None and r["predicted"]["judge"] is None
                                    and r["scores"] == {} for r in failed)
    facts = [r for r in rows if r["gold"]["task"] == "facts"]
    assert {(r["status"], r["predicted"]["judge"]["status"], r["predicted"]["judge"]["reason"]) for r in facts} == {
        ("ok", "failed", "judge call failed: HTTP 500 from judge server")}
    assert all("rougeL_char_f1" in r["scores"] and "judge_overall" not in r["scores"] for r in facts)
    metrics = {name: value for name, (value, _) in stored_metrics(db_path, run_id).items()}
    assert metrics["n"] == 12 and metrics["n_failed"] == 3 and metrics["n_failed/defense"] == 3
    assert metrics["n_judge_failed"] == 3 and metrics["n_judge_failed/facts"] == 3
    assert "judge_overall/defense" not in metrics and "rougeL_char_f1/defense" not in metrics
    assert metrics["n/defense"] == 3 and metrics["judge_overall/judgment"] is not None
    assert query(db_path, "SELECT n_items, n_failed FROM eval.runs WHERE eval_run_id = ?", [run_id]) == [(12, 3)]


def test_over_long_inputs_are_cut_from_the_middle_and_marked(db_path, tmp_path, scripted):
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig, case_input_text
    from caseforge.tasks.casegen.eval.truncate import CUT_MARK

    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=None, task="facts",
                                 config=EvalConfig(max_input_chars=120), out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.counts["inputs_cut"] == 3
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    assert stored_metrics(db_path, run_id)["judge_overall"] == (None, "no judge (--skip-judge): reference metrics only")
    assert stored_metrics(db_path, run_id)["n_inputs_cut/facts"][0] == 3
    rows = query(db_path, "SELECT o.predicted -> 'input' ->> 'unit', (o.predicted -> 'input' ->> 'length')::INTEGER, "
                          "(o.predicted -> 'input' ->> 'kept')::INTEGER, c.request, i.inputs FROM eval.item_outputs o "
                          "JOIN ops.llm_calls c ON c.identity = (o.predicted ->> 'request_identity') "
                          "JOIN curated.casegen_items i USING (item_id) WHERE (o.predicted -> 'input' ->> 'cut')::BOOLEAN")
    assert len(rows) == 3
    for unit, length, kept, request, inputs in rows:
        full = case_input_text("facts", json.loads(inputs))
        prompt = json.loads(request)["messages"][-1]["content"]
        assert unit == "chars" and length == len(full) > 120 and kept == 120
        # head and tail kept, the middle gone, the cut marked
        assert full[:60] + CUT_MARK + full[-60:] in prompt
        assert full[60:-60] not in prompt


def test_a_token_budget_needs_a_local_tokenizer(db_path, tmp_path):
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig, input_measure

    with pytest.raises(FileNotFoundError, match="local tokenizer folder"):
        input_measure(EvalConfig(max_input_tokens=100, tokenizer_path=str(tmp_path / "absent")))


def test_two_configurations_keep_separate_runs_and_a_rerun_replaces_its_own(db_path, tmp_path, scripted):
    """The defect: generations, judgements and metrics were keyed by (item, model) only, so a run with another
    --max-input-chars overwrote the first one's rows. Now each configuration is its own evaluation run."""
    from caseforge import evalstore
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig

    config = built(db_path)

    def run(max_input_chars):
        params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                          task="facts", config=EvalConfig(max_input_chars=max_input_chars),
                                          out_dir=str(tmp_path / f"reports-{max_input_chars}"), plots=False)
        report, result = eval_pipeline.run_eval(config, params)
        assert report.ok, report.failures
        return report, result

    def stored(run_id):
        con = duckdb.connect(str(db_path), read_only=True)
        try:
            return (evalstore.load_metrics(con, run_id),
                    con.execute("SELECT item_id, predicted, scores FROM eval.item_outputs WHERE eval_run_id = ? "
                                "ORDER BY item_id", [run_id]).fetchall())
        finally:
            con.close()

    wide, _ = run(8000)
    wide_id = wide.results["eval_run_ids"][double.DRAFTER]
    wide_stored = stored(wide_id)
    narrow, narrow_result = run(120)
    narrow_id = narrow.results["eval_run_ids"][double.DRAFTER]
    assert narrow_id != wide_id and narrow_result["eval_run_ids"] == {double.DRAFTER: narrow_id}
    assert narrow.counts["inputs_cut"] == 3 and wide.counts.get("inputs_cut", 0) == 0

    # the second configuration left the first one's outputs and metrics as they were
    assert stored(wide_id) == wide_stored
    runs = query(db_path, "SELECT eval_run_id, system, json_extract(params, '$.max_input_chars')::INTEGER, n_items "
                          "FROM eval.runs WHERE task = 'casegen' ORDER BY 3")
    assert runs == [(narrow_id, double.DRAFTER, 120, 3), (wide_id, double.DRAFTER, 8000, 3)]
    kept = dict(query(db_path, "SELECT eval_run_id, list(DISTINCT (predicted -> 'input' ->> 'kept')::INTEGER) "
                               "FROM eval.item_outputs GROUP BY 1"))
    assert kept[narrow_id] == [120] and all(k > 120 for k in kept[wide_id])
    assert stored(narrow_id)[0]["n_inputs_cut"] == 3 and wide_stored[0]["n_inputs_cut"] == 0

    # the same configuration again: no LLM call, the same run id, its rows replaced (no duplicates)
    again, _ = run(8000)
    assert again.results["eval_run_ids"] == {double.DRAFTER: wide_id}
    assert again.counts.get(f"generate_{double.DRAFTER}_llm_calls", 0) == 0
    assert again.counts.get("judge_llm_calls", 0) == 0 and again.counts["judge_cache_hits"] == 3
    assert query(db_path, "SELECT eval_run_id, count(*) FROM eval.item_outputs GROUP BY 1 ORDER BY 1") == sorted(
        [(wide_id, 3), (narrow_id, 3)])
    assert query(db_path, "SELECT count(*) FROM eval.runs WHERE task = 'casegen'") == [(2,)]
    metrics_again, outputs_again = stored(wide_id)
    assert metrics_again == wide_stored[0]
    # the rows are the same but for the ops run that wrote them
    def without_ops_run(rows):
        return [(i, {**json.loads(p), "ops_run_id": None}, s) for i, p, s in rows]

    assert without_ops_run(outputs_again) == without_ops_run(wide_stored[1])


def test_cli_prints_each_models_metrics_from_the_store(tmp_path, capsys):
    """`caseforge eval casegen` printed nothing; now the flow returns each model's run id and the CLI prints
    that run's key metrics from the store."""
    from caseforge.cli import main

    db = tmp_path / "w.duckdb"
    built(db)
    code = main(["eval", "casegen", "--model", double.DRAFTER, "--llm", "replay", "--replay-file",
                 str(double.REPLAY_FILE), "--judge-model", double.JUDGE, "--out-dir", str(tmp_path / "reports"),
                 "--no-plots", "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0
    (run_id,), = query(db, "SELECT eval_run_id FROM eval.runs WHERE task = 'casegen'")
    lines = out.splitlines()
    start = lines.index(f"{double.DRAFTER} (evaluation run {run_id})")
    printed = {line.split()[0]: line.split()[1] for line in lines[start + 1:] if line.strip()}
    stored = {name: value for name, (value, _) in stored_metrics(db, run_id).items()}
    assert printed["n"] == "12" and printed["n_failed"] == "0"
    assert printed["judge_overall"] == f"{stored['judge_overall']:.4f}"
    assert printed["rougeL_char_f1"] == f"{stored['rougeL_char_f1']:.4f}"
    assert printed["bertscore_f1"] == "n/a" and "skipped" in out


def test_every_setting_that_changes_results_is_part_of_the_run_id():
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig

    from caseforge import evalstore

    def run_id(**changes):
        options = {"models": [double.DRAFTER], "llm": "openai", "judge_model": double.JUDGE, **changes}
        params = eval_pipeline.run_params(eval_pipeline.EvalParams(**options))
        return evalstore.eval_run_id("casegen", double.DRAFTER, "same items", params)

    base = run_id()
    changed = [run_id(llm="vllm"), run_id(judge_model="mistral-large"), run_id(judge_llm="vllm"),
               run_id(judge_model=None), run_id(task="facts"), run_id(limit=5), run_id(bert_model="/models/bert"),
               run_id(config=EvalConfig(max_input_chars=4000)), run_id(config=EvalConfig(max_new_tokens=512)),
               run_id(config=EvalConfig(judge_max_input_chars=3000)),
               run_id(config=EvalConfig(max_input_tokens=2000, tokenizer_path="/models/tok"))]
    assert len({base, *changed}) == len(changed) + 1
    # what does not change a result does not split a run: files, plots, replay recordings, the human scores
    assert run_id(out_dir="/elsewhere", plots=False, replay_file="r.jsonl", human_scores="h.csv") == base
    # a token budget makes the character budget irrelevant
    tokens = EvalConfig(max_input_tokens=2000, tokenizer_path="/models/tok")
    assert run_id(config=tokens) == run_id(config=EvalConfig(max_input_chars=1, max_input_tokens=2000,
                                                             tokenizer_path="/models/tok"))


def test_each_evaluated_model_is_its_own_run(db_path, tmp_path, scripted):
    other = "scripted-double-glm-drafter"
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER, other], llm="scripted-double", judge_model=double.JUDGE,
                                      task="judgment", out_dir=str(tmp_path / "reports"), plots=False)
    report, result = eval_pipeline.run_eval(config, params)
    assert report.ok, report.failures
    run_ids = report.results["eval_run_ids"]
    assert set(run_ids) == {double.DRAFTER, other} and len(set(run_ids.values())) == 2
    assert query(db_path, "SELECT system, model, backend, n_items FROM eval.runs ORDER BY 1") == sorted([
        (double.DRAFTER, double.DRAFTER, "scripted-double", 3), (other, other, "scripted-double", 3)])
    assert report.counts["judge_ok"] == 6          # one judge job for both models' drafts
    for model, run_id in run_ids.items():
        assert len(outputs(db_path, run_id)) == 3
    csv = (tmp_path / "reports" / "casegen_leaderboard.csv").read_text(encoding="utf-8").splitlines()
    assert sorted(line.split(",")[0] for line in csv[1:]) == sorted([double.DRAFTER, other])
    assert all(f"evaluation run of {m}: {r}" in result["markdown"] for m, r in run_ids.items())


def test_an_evaluation_whose_judge_gave_no_readable_score_fails(db_path, tmp_path, monkeypatch, scripted):
    original = double.ScriptedCaseGenBackendDouble._answer

    def rambling_judge(self, request):
        if "/judge_" in request.template_id:
            return "The draft is quite good overall, with room to improve."   # no score anywhere
        return original(self, request)

    monkeypatch.setattr(double.ScriptedCaseGenBackendDouble, "_answer", rambling_judge)
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                      out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert not report.ok
    assert report.failures == [f"judge {double.JUDGE}: 0 of 12 judged drafts gave a readable score"]
    metrics = {name: value for name, (value, _) in stored_metrics(db_path, report.results["eval_run_ids"][
        double.DRAFTER]).items()}
    # stored, and scored by nothing: every score missing, each counted
    assert metrics["n"] == 12 and metrics["judge_overall"] is None and metrics["n_judge_scores_missing"] == 57


def test_the_casegen_release_holds_every_item_with_its_inputs_and_verifies(db_path, tmp_path):
    from caseforge.release import verify_release
    from caseforge.tasks.casegen import release

    built(db_path)
    con = connect(db_path)
    try:
        items = con.execute("SELECT item_id, task FROM curated.casegen_items ORDER BY item_id").fetchall()
        written = release.write(con, tmp_path / "casegen")
    finally:
        con.close()
    assert verify_release(written.path) == []
    rows = [json.loads(line) for line in (written.path / "data" / "casegen_items.jsonl").read_text().splitlines()]
    assert sorted((r["item_id"], r["task"]) for r in rows) == items and len(items) == 12
    assert all(isinstance(r["inputs"], dict) and r["reference"] for r in rows)
    card = (written.path / "README.md").read_text()
    assert "## Distribution: task" in card and "CC BY-NC-SA 4.0" in card


def test_an_empty_casegen_table_is_not_released(db_path, tmp_path):
    from caseforge.release import NothingToRelease
    from caseforge.tasks.casegen import release

    con = connect(db_path)
    try:
        with pytest.raises(NothingToRelease, match="casegen_items is empty"):
            release.write(con, tmp_path / "casegen")
    finally:
        con.close()
    assert not (tmp_path / "casegen").exists()


def test_a_draft_cut_off_at_max_new_tokens_is_a_failed_item_that_is_neither_judged_nor_scored(
        db_path, tmp_path, monkeypatch, scripted):
    """The defect (issue 28): a draft that reached max_new_tokens was kept as an ok item, judged and scored, so a
    night whose every draft was cut reported means over them and "all stages ok"."""
    from caseforge.llm.types import Completion

    original = double.ScriptedCaseGenBackendDouble.complete_batch

    def drafts_reach_the_limit(self, requests):
        out = original(self, requests)
        return [Completion(text=c.text, finish_reason="length", completion_tokens=256)
                if r.template_id.endswith("generate_facts.j2") else c for r, c in zip(requests, out)]

    monkeypatch.setattr(double.ScriptedCaseGenBackendDouble, "complete_batch", drafts_reach_the_limit)
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                      out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert not report.ok and report.counts["drafts_cut_at_max_new_tokens"] == 3
    assert sum("answer cut off at max_tokens (256 tokens)" in f for f in report.failures) == 3
    assert report.counts["judge_llm_calls"] == 9                     # the 9 drafts that were not cut
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    rows = outputs(db_path, run_id)
    facts = [r for r in rows if r["gold"]["task"] == "facts"]
    assert len(facts) == 3 and all(
        r["status"] == "failed" and r["reason"] == "generation failed: answer cut off at max_tokens (256 tokens)"
        and r["predicted"]["output_cut_at_max_new_tokens"] and r["predicted"]["text"]      # kept, to be read
        and r["predicted"]["judge"] is None and r["scores"] == {} for r in facts)
    assert all(r["status"] == "ok" for r in rows if r["gold"]["task"] != "facts")
    metrics = {name: value for name, (value, _) in stored_metrics(db_path, run_id).items()}
    assert metrics["n_failed"] == 3 and metrics["n_failed/facts"] == 3
    assert "judge_overall/facts" not in metrics and "rougeL_char_f1/facts" not in metrics
    assert query(db_path, "SELECT n_items, n_failed FROM eval.runs WHERE eval_run_id = ?", [run_id]) == [(12, 3)]


def test_degenerate_drafts_are_rejected_by_the_content_gate_and_an_evaluation_mostly_failed_fails(
        db_path, tmp_path, monkeypatch, scripted):
    """Drafts that repeat the prompt's instruction (what SmolLM2 wrote in the nightly) or a long run of one
    character are failed items with the rules they broke, quarantined; with most items failed the stage says
    that its means are not a result."""
    original = double.ScriptedCaseGenBackendDouble._answer

    def degenerate(self, request):
        if request.template_id.endswith("generate_reasoning.j2"):
            return "请以“本院认为，”开头写出说理部分。\n\n" * 12
        if request.template_id.endswith(("generate_facts.j2", "generate_defense.j2")):
            return "经审理查明：" + "0" * 200
        return original(self, request)

    monkeypatch.setattr(double.ScriptedCaseGenBackendDouble, "_answer", degenerate)
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                      out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.counts["drafts_rejected"] == 9 and report.counts["judge_llm_calls"] == 3
    assert report.failures[0] == (f"evaluation of {double.DRAFTER}: 9 of 12 items failed (9 rejected by the "
                                   "content gate); its means are over the 3 that did not, not a result")
    rows = {r["gold"]["task"]: r for r in outputs(db_path, report.results["eval_run_ids"][double.DRAFTER])}
    assert "expect_column_values_to_not_echo_prompt on draft" in rows["reasoning"]["reason"]
    assert "expect_column_values_to_not_repeat_ngrams on draft" in rows["reasoning"]["reason"]
    assert "expect_column_values_to_not_run_one_character on draft" in rows["facts"]["reason"]
    assert rows["judgment"]["status"] == "ok"
    quarantined = query(db_path, "SELECT reason FROM ops.quarantine WHERE table_name = 'casegen_drafts'")
    assert len(quarantined) == 9 and all(r[0].startswith("gate: expect_column_values_to_") for r in quarantined)


def test_a_degenerate_judge_reply_is_a_failed_judgement_not_a_score(db_path, tmp_path, monkeypatch, scripted):
    """The defect (issue 28): Gemma 3 270M scored every draft 10 on every dimension with the analysis
    " 1000000000…"; those tens were averaged into the leaderboard."""
    original = double.ScriptedCaseGenBackendDouble._answer

    def judge_loops(self, request):
        if request.template_id.endswith("judge_facts.j2"):
            scores = {"事实准确性": 10, "相关性": 10, "逻辑连贯性": 10, "完整性": 10, "总体评分": 10}
            return json.dumps({"分析": " 1" + "0" * 400, **scores}, ensure_ascii=False)
        return original(self, request)

    monkeypatch.setattr(double.ScriptedCaseGenBackendDouble, "_answer", judge_loops)
    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=double.JUDGE,
                                      out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.counts["judge_replies_rejected"] == 3 and not report.ok
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    facts = [r for r in outputs(db_path, run_id) if r["gold"]["task"] == "facts"]
    assert all(r["predicted"]["judge"]["status"] == "failed" and r["predicted"]["judge"]["dimensions"] == {}
               and "expect_column_values_to_not_run_one_character on analysis" in r["predicted"]["judge"]["reason"]
               and "judge_overall" not in r["scores"] and "rougeL_char_f1" in r["scores"] for r in facts)
    metrics = {name: value for name, (value, _) in stored_metrics(db_path, run_id).items()}
    assert metrics["n_judge_failed/facts"] == 3 and "judge_overall/facts" not in metrics
    assert metrics["judge_overall"] < 10


def test_judge_requests_constrain_the_reply_to_every_score_of_the_task(replayed):
    from caseforge.tasks.casegen.eval.evaluate import JUDGE_STEP

    requests = [json.loads(r[0]) for r in query(replayed[0], "SELECT request FROM ops.llm_calls WHERE step = ?",
                                                [JUDGE_STEP])]
    assert len(requests) == 12
    facts = next(r for r in requests if "“经审理查明”的事实部分" in r["messages"][-1]["content"])
    schema = facts["json_schema"]
    assert schema["required"] == ["分析", "事实准确性", "相关性", "逻辑连贯性", "完整性", "总体评分"]
    assert schema["properties"]["总体评分"] == {"type": "integer", "enum": list(range(1, 11))}
    assert schema["additionalProperties"] is False
