"""CaseGen end to end: build items, generate with a test double, judge, score, report; then replay."""
import importlib.util
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from caseforge.config import settings
from caseforge.llm.backends.replay import ReplayMiss
from caseforge.tasks.casegen import build, pipeline
from caseforge.tasks.casegen.eval import pipeline as eval_pipeline
from caseforge.warehouse import connect

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
    config = settings(db_path)
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


def query(db_path, sql):
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_build_is_idempotent_and_records_nothing_twice(replayed):
    db_path = replayed[0]
    again = pipeline.run_build(settings(db_path), from_file=str(double.FIXTURE_CASES))
    assert again.counts["items_unchanged"] == 12 and again.counts["items_new"] == 0
    assert query(db_path, "SELECT task, count(*) FROM curated.casegen_items GROUP BY task ORDER BY task") == [
        ("defense", 3), ("facts", 3), ("judgment", 3), ("reasoning", 3)]


def test_unreadable_lines_are_quarantined_and_the_rest_is_built(db_path, tmp_path):
    source = tmp_path / "cases.jsonl"
    source.write_text(double.FIXTURE_CASES.read_text(encoding="utf-8") + "{broken json\n[1, 2]\n", encoding="utf-8")
    report = pipeline.run_build(settings(db_path), from_file=str(source))
    assert report.counts["items_loaded"] == 12 and report.counts["quarantined"] == 2
    assert any("cases.jsonl:4: not a CaseGen record" in f for f in report.failures)
    assert query(db_path, "SELECT count(*) FROM ops.quarantine WHERE table_name = 'casegen_items'") == [(2,)]


def test_skipped_tasks_are_recorded_with_reasons(db_path, tmp_path):
    source = tmp_path / "partial.jsonl"
    source.write_text(json.dumps({"id": "p1", "fact": "经审理查明：借款属实。", "reasoning": "本院认为：应当还款。",
                                  "judgement": "被告归还借款。"}, ensure_ascii=False) + "\n", encoding="utf-8")
    pipeline.run_build(settings(db_path), from_file=str(source))
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
                                 out_dir=str(tmp_path / "reports"), plots=False)
    report, result = eval_pipeline.run_eval(config, params)
    assert report.ok, report.failures
    assert report.counts["judge_llm_calls"] == 12
    assert query(db_path, "SELECT status, count(*) FROM eval.casegen_generations GROUP BY ALL") == [("ok", 12)]
    # every dimension row is a number in 1..10 or NULL with a reason
    bad = query(db_path, "SELECT count(*) FROM eval.casegen_judgements WHERE (score IS NULL) <> (reason IS NOT NULL) "
                         "OR score < 1 OR score > 10")
    assert bad == [(0,)]
    again, _ = eval_pipeline.run_eval(config, params)
    assert again.counts.get("judge_llm_calls", 0) == 0 and again.counts["judge_cache_hits"] == 12
    assert again.counts[f"generate_{double.DRAFTER}_llm_calls"] == 0
    assert {Path(p).name for p in result["files"]} == {"casegen_leaderboard.csv", "casegen_leaderboard.md"}


def test_replay_file_reproduces_the_run_end_to_end(replayed):
    db_path, params, report, result = replayed
    assert report.ok, report.failures
    assert report.counts["judge_ok"] == 12 and report.counts["metrics_scored"] == 12
    assert report.counts.get("judge_llm_calls", 0) == 12     # answered by the replay backend, not a cache
    # the double leaves a dimension out for some items: recorded as missing, never as a number
    missing = query(db_path, "SELECT count(*), count(score) FROM eval.casegen_judgements WHERE status = 'missing'")
    assert missing[0][0] == report.counts["judge_scores_missing"] > 0 and missing[0][1] == 0
    compat = query(db_path, "SELECT reason FROM eval.casegen_metrics WHERE metric = 'rougeL_compat_f1' LIMIT 1")
    assert "compat" in compat[0][0]
    out_dir = Path(params.out_dir)
    markdown = (out_dir / "casegen_leaderboard.md").read_text(encoding="utf-8")
    assert "### defense" in markdown and "### judgment" in markdown and "BERTScore skipped" in markdown
    csv_header = (out_dir / "casegen_leaderboard.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "defense/overall" in csv_header and "judgment/provision_accuracy" in csv_header
    assert (out_dir / "casegen_scores_reasoning.png").stat().st_size > 1000


def test_replay_refuses_an_unrecorded_model(replayed, tmp_path):
    config = settings(replayed[0])
    params = eval_pipeline.EvalParams(models=["qwen-unrecorded"], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(tmp_path / "r"))
    with pytest.raises(ReplayMiss):
        eval_pipeline.run_eval(config, params)


def test_human_scores_give_agreement_per_task_and_averaged(replayed, tmp_path):
    db_path = tmp_path / "copy.duckdb"
    shutil.copy(replayed[0], db_path)
    overall = query(db_path, "SELECT item_id, task, score FROM eval.casegen_judgements WHERE dimension = 'overall'")
    # people who agree with the judge's ranking exactly: a monotone transform of its overall score
    human = tmp_path / "human.jsonl"
    human.write_text("\n".join(json.dumps({"item_id": i, "model": double.DRAFTER, "score": 2 * s + 1})
                               for i, _, s in overall), encoding="utf-8")
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(tmp_path / "reports"), human_scores=str(human),
                                 plots=False)
    report, result = eval_pipeline.run_eval(settings(db_path), params)
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
        eval_pipeline.run_eval(settings(db_path), params)


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
    assert query(db_path, "SELECT task, status, error FROM eval.casegen_generations WHERE status = 'failed' "
                          "GROUP BY ALL") == [("defense", "failed", "empty output")]
    judged = query(db_path, "SELECT status, reason FROM eval.casegen_judgements WHERE task = 'facts' GROUP BY ALL")
    assert judged == [("judge_failed", "judge call failed: HTTP 500 from judge server")]
    assert query(db_path, "SELECT count(*) FROM eval.casegen_judgements WHERE task = 'defense'") == [(0,)]


def test_over_long_inputs_are_cut_from_the_middle_and_marked(db_path, tmp_path, scripted):
    from caseforge.tasks.casegen.eval.evaluate import EvalConfig, case_input_text
    from caseforge.tasks.casegen.eval.truncate import CUT_MARK

    config = built(db_path)
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="scripted-double", judge_model=None, task="facts",
                                 config=EvalConfig(max_input_chars=120), out_dir=str(tmp_path / "reports"), plots=False)
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.counts["inputs_cut"] == 3
    rows = query(db_path, "SELECT g.input_unit, g.input_length, g.input_length_kept, c.request, i.inputs FROM "
                          "eval.casegen_generations g JOIN ops.llm_calls c ON c.identity = g.request_identity "
                          "JOIN curated.casegen_items i USING (item_id)")
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
