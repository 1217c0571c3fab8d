"""AQuAECHR evaluation on the real expert-annotated records: loading (golden), the citation parser on a
real model answer, and the CLI end to end with the `replay` backend.

The replay file was recorded once from the scripted double (3 records × 2 systems, NLI judge included).
Regenerate it (after changing a prompt) with:
    .venv/bin/python tests/request_identities.py record
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "unit"))

from caseforge.tasks.aquaechr.eval.citations import parse_answer  # noqa: E402
from caseforge.tasks.aquaechr.eval.items import build_passages, load_annotation_file  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

REPLAY = HERE.parent / "fixtures" / "replay" / "aquaechr_eval.jsonl"
MODEL = "double-aqeval-1"
LIMIT = 3
RECORDED = ("rtg-llatrieval", "posthoc-rarr")

pytestmark = pytest.mark.samples


def annotation_files(samples_dir: Path) -> tuple[Path, Path]:
    folder = samples_dir / "aquaechr"
    if not (folder / "expert_annotations_rag.json").exists():
        pytest.skip(f"no AQuAECHR expert annotations under {folder}")
    return folder / "expert_annotations_rag.json", folder / "caseid_to_name.json"


def test_expert_records_load_as_items(samples_dir):
    items_file, names = annotation_files(samples_dir)
    items, problems = load_annotation_file(items_file, names)
    assert problems == []
    assert len(items) == 20
    assert sum(len(i.gold) for i in items) == 110
    first = items[0]
    assert first.item_id == "q393"
    assert first.question.startswith("How does the Court apply Article 17 of the Convention to cases involving denial")
    assert first.gold == ["001-196148#37"]
    passages = build_passages(items, [])
    gold = passages.passages["001-196148#37"]
    assert gold.text.startswith("The Court reiterates that Article 17 is only applicable on an exceptional basis")
    assert gold.shown().startswith("pastörs v. germany; § 37: The Court reiterates")
    assert all(pid in passages.passages for i in items for pid in i.gold)


def test_parser_on_a_real_model_answer(samples_dir):
    items_file, _ = annotation_files(samples_dir)
    records = json.loads(items_file.read_text(encoding="utf-8"))
    record = next(r for r in records if r["question_number"] == 294)
    answer = next(g["answer"] for g in record["generations"] if g["experiment"] == "rag_gtr_k_10_llama_8b")
    sentences = parse_answer(answer, [f"p{n}" for n in range(1, 11)])
    # read by eye: six sentences, each followed by a marker line except the conclusion
    assert [[c.doc for c in s.citations] for s in sentences] == [[1, 2], [8], [5, 8], [4], [3], []]
    assert sentences[0].text.startswith("The Committee of Ministers, as the executive body")
    assert sentences[-1].text.startswith("In conclusion, the Committee of Ministers")
    saul = next(g["answer"] for g in records[0]["generations"] if g["experiment"] == "rag_gtr_k_10_saul_7b")
    opening = parse_answer(saul, [f"p{n}" for n in range(1, 11)])[:3]
    # "[Doc 7] In view of ..." opens its line: the marker belongs to that sentence
    assert [(s.text[:20], [c.doc for c in s.citations]) for s in opening] == [
        ("In view of the above", [7]), ("In the light of the ", [8]), ("It follows that they", [])]


def cli(items_file: Path, system: str, db: Path, out: Path, env: dict) -> subprocess.CompletedProcess:
    """The real command in its own process (Prefect's logging binds to the stderr it starts with)."""
    return subprocess.run([sys.executable, "-m", "caseforge", "eval", "aquaechr", "--system", system, "--model", MODEL,
                           "--llm", "replay", "--replay-file", str(REPLAY), "--items", str(items_file), "--limit",
                           str(LIMIT), "--no-bertscore", "--db", str(db), "--out-dir", str(out)],
                          capture_output=True, text=True, timeout=240, env=env)


@pytest.mark.slow
def test_cli_end_to_end_with_replay(samples_dir, tmp_path, shared_server_cli_env):
    items_file, _ = annotation_files(samples_dir)
    db = tmp_path / "w.duckdb"
    for system in RECORDED:
        done = cli(items_file, system, db, tmp_path / "out", shared_server_cli_env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "citation_f1" in done.stdout
    con = connect(db)
    runs = con.execute("SELECT system, n_items, n_failed, params->>'corpus' FROM eval.runs WHERE task = 'aquaechr' "
                       "ORDER BY system").fetchall()
    assert [(r[0], r[1], r[2]) for r in runs] == [("posthoc-rarr", 3, 0), ("rtg-llatrieval", 3, 0)]
    assert runs[0][3].startswith("0 numbered paragraphs from curated.echr_paragraphs + 277 cited passages")
    outputs = con.execute("SELECT item_id, predicted FROM eval.item_outputs WHERE eval_run_id = "
                          "(SELECT eval_run_id FROM eval.runs WHERE system = 'rtg-llatrieval') ORDER BY item_id").fetchall()
    assert [o[0] for o in outputs] == ["q196", "q393", "q493"]
    sentences = json.loads(outputs[1][1])["sentences"]
    assert sentences[0]["citations"][0]["passage_id"] is not None
    assert any(c["passage_id"] is None for s in sentences for c in s["citations"])   # the double's [Doc 42]
    metrics = dict(con.execute("SELECT metric, value FROM eval.metrics m JOIN eval.runs r "
                               "USING (eval_run_id) WHERE r.system = 'posthoc-rarr'").fetchall())
    assert metrics["n"] == 3 and metrics["citations_per_query"] > 0
    con.close()
    report = (tmp_path / "out" / "aquaechr_report.md").read_text()
    assert "| posthoc-rarr | double-aqeval-1 (replay) |" in report
    assert "| rtg-llatrieval | double-aqeval-1 (replay) |" in report
    # a second run answers everything from the cache and adds no rows
    assert cli(items_file, "posthoc-rarr", db, tmp_path / "out", shared_server_cli_env).returncode == 0
    con = connect(db)
    assert con.execute("SELECT count(*) FROM eval.item_outputs").fetchone() == (6,)


def record(samples: Path, work: Path, out: Path = REPLAY, extra_retrievers: tuple[str, ...] = ()) -> int:
    """Run the recorded systems with the scripted double and export the cache as a replay file.

    `extra_retrievers` then also runs rtg-vanilla on all items with those retrievers and exports every
    call to <out>_probe.jsonl (the identity stability check reads it; it is not a fixture)."""
    from aquaechr_eval_doubles import ScriptedAqevalBackendDouble

    from caseforge.llm.backends.replay import export_replay
    from caseforge.tasks.aquaechr.eval.nli import make_nli
    from caseforge.tasks.aquaechr.eval.pipeline import RunConfig, evaluate

    items, problems = load_annotation_file(samples / "aquaechr" / "expert_annotations_rag.json",
                                           samples / "aquaechr" / "caseid_to_name.json")
    con = connect(work / "aqeval_record.duckdb")
    backend = ScriptedAqevalBackendDouble(MODEL)
    passages = build_passages(items, [])

    def run(system: str, retriever: str, limit: int | None) -> None:
        judge = make_nli("llm", con, backend)
        evaluate(con, RunConfig(system, "replay", MODEL, judge.name, "expert_annotations_rag.json", limit=limit,
                                retriever=retriever, index_dir=str(work / "indexes")),
                 items, passages, backend, judge, None, problems)

    for system in RECORDED:
        run(system, "bm25", LIMIT)
    written = export_replay(con, out)
    if extra_retrievers:
        for retriever in extra_retrievers:
            run("rtg-vanilla", retriever, None)
        export_replay(con, out.with_name(out.stem + "_probe.jsonl"))
    con.close()
    return written


if __name__ == "__main__":
    print("re-record every replay fixture with: .venv/bin/python tests/request_identities.py record")
