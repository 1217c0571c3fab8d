"""Migration 112: a warehouse made before it keeps every CaseGen evaluation row, moved from eval.casegen_* into the
evaluation store (eval.runs, eval.item_outputs, eval.metrics) in the shapes the new code writes and reads."""
import hashlib
import json

import pytest

from caseforge import evalstore
from caseforge.evalstore import ItemResult
from caseforge.tasks.casegen.eval import report, store
from caseforge.tasks.casegen.eval.evaluate import agreement_table
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import table_exists
from migration_support import connect_before

MIGRATION = 112
OLD_TABLES = ("eval.casegen_generations", "eval.casegen_judgements", "eval.casegen_metrics")
COMPAT = "rougeL_compat_ascii_only (the original code's tokenizer ...)"

ITEMS = [  # item_id, task, reference
    ("d1", "defense", "被告辩称：原告所述不实。"),
    ("d2", "defense", "被告辩称：已经还款。"),
    ("f1", "facts", "经审理查明：双方签订合同。"),
    ("j1", "judgment", "判决如下：驳回原告诉讼请求。"),
]
# item, model, backend, task, input cut, length, kept, output, status, error, ops run
GENERATIONS = [
    ("d1", "qwen-a", "openai", "defense", False, 100, 100, "被告辩称：不实。", "ok", None, 7),
    ("d2", "qwen-a", "openai", "defense", True, 9000, 8000, None, "failed", "empty output", 7),
    ("f1", "qwen-a", "openai", "facts", False, 200, 200, "经审理查明：签订合同。", "ok", None, 7),
    ("f1", "glm-b", "vllm", "facts", False, 200, 200, "查明：合同。", "ok", None, 8),
]
# item, model, judge, task, dimension, score, status, reason, reply format, request identity
JUDGEMENTS = [
    ("d1", "qwen-a", "llama-j", "defense", "factuality", 6.0, "ok", None, "json", "rj-d1"),
    ("d1", "qwen-a", "llama-j", "defense", "legal_accuracy", None, "missing", "dimension not found in judge reply",
     "json", "rj-d1"),
    ("d1", "qwen-a", "llama-j", "defense", "completeness", None, "invalid", "out of range 1-10: 12", "json", "rj-d1"),
    ("d1", "qwen-a", "llama-j", "defense", "overall", 7.0, "ok", None, "json", "rj-d1"),
    ("f1", "qwen-a", "llama-j", "facts", "overall", None, "judge_failed", "judge call failed: HTTP 500", None, "rj-f1"),
    ("d1", "qwen-a", "mistral-k", "defense", "overall", 4.0, "ok", None, "lines", "rk-d1"),
    ("f1", "qwen-a", "mistral-k", "facts", "overall", 8.0, "ok", None, "lines", "rk-f1"),
]
# item, model, task, metric, value, status, reason
METRICS = [
    ("d1", "qwen-a", "defense", "rougeL_char_f1", 0.5, "ok", None),
    ("d1", "qwen-a", "defense", "rougeL_compat_f1", 0.0, "ok", COMPAT),
    ("d1", "qwen-a", "defense", "bertscore_f1", None, "skipped", "no BERTScore model configured"),
    ("f1", "qwen-a", "facts", "rougeL_char_f1", 0.25, "ok", None),
    ("f1", "qwen-a", "facts", "rougeL_compat_f1", 0.1, "ok", COMPAT),
    ("f1", "qwen-a", "facts", "bertscore_f1", None, "skipped", "no BERTScore model configured"),
    ("j1", "qwen-a", "judgment", "rougeL_char_f1", 0.75, "ok", None),     # no generation row left
    ("f1", "glm-b", "facts", "rougeL_char_f1", 0.4, "ok", None),
]


def content_sha(item_id):
    return hashlib.sha256(item_id.encode()).hexdigest()


@pytest.fixture
def old_warehouse(db_path, tmp_path, monkeypatch):
    """A warehouse at the level before migration 112, with CaseGen items and rows in every eval.casegen_* table."""
    con = connect_before(MIGRATION, db_path, tmp_path, monkeypatch)
    con.executemany("INSERT INTO curated.casegen_items VALUES (?, ?, ?, '{}', ?, 'fixture', 0, 0, ?, now())",
                    [(i, f"doc-{i}", task, ref, content_sha(i)) for i, task, ref in ITEMS])
    con.executemany("INSERT INTO eval.casegen_generations VALUES (?, ?, ?, ?, 'rg-' || ?, ?, 'chars', ?, ?, ?, ?, ?, "
                    "?, TIMESTAMPTZ '2026-01-02 03:04:05+00')",
                    [(i, m, b, t, i, cut, n, k, out, st, err, run) for i, m, b, t, cut, n, k, out, st, err, run
                     in GENERATIONS])
    con.executemany("INSERT INTO eval.casegen_judgements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 7, "
                    "TIMESTAMPTZ '2026-01-02 04:00:00+00')", JUDGEMENTS)
    con.executemany("INSERT INTO eval.casegen_metrics VALUES (?, ?, ?, ?, ?, ?, ?, 7)", METRICS)
    con.close()
    return db_path


def stored_items(con, run_id):
    rows = con.execute("SELECT item_id, gold, predicted, scores, status, reason FROM eval.item_outputs "
                       "WHERE eval_run_id = ? ORDER BY item_id", [run_id]).fetchall()
    return {i: ItemResult(i, json.loads(g)["task"], json.loads(g), json.loads(p), json.loads(s), st, r)
            for i, g, p, s, st, r in rows}


def test_an_earlier_warehouse_moves_its_casegen_rows_into_the_store(old_warehouse):
    con = connect(old_warehouse)                 # every migration now, 112 among them
    assert MIGRATION in {n for (n,) in con.execute("SELECT number FROM ops.migrations").fetchall()}
    assert not any(table_exists(con, t) for t in OLD_TABLES)

    runs = {(model, json.loads(params)["judge_model"]): (run_id, system, backend, dataset, sha, json.loads(params),
                                                         n_items, n_failed)
            for run_id, model, system, backend, dataset, sha, params, n_items, n_failed in con.execute(
                "SELECT eval_run_id, model, system, backend, dataset, dataset_sha, params, n_items, n_failed "
                "FROM eval.runs WHERE task = 'casegen'").fetchall()}
    # one run per (evaluated model, judge); a model nobody judged has one run without a judge
    assert set(runs) == {("qwen-a", "llama-j"), ("qwen-a", "mistral-k"), ("glm-b", None)}
    for (model, judge), (run_id, system, backend, dataset, sha, params, _, _) in runs.items():
        assert system == model and dataset == "curated.casegen_items"
        assert params["llm"] == backend == {"qwen-a": "openai", "glm-b": "vllm"}[model]
        assert "migration 112" in params["migrated_from"]
        mine = sorted({g[0] for g in GENERATIONS + JUDGEMENTS + METRICS if g[1] == model})
        assert sha == store.dataset_sha([{"item_id": i, "content_sha256": content_sha(i)} for i in mine])
        # the one run-id function gives the same id for the stored row
        assert run_id == evalstore.eval_run_id("casegen", system, sha, params)
    assert runs[("qwen-a", "llama-j")][6:] == (4, 2) and runs[("glm-b", None)][6:] == (1, 0)

    judged_run = runs[("qwen-a", "llama-j")][0]
    items = stored_items(con, judged_run)
    d1, d2, f1, j1 = items["d1"], items["d2"], items["f1"], items["j1"]
    assert d1.gold == {"task": "defense", "doc_id": "doc-d1", "source": "fixture", "content_sha256": content_sha("d1"),
                       "reference_sha256": hashlib.sha256(ITEMS[0][2].encode()).hexdigest(),
                       "reference_chars": len(ITEMS[0][2])}
    assert d1.status == "ok" and d1.predicted["text"] == "被告辩称：不实。"
    assert d1.predicted["request_identity"] == "rg-d1" and d1.predicted["ops_run_id"] == 7
    assert d1.predicted["input"] == {"cut": False, "unit": "chars", "length": 100, "kept": 100}
    judge = d1.predicted["judge"]
    assert (judge["model"], judge["reply_format"], judge["request_identity"], judge["status"]) == (
        "llama-j", "json", "rj-d1", "ok")
    assert judge["dimensions"]["legal_accuracy"] == {"score": None, "status": "missing",
                                                     "reason": "dimension not found in judge reply"}
    assert judge["dimensions"]["completeness"]["reason"] == "out of range 1-10: 12"
    assert d1.scores == {"judge_factuality": 6.0, "judge_legal_accuracy": None, "judge_completeness": None,
                         "judge_overall": 7.0, "rougeL_char_f1": 0.5, "rougeL_compat_f1": 0.0, "bertscore_f1": None}
    assert (d2.status, d2.reason, d2.predicted["text"], d2.scores) == (
        "failed", "generation failed: empty output", None, {})
    assert d2.predicted["input"]["cut"] is True
    assert f1.predicted["judge"]["status"] == "failed" and f1.predicted["judge"]["dimensions"] == {}
    assert f1.predicted["judge"]["reason"] == "judge call failed: HTTP 500"
    assert "judge_overall" not in f1.scores and f1.scores["rougeL_char_f1"] == 0.25
    assert (j1.status, j1.scores) == ("failed", {"rougeL_char_f1": 0.75})
    assert "no generation recorded" in j1.reason

    # the other judge's run has the same drafts with its own reading
    other = stored_items(con, runs[("qwen-a", "mistral-k")][0])
    assert other["d1"].predicted["text"] == d1.predicted["text"] and other["d1"].scores["judge_overall"] == 4.0

    # eval.metrics: what the new code's store.summarise computes from the same items (names, means, counts)
    for (model, judge), (run_id, *_) in runs.items():
        metrics = evalstore.load_metrics(con, run_id)
        expected = store.summarise(list(stored_items(con, run_id).values()))
        if judge is None:
            expected["judge_overall"] = None
        assert set(metrics) == set(expected), (model, judge)
        assert all(metrics[k] == pytest.approx(expected[k]) for k in expected if expected[k] is not None)
        assert all(metrics[k] is None for k in expected if expected[k] is None)
    metrics = evalstore.load_metrics(con, judged_run)
    assert metrics["n"] == 4 and metrics["n_failed"] == 2 and metrics["n/defense"] == 2
    assert metrics["n_inputs_cut"] == 1 and metrics["n_judge_failed"] == 1 and metrics["n_judge_failed/facts"] == 1
    assert metrics["n_judge_scores_missing"] == 1 and metrics["n_judge_scores_invalid/defense"] == 1
    assert metrics["rougeL_char_f1"] == pytest.approx(0.5) and metrics["rougeL_char_f1/judgment"] == 0.75
    notes = evalstore.load_notes(con, judged_run)
    assert notes["rougeL_compat_f1"] == notes["rougeL_compat_f1/facts"] == COMPAT
    assert notes["bertscore_f1"] == "skipped: no BERTScore model configured" and metrics["bertscore_f1"] is None
    assert notes["judge_overall"].startswith("judge llama-j")
    assert "no judge" in evalstore.load_notes(con, runs[("glm-b", None)][0])["judge_overall"]

    # readable: the store's latest runs, the leaderboard and the agreement with people read the moved runs
    assert {r["eval_run_id"] for r in evalstore.latest_runs(con, "casegen")} >= {judged_run}
    wide = report.leaderboard_wide(report.leaderboard_long(con, [judged_run, runs[("glm-b", None)][0]]))
    assert wide.loc["qwen-a", "defense/overall"] == 7.0 and wide.loc["qwen-a", "defense/rougeL_char_f1"] == 50.0
    assert wide.loc["glm-b", "facts/rougeL_char_f1"] == pytest.approx(40.0)
    human = [{"item_id": "d1", "model": "qwen-a", "score": 3.0}, {"item_id": "f1", "model": "qwen-a", "score": 5.0}]
    agreement = agreement_table(con, human, [runs[("qwen-a", "mistral-k")][0]])
    assert agreement["llm_judge"]["average"]["n"] == 2
    con.close()


def test_a_new_warehouse_has_no_casegen_tables_of_its_own(db_path):
    con = connect(db_path)
    assert not any(table_exists(con, t) for t in OLD_TABLES)
    assert table_exists(con, "curated.casegen_items") and table_exists(con, "eval.item_outputs")
    con.close()
