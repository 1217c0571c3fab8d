"""What each benchmark puts before the annotators, read from the warehouse's own tables (sql/review/*_items.sql),
the judge's model as served where ops.llm_calls records it, and what a release's judge card depends on."""
from __future__ import annotations

import json

import pytest

from caseforge.review.loop import build_items
from caseforge.warehouse.connection import connect


@pytest.fixture
def con(tmp_path):
    con = connect(tmp_path / "w.duckdb")
    yield con
    con.close()


def test_an_aquaechr_item_shows_the_question_the_answer_and_the_cited_paragraphs(con):
    citations = [{"sentence": "S.", "guide_para_no": "3", "citations": [
        {"case_name": "Smith v. Utopia", "year": 2001, "itemid": "001-1", "pinpoints": ["12"], "language": "ENG",
         "passages": [{"para_no": "12", "text": "The Court held."}]}]}]
    con.execute("INSERT INTO curated.aquaechr_qa (qa_id, guide_id, window_id, strategy, question, answer, citations, "
                "comprehensiveness, conciseness, fluency, kept, updated_at) VALUES ('q1', 'g', 'w', 'i', 'Q?', 'A.', "
                "?, 4, 5, 3, true, now())", [json.dumps(citations)])
    (item,) = build_items(con, "aquaechr")
    assert item.data == {"question": "Q?", "answer": "A.", "paragraphs": "Smith v. Utopia § 12: The Court held."}
    assert item.judge == {"comprehensiveness": "4", "conciseness": "5", "answer_fluency": "3"}
    assert (item.label, item.band) == ("kept", "mid")


def test_a_casegen_item_is_a_judged_draft_beside_its_sources(con):
    con.execute("INSERT INTO curated.casegen_items VALUES ('it1', 'doc1', 'facts', ?, 'ref', 'cn_judgments', 0, 0, "
                "'sha', now())", [json.dumps({"claims": "原告诉称", "defense": "被告辩称"})])
    con.execute("INSERT INTO eval.runs (eval_run_id, task, system, dataset, dataset_sha, params, n_items, n_failed, "
                "started_at, finished_at, model) VALUES ('r1', 'casegen', 'm', 'd', 's', '{}', 1, 0, now(), now(), "
                "'drafter')")
    judge = {"status": "ok", "dimensions": {"factuality": {"score": 7.0, "status": "ok"},
                                            "overall": {"score": 8.0, "status": "ok"},
                                            "relevance": {"score": None, "status": "missing"}}}
    con.execute("INSERT INTO eval.item_outputs VALUES ('r1', 'it1', ?, ?, '{}', 'ok', NULL)",
                [json.dumps({"task": "facts"}), json.dumps({"text": "草稿", "judge": judge})])
    (item,) = build_items(con, "casegen")
    assert item.item_id == "it1|drafter" and item.judge == {"factuality": "7", "overall": "8"}
    assert item.data == {"draft": "草稿", "dimensions": "factuality, overall",
                         "sources": "claims:\n原告诉称\n\ndefense:\n被告辩称"}
    assert (item.label, item.band) == ("facts", "high")


def test_the_card_names_the_model_as_served_where_the_warehouse_records_it(con):
    from caseforge.review.card import judge_models

    insert = ("INSERT INTO ops.llm_calls (identity, step, backend, model, request, status, attempts, created_at) "
              "VALUES (?, 'casefacts.factuality', 'openai', 'gemma-judge', '{}', 'ok', 1, now())")
    con.execute(insert, ["a"])
    assert judge_models(con, "casefacts") == [{"model": "gemma-judge", "served_model": None, "answers": 1}]
    con.execute("ALTER TABLE ops.llm_calls ADD COLUMN IF NOT EXISTS served_model VARCHAR")     # issue 41's column
    con.execute(insert, ["b"])
    con.execute("UPDATE ops.llm_calls SET served_model = 'google/gemma-3-27b-it' WHERE identity = 'b'")
    assert judge_models(con, "casefacts") == [
        {"model": "gemma-judge", "served_model": "google/gemma-3-27b-it", "answers": 1},
        {"model": "gemma-judge", "served_model": None, "answers": 1}]          # an older answer: as configured


def test_a_release_is_written_again_when_its_review_changes(con):
    from caseforge.flows.nightly_review import review_depends
    from caseforge.settings import load_settings

    settings = load_settings()
    assert review_depends(con, "scotus", settings) is None                # no judge, no card
    before = review_depends(con, "casefacts", settings)
    con.execute("INSERT INTO review.items VALUES ('casefacts', 'c1', 'r', 1, 1, 's', '{\"verdict\": \"SUPPORTED\"}')")
    con.execute("INSERT INTO review.annotations VALUES ('casefacts', 'c1', 1, 7, 2, 'verdict', 'SUPPORTED', '')")
    after = review_depends(con, "casefacts", settings)
    assert after != before and after["review"]["items"] == 1
    con.execute("UPDATE review.annotations SET value = 'REFUTED'")
    assert review_depends(con, "casefacts", settings) != after            # an edited annotation changes the card
