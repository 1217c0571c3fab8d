"""CaseGen on the real reference sections (facts, reasoning, judgment of 250 civil judgments)."""
import json

import pytest

from caseforge.tasks.casegen import items as cg


def load_reference(samples_dir):
    path = samples_dir / "cn" / "casegen_reference_sections.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.samples
def test_evidence_names_on_real_reference_facts(samples_dir):
    records = {r["id"]: r for r in load_reference(samples_dir)}
    # id 22: the facts cite 《道路交通事故认定书》 (issued by the traffic police) and 《司法鉴定意见书》
    assert [e.name for e in cg.sections_from_record(records[22], "ref").evidence] == ["道路交通事故认定书", "司法鉴定意见书"]
    # id 124: "蒋明艳就其主张提举了以下证据：\n1、解除劳动合同协议书两份。…\n2、城建集团公司答复会录像。…"
    names = [e.name for e in cg.sections_from_record(records[124], "ref").evidence]
    assert names[:2] == ["解除劳动合同协议书", "城建集团公司答复会录像"]


@pytest.mark.samples
def test_reference_records_build_only_the_judgment_task(samples_dir):
    records = load_reference(samples_dir)
    items, skipped = cg.build_items(records, source="casegen_reference")
    # the file carries facts, reasoning and judgment only: judgment (← facts + reasoning) is the one task
    assert len(records) == 250 and {i.task for i in items} == {"judgment"} and len(items) == 250
    assert len(skipped) == 3 * 250
    first = next(i for i in items if i.doc_id == "0")
    assert first.inputs["facts"].startswith("经审理查明：2007年3月5日，经招投标")
    assert first.reference == records[0]["judgement"].strip()


@pytest.mark.samples
def test_judgment_task_end_to_end_on_real_documents_with_the_replay_file(samples_dir, tmp_path):
    import importlib.util
    from pathlib import Path

    import duckdb

    from caseforge.settings import load_settings
    from caseforge.tasks.casegen import pipeline
    from caseforge.tasks.casegen.eval import pipeline as eval_pipeline

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    spec = importlib.util.spec_from_file_location("casegen_scripted_double", fixtures / "casegen" / "scripted_double.py")
    double = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(double)
    config = load_settings(tmp_path / "warehouse.duckdb")
    source = samples_dir / "cn" / "casegen_reference_sections.jsonl"
    built = pipeline.run_build(config, from_file=str(source), limit=double.SAMPLE_DOCS)
    assert built.counts["items_judgment"] == 2 and built.counts["skipped_defense"] == 2
    params = eval_pipeline.EvalParams(models=[double.DRAFTER], llm="replay", replay_file=str(double.REPLAY_FILE),
                                 judge_model=double.JUDGE, out_dir=str(tmp_path / "reports"))
    report, _ = eval_pipeline.run_eval(config, params)
    assert report.ok, report.failures
    assert report.counts["judge_ok"] == 2
    run_id = report.results["eval_run_ids"][double.DRAFTER]
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    rows = con.execute("SELECT o.gold ->> 'doc_id', (o.scores ->> 'rougeL_char_f1')::DOUBLE, "
                       "(o.gold ->> 'content_sha256') = i.content_sha256 FROM eval.item_outputs o "
                       "JOIN curated.casegen_items i USING (item_id) WHERE o.eval_run_id = ? ORDER BY 1",
                       [run_id]).fetchall()
    mean = con.execute("SELECT value FROM eval.metrics WHERE eval_run_id = ? AND metric = 'rougeL_char_f1/judgment'",
                       [run_id]).fetchone()[0]
    con.close()
    assert [r[0] for r in rows] == ["0", "2"] and all(r[2] for r in rows)
    char_scores = [r[1] for r in rows]
    assert all(0 < v < 1 for v in char_scores) and mean == pytest.approx(sum(char_scores) / 2)
