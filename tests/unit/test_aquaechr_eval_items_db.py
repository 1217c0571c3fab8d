"""Items from curated.aquaechr_qa (kept rows) and corpus paragraphs from curated.echr_paragraphs."""
import json

from caseforge.tasks.aquaechr.eval.items import build_passages, db_paragraphs, load_db_items
from caseforge.warehouse.connection import connect


def test_kept_rows_become_items_and_paragraphs_join_the_corpus(db_path):
    con = connect(db_path)
    rows = [
        ("a1", "g8", "Q one?", "A one.", json.dumps([{"itemid": "001-1", "para_no": "12"},
                                                      {"case_id": "001-2", "paragraph_numbers": [3, 4]}]), "iv-c", True),
        ("a2", "g8", "Q two?", "A two.", json.dumps([{"itemid": "001-1", "para_no": "12"}]), "iv-b", False),
        ("a3", "g8", "Q three?", "A three.", json.dumps([{"itemid": "001-3"}]), "iv-a", True),
        ("a4", "g8", "Q four?", "A four.", json.dumps("no list"), "iv-a", True),
        # the builder's own format: citations per answer sentence
        ("a5", "g8", "Q five?", "A five.", json.dumps([{"sentence": "A five.", "citations": [
            {"itemid": "001-5", "pinpoints": [7, 8], "passages": []}]}]), "iv-c", True),
    ]
    con.executemany("INSERT INTO curated.aquaechr_qa (qa_id, guide_id, question, answer, citations, strategy, kept, "
                    "window_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'w', now())", rows)
    items, problems = load_db_items(con)
    assert [(i.item_id, i.gold) for i in items] == [("a1", ["001-1#12", "001-2#3", "001-2#4"]),
                                                    ("a5", ["001-5#7", "001-5#8"])]
    assert problems[0] == ("a3", "no pinpoint citation")
    assert problems[1][0] == "a4" and problems[1][1].startswith("unreadable citations")
    con.execute("INSERT INTO curated.echr_judgments (itemid, docname, judgment_date, raw_sha256, updated_at) "
                "VALUES ('001-1', 'CASE OF A v. B', DATE '2020-01-01', 'x', now())")
    con.executemany("INSERT INTO curated.echr_paragraphs (itemid, para_no, part, text, ordinal, raw_sha256, "
                    "updated_at) VALUES (?, ?, 'law', ?, ?, 'x', now())",
                    [("001-1", "12", "Paragraph twelve.", 1), ("001-1", None, "Unnumbered block.", 2),
                     ("001-2", "3", "Paragraph three.", 1)])
    paragraphs = db_paragraphs(con)
    assert [(p.pid, p.case_name) for p in paragraphs] == [("001-1#12", "CASE OF A v. B"), ("001-2#3", "001-2")]
    store = build_passages(items, paragraphs)
    assert store.description == ("2 numbered paragraphs from curated.echr_paragraphs + 0 cited passages carried by "
                                 "the items file; 3 gold paragraphs without text")
