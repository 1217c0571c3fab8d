"""The judge threshold, the cascade, duplicate questions, name and attribution removals, the build."""
import json

import pytest
from aquaechr_support import BagOfWordsEmbedderDouble, ScriptedLegalBackendDouble, create_contract_tables

from caseforge.stage_report import StageReport
from caseforge.tasks.aquaechr import filters
from caseforge.tasks.aquaechr.build import BuildConfig, build, make_backends
from caseforge.tasks.aquaechr.search import duplicates
from caseforge.tasks.aquaechr.sentences import Paragraph, split_paragraph
from caseforge.tasks.aquaechr.strategies import Candidate, Window, make_windows, parse_strategies
from caseforge.warehouse.connection import connect


def test_low_quality_threshold():
    assert filters.low_quality({"comprehensiveness": 4, "conciseness": 4, "answer_fluency": 5}) is False
    assert filters.low_quality({"comprehensiveness": 3, "conciseness": 5, "answer_fluency": 5}) is True
    assert filters.low_quality({"comprehensiveness": 3, "conciseness": 5, "answer_fluency": 5}, threshold=2) is False
    assert filters.low_quality({"comprehensiveness": None, "conciseness": 5, "answer_fluency": 5}) is True


def _windows(n):
    return [Window("g", "g", [Paragraph("g", str(i), f"Sentence {i}.")]) for i in range(n)]


def test_cascade_tries_next_level_only_for_failed_windows_and_records_why():
    windows = _windows(3)
    asked = []

    def generate_and_judge(level, pending):
        asked.append((level, [w.window_id for w in pending]))
        out = []
        for w in pending:
            sentences, _ = split_paragraph("g", w.paragraphs[0].para_no, w.paragraphs[0].text, [])
            c = Candidate(level, w, question="Q?", answer=sentences)
            good = (level == "iv-c" and w.window_id == "g:0-0") or (level == "iv-b" and w.window_id == "g:1-1")
            c.comprehensiveness, c.conciseness, c.fluency = (5 if good else 2), 5, 5
            out.append(c)
        return out

    tried = filters.run_cascade(windows, ["iv-c", "iv-b", "iv-a"], generate_and_judge)
    assert asked == [("iv-c", ["g:0-0", "g:1-1", "g:2-2"]), ("iv-b", ["g:1-1", "g:2-2"]), ("iv-a", ["g:2-2"])]
    kept = {(c.strategy, c.window.window_id) for c in tried if c.kept}
    assert kept == {("iv-c", "g:0-0"), ("iv-b", "g:1-1")}
    reasons = {(c.strategy, c.window.window_id): c.removal_reason for c in tried if not c.kept}
    assert reasons[("iv-c", "g:1-1")] == "low_quality (cascade: fell back to iv-b)"
    assert reasons[("iv-a", "g:2-2")] == "low_quality (cascade: window dropped)"


def test_cascade_treats_invalid_ids_as_failure():
    def generate_and_judge(level, pending):
        return [Candidate(level, w, question="Q?", error="invalid_ids: sentence number(s) [9] not in 1..1")
                for w in pending]
    tried = filters.run_cascade(_windows(1), ["iv-b", "iv-a"], generate_and_judge)
    assert [c.removal_reason for c in tried] == [
        "invalid_ids: sentence number(s) [9] not in 1..1 (cascade: fell back to iv-a)",
        "invalid_ids: sentence number(s) [9] not in 1..1 (cascade: window dropped)"]


def test_duplicates_at_cosine_threshold():
    import numpy as np
    v = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0], [0.7, 0.0, 0.71414284]])
    assert duplicates(v, 0.8) == {1: 0}          # cosine exactly 0.8 counts as a duplicate
    assert duplicates(v, 0.81) == {}
    assert duplicates(v, 0.7) == {1: 0, 3: 0}     # the earlier pair member survives


def test_names_in_question():
    assert filters.names_in_question("Why did Turkey fail to investigate?", []) == ["Turkey"]
    assert filters.names_in_question("What did the Court hold in McCann and Others?",
                                     ["CASE OF McCANN AND OTHERS v. THE UNITED KINGDOM"]) == ["McCANN"]
    assert filters.names_in_question("What did giuliani gaggio decide?", ["Giuliani and Gaggio v. Italy"]) == [
        "Giuliani", "Gaggio"]
    assert "a 'X v. Y' case name" in filters.names_in_question("What did Smith v. Jones decide?", [])
    assert filters.names_in_question("When is the use of force absolutely necessary under Article 2?",
                                     ["Giuliani and Gaggio v. Italy"]) == []


def test_strategy_parsing_and_windows():
    assert parse_strategies("iv-c, i,iv-c") == ["iv-c", "i"]
    with pytest.raises(ValueError, match="unknown strategy"):
        parse_strategies("v")
    paras = [Paragraph("g", str(i), "x.") for i in range(1, 8)]
    assert [w.window_id for w in make_windows("g", "g", paras, 3)] == ["g:1-3", "g:4-6"]
    assert [w.window_id for w in make_windows("g", "g", paras, 3, limit=1)] == ["g:1-3"]


GUIDE = [
    ("art2", "1", "A. Interpretation", "The object and purpose of the Convention require that its safeguards be "
     "practical and effective (McCann and Others v. the United Kingdom, 1995, § 146). Its provisions are read "
     "strictly (McCann and Others v. the United Kingdom, 1995, § 147)."),
    ("art2", "2", "A. Interpretation", "The right to life admits no derogation in peacetime (Giuliani and Gaggio v. "
     "Italy [GC], 2011, § 174). It expresses a basic value of democratic societies."),
    ("art2", "3", "B. Obligations", "The State must protect life by law and must not take life intentionally "
     "(Boso v. Italy (dec.), 2002). A procedural duty to investigate follows (Armani Da Silva v. the United "
     "Kingdom [GC], 2016, § 229)."),
    ("art2", "4", "B. Obligations", "The investigation must be effective and independent (Jaloud v. the "
     "Netherlands [GC], 2014, §§ 186-187). Authorities must act of their own motion once the matter comes to "
     "their attention."),
    ("art2", "5", "C. Force", "Force must be no more than absolutely necessary (Kakoulli v. Turkey, 2005, § 107). "
     "The test of necessity is stricter than the one applied elsewhere in the Convention."),
    ("art2", "6", "C. Force", "Planning and control of an operation are examined as well (McCann and Others v. "
     "the United Kingdom, 1995, § 150). Training of officers matters for the planning assessment."),
]
CITES = [
    ("art2", "1", 1, "McCann and Others v. the United Kingdom", 1995, ["146"], "001-57943", None),
    ("art2", "1", 2, "McCann and Others v. the United Kingdom", 1995, ["147"], "001-57943", None),
    ("art2", "2", 1, "Giuliani and Gaggio v. Italy", 2011, ["174"], "001-104098", None),
    ("art2", "3", 1, "Boso v. Italy", 2002, [], "001-23338", None),
    ("art2", "3", 2, "Armani Da Silva v. the United Kingdom", 2016, ["229"], "001-161975", None),
    ("art2", "4", 1, "Jaloud v. the Netherlands", 2014, ["186-187"], "001-148367", None),
    ("art2", "5", 1, "Kakoulli v. Turkey", 2005, ["107"], "001-70882", None),
    ("art2", "6", 1, "McCann and Others v. the United Kingdom", 1995, ["150"], "001-57943", None),
]
JUDGMENTS = [("001-57943", "McCann", "ENG"), ("001-104098", "Giuliani", "ENG"), ("001-23338", "Boso", "ENG"),
             ("001-161975", "Armani", "ENG"), ("001-148367", "Jaloud", "ENG"), ("001-70882", "Kakoulli", "FRE")]
PASSAGES = [("001-57943", "146", "146. The Court's approach ..."), ("001-57943", "147", "147. Strictly construed ..."),
            ("001-104098", "174", "174. Fundamental provision ...")]


def _build(db_path, strategies, **double_options):
    con = connect(db_path)
    create_contract_tables(con, GUIDE, CITES, JUDGMENTS, PASSAGES)
    backend = ScriptedLegalBackendDouble(**double_options)
    judge = ScriptedLegalBackendDouble(model="double-judge", **double_options)
    report = StageReport("aquaechr test", run_id=1)
    candidates = build(con, 1, report, make_backends(backend=backend, judge_backend=judge), BagOfWordsEmbedderDouble(),
                       BuildConfig(strategies=parse_strategies(strategies), search_extra=2))
    return con, candidates, report, backend


def test_build_end_to_end_with_doubles_keeps_reasons_and_attribution(db_path):
    con, candidates, report, backend = _build(db_path, "i,ii,iii,iv-c,iv-b,iv-a",
                                               low_when=lambda q: q.startswith("Which criteria"))
    rows = con.execute("SELECT qa_id, strategy, window_id, kept, removal_reason, answer, citations "
                       "FROM curated.aquaechr_qa ORDER BY strategy, window_id").fetchall()
    assert len(rows) == len(candidates) and report.ok, report.failures
    by = {(r[1], r[2]): r for r in rows}
    # (iv-c) judged low everywhere (double), so the cascade asked (iv-b) for both 3-paragraph windows and stopped
    assert by[("iv-c", "art2:1-3")][4] == "low_quality (cascade: fell back to iv-b)"
    assert ("iv-a", "art2:1-3") not in by
    # window 1-3 answer cites Boso without a pinpoint → removed; 4-6 cites a French judgment → removed
    reasons = {k: r[4] for k, r in by.items()}
    assert reasons[("i", "art2:3-3")] == "whole_case_citation"
    assert reasons[("i", "art2:5-5")] == "non_english_citation"
    # the double copies words of the paragraph, applicant names included
    assert reasons[("i", "art2:2-2")] == "names_case_or_country: Gaggio, Giuliani"
    assert reasons[("i", "art2:4-4")] == "names_case_or_country: Jaloud, Netherlands"
    assert reasons[("i", "art2:6-6")] == "names_case_or_country: McCann"
    assert reasons[("iv-b", "art2:1-3")] == "whole_case_citation"
    assert {k for k, r in by.items() if r[3]} == {("i", "art2:1-1"), ("ii", "art2:1-5"), ("iii", "art2:1-5")}
    kept = [r for r in rows if r[3]]
    assert kept, rows
    for row in kept:
        records = json.loads(row[6])
        assert row[5] == " ".join(r["sentence"] for r in records)
        assert any(c["itemid"] and c["pinpoints"] for r in records for c in r["citations"])
    # re-running asks the model nothing new and duplicates nothing
    again_con = con
    backend2 = ScriptedLegalBackendDouble(low_when=lambda q: q.startswith("Which criteria"))
    build(again_con, 2, StageReport("again", run_id=2),
          make_backends(backend=backend2, judge_backend=ScriptedLegalBackendDouble(model="double-judge")),
          BagOfWordsEmbedderDouble(), BuildConfig(strategies=parse_strategies("i,ii,iii,iv-c,iv-b,iv-a"), search_extra=2))
    assert backend2.asked == []
    assert con.execute("SELECT count(*) FROM curated.aquaechr_qa").fetchone()[0] == len(rows)


def test_invalid_sentence_ids_are_recorded_not_repaired(db_path):
    con, candidates, report, _ = _build(db_path, "iv-a", invalid_ids_for="case law")
    rows = con.execute("SELECT kept, removal_reason, answer FROM curated.aquaechr_qa").fetchall()
    assert rows and all(not kept and reason.startswith("invalid_ids: sentence number(s) [999]") and answer is None
                        for kept, reason, answer in rows)


def test_missing_input_tables_give_a_clear_error(db_path):
    con = connect(db_path)
    with pytest.raises(RuntimeError, match="curated.guide_paragraphs"):
        build(con, 1, StageReport("x", run_id=1), make_backends(backend=object()), None, BuildConfig(strategies=["i"]))
