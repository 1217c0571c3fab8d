"""CASE and the Bar Exam baselines end to end: recorded once with a test double, replayed from the committed file.

Regenerate the replay file (after changing a prompt) with:
    .venv/bin/python tests/request_identities.py record
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from legal_doubles import ScriptedLegalBackendDouble  # noqa: E402

from caseforge.archive import RawArchive  # noqa: E402
from caseforge.llm.backends.replay import export_replay  # noqa: E402
from caseforge.retrieval import Corpus, build_retriever  # noqa: E402
from caseforge.retrieval.corpora import barexam_corpus  # noqa: E402
from caseforge.run_record import finish_run, start_run  # noqa: E402
from caseforge.stage_report import StageReport
from caseforge.tasks.barexam.ingest import import_folder  # noqa: E402
from caseforge.tasks.case.eval import barexam as barexam_eval  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402
from caseforge.warehouse.statements import run_sql

REPLAY = HERE.parent / "fixtures" / "replay" / "case_barexam.jsonl"
MODEL = "double-legal-1"
LIMIT = 3
K = 3
RECORDED = [("case", {"k": K, "max_rounds": 2, "seed": 11}), ("llm-only", {}), ("bm25-rag", {"k": K}), ("oracle", {})]


def ingest(con, folder: Path) -> StageReport:
    report = StageReport("barexam")
    run_id = start_run(con, "ingest", "barexam")
    import_folder(con, RawArchive(con), run_id, folder, report)
    finish_run(con, run_id, report)
    return report


def run_system(con, backend, system: str, options: dict, index_dir: Path):
    rows = run_sql(con, "barexam/questions.sql").fetchall()[:LIMIT]
    problems, gold = barexam_eval.problems_from_rows(rows)
    corpus = barexam_corpus(con)
    report = StageReport(system)
    if system == "case":
        retriever = build_retriever("bm25", corpus, index_dir)
        return barexam_eval.run_case(con, backend, problems, retriever, options["k"], options["max_rounds"],
                                     options["seed"], report), report
    retriever = build_retriever("bm25", corpus, index_dir) if system == "bm25-rag" else None
    return barexam_eval.run_baseline(con, backend, problems, system, options.get("k", 5), report, retriever=retriever,
                                     passage_text=dict(zip(corpus.ids, corpus.texts)), gold_passages=gold), report


def record(samples: Path, work: Path, out: Path = REPLAY, extra_retrievers: tuple[str, ...] = ()) -> int:
    """Record RECORDED with the double. `extra_retrievers` then also runs CASE's advocates on those
    retrievers and exports every call to <out>_probe.jsonl (the identity stability check reads it)."""
    con = connect(work / "record.duckdb")
    ingest(con, samples / "barexam")
    double = ScriptedLegalBackendDouble(model=MODEL)
    for system, options in RECORDED:
        run_system(con, double, system, options, work / "indexes")
    written = export_replay(con, out)
    if extra_retrievers:
        rows = run_sql(con, "barexam/questions.sql").fetchall()[:LIMIT]
        problems, gold = barexam_eval.problems_from_rows(rows)
        corpus = barexam_corpus(con)
        # the gold passages and 300 others: enough ties and neighbours, and a dense index in seconds
        wanted = {p for p in gold.values() if p} | set(sorted(corpus.ids)[:300])
        subset = Corpus.from_pairs("barexam_subset", [(i, t) for i, t in zip(corpus.ids, corpus.texts) if i in wanted])
        for retriever in extra_retrievers:
            barexam_eval.run_case(con, double, problems, build_retriever(retriever, subset, persist=False),
                                  K, 1, 11, StageReport(f"case-{retriever}"))
        export_replay(con, out.with_name(out.stem + "_probe.jsonl"))
    con.close()
    return written


@pytest.fixture(scope="module")
def barexam_db(samples_dir, tmp_path_factory):
    con = connect(tmp_path_factory.mktemp("barexam") / "warehouse.duckdb")
    report = ingest(con, samples_dir / "barexam")
    yield con, report
    con.close()


@pytest.mark.samples
def test_barexam_ingest_curates_questions_and_passages(barexam_db, samples_dir):
    con, report = barexam_db
    assert report.ok, report.failures
    assert con.execute("SELECT count(*) FROM curated.barexam_questions").fetchone()[0] == 1195
    assert con.execute("SELECT count(*) FROM curated.barexam_passages").fetchone()[0] == 1149
    first = con.execute("SELECT question, choice_b, answer, gold_passage_id FROM curated.barexam_questions "
                        "WHERE question_id = 'mbe_0'").fetchone()
    assert first[0].startswith("Paul then called Vic to testify") and first[2] == "B" and first[3] == "mbe_0"
    assert first[1] == "admissible because Vic's testimony was relevant to material issues"
    # mbe_494 has three options in the source; it is kept, with no option D
    assert con.execute("SELECT choice_c, choice_d FROM curated.barexam_questions WHERE question_id = 'mbe_494'"
                       ).fetchone() == ("A springing use", None)
    problems, _ = barexam_eval.problems_from_rows(
        run_sql(con, "barexam/questions.sql").fetchall())
    assert [h.label for h in next(p for p in problems if p.item_id == "mbe_494").hypotheses] == ["A", "B", "C"]
    again = ingest(con, samples_dir / "barexam")   # re-running adds no duplicates
    assert again.ok and con.execute("SELECT count(*) FROM curated.barexam_questions").fetchone()[0] == 1195


@pytest.mark.samples
def test_case_and_baselines_replay_from_committed_file(barexam_db, tmp_path):
    from caseforge.llm import get_backend

    assert REPLAY.exists(), "run this module as a script to record the replay file"
    con, _ = barexam_db
    replay = get_backend("replay", MODEL, replay_file=str(REPLAY))
    results = {}
    for system, options in RECORDED:
        items, report = run_system(con, replay, system, options, tmp_path / "indexes")
        results[system] = items
        assert [i.status for i in items] == ["ok"] * LIMIT, [i.reason for i in items]
        metrics = barexam_eval.summarise(items)
        assert metrics["n"] == LIMIT and 0.0 <= metrics["accuracy"] <= 1.0
    for item in results["case"]:
        votes = item.predicted["votes"]
        assert len(votes) == 3 and len({v["persona"] for v in votes}) == 3
        assert item.predicted["confidence"] in ("unanimous", "split")
        assert all(len(ids) == K for ids in item.predicted["evidence"].values())
        assert item.predicted["answer"] in "ABCD"
    # the oracle saw exactly the gold passage, under the same prompt as retrieval
    gold = dict(con.execute("SELECT question_id, gold_passage_id FROM curated.barexam_questions").fetchall())
    assert [i.predicted["passages"] for i in results["oracle"]] == [[gold[i.item_id]] for i in results["oracle"]]
    assert all(len(i.predicted["passages"]) == K for i in results["bm25-rag"])
    assert all(i.predicted["passages"] == [] for i in results["llm-only"])


def test_oracle_prompt_does_not_call_the_passage_gold():
    from caseforge.llm import render

    prompt = render("case/answer_mc.j2", problem="Q?", options=[("A", "x"), ("B", "y"), ("C", "z"), ("D", "w")],
                    passages=["the rule"])
    text = json.dumps(prompt.messages).lower()
    assert "the rule" in text and "gold" not in text and "correct passage" not in text


if __name__ == "__main__":
    print("re-record every replay fixture with: .venv/bin/python tests/request_identities.py record")
