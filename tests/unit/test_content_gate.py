"""Content expectations on what a model wrote (issue 28): the text checks, and the gate quarantining the rows
that break them with the rule as the reason. The degenerate values are the packaged models' own output in a
nightly on the samples; the good ones are of the kind the released data holds."""
import json

import pandas as pd
import pytest

from caseforge import gate, textchecks
from caseforge.load import CuratedTable, gate_and_load
from caseforge.warehouse.connection import connect

GENERATED = CuratedTable("casefacts_generated", "casefacts/replace_stage_table.sql", "claim_id",
                         {"schema": "build", "table": "casefacts_generated", "key": "claim_id"})

# what SmolLM2-135M and Gemma 3 270M wrote in `make run` (build.casefacts_*, curated.aquaechr_qa, ops.llm_calls)
GENERATED_CLAIMS = [
    "statement123456789",
    ";, and, and, and, and, and, and, and, and, and, and, and,",
    "1967-01-04, 1967-01-14, 1969-01-24, 1968-01-28, 1969-01-28, 1969-01-28, 1969-02-22, 1970-01-24",
    "claims: [{{0}}}, [{{2}}}]} A woman may end a pregnancy during the first trimester without state limits",
]
GOOD_CLAIMS = [
    "When prisoners have earned sentence reductions, the government is prohibited from rescinding those "
    "reductions to increase their incarceration duration.",
    "A state may not punish a person for speech that merely advocates an idea.",
]


def rule_names(result, row) -> set[str]:
    return {reason.split(" on ")[0] for reason in result.failed_rows.get(row, [])}


def test_each_check_tells_degenerate_text_from_prose():
    assert not textchecks.enough_words("statement123456789", 5)
    assert not textchecks.mostly_letters("1967-01-04, 1967-01-14, 1969-01-24", 0.75)
    assert not textchecks.no_dominant_token(";, and, and, and, and, and, and, and", 0.35, 6)
    assert not textchecks.no_repeated_ngrams("根据查明的事实和本院的说理，起草判决主文。" * 6, 6, 0.5, 20)
    assert not textchecks.no_character_run(' 1' + "0" * 40, 10)
    assert not textchecks.no_prompt_echo("本院认为。请以“本院认为”开头写出说理部分。", ["casegen/eval/generate_reasoning.j2"], 10)
    for claim in GOOD_CLAIMS:
        assert textchecks.enough_words(claim, 5) and textchecks.mostly_letters(claim, 0.75)
        assert textchecks.no_dominant_token(claim, 0.35, 6) and textchecks.no_repeated_ngrams(claim, 3, 0.3, 6)
        assert textchecks.no_prompt_echo(claim, ["casefacts/*.j2"], 8)
    # a CJK character is a word: Chinese prose is not "too few words"
    assert textchecks.enough_words("本院认为，原告主张的借款事实清楚，证据充分，本院予以支持。", 20)


def test_an_answer_written_into_its_question_is_a_leak_but_shared_wording_is_not():
    answer = "The Court's approach to the interpretation of Article 2 must be guided by its object and purpose."
    leaked = "What is the purpose of Article 2? } The answer is: The purpose of Article 2 is protection"
    assert not textchecks.no_answer_leak(leaked, answer, 2, 8)
    statement = "The interpretation of Article 2 must be guided by its object and purpose"
    assert not textchecks.no_answer_leak(statement, answer, 2, 8)
    question = "How must the interpretation of Article 2 be guided by the object and purpose of the Convention?"
    assert textchecks.no_answer_leak(question, answer, 2, 8)


def test_the_gate_quarantines_degenerate_claims_with_the_rules_they_break(db_path):
    frame = pd.DataFrame({"claim_id": [f"c{i}" for i in range(6)], "case_id": [1] * 6,
                          "claim_index": list(range(6)), "claim": GENERATED_CLAIMS + GOOD_CLAIMS, "model": "m"})
    result = gate.validate("casefacts_generated", frame)
    assert sorted(result.failed_rows) == [0, 1, 2, 3] and not result.batch_rejected
    assert "expect_column_values_to_have_enough_words" in rule_names(result, 0)
    assert "expect_column_values_to_not_repeat_one_token" in rule_names(result, 1)
    assert "expect_column_values_to_be_mostly_letters" in rule_names(result, 2)
    assert "expect_column_values_to_not_match_regex" in rule_names(result, 3)      # markup debris
    con = connect(db_path)
    outcome = gate_and_load(con, 1, frame, GENERATED)
    assert outcome.staged == 2 and outcome.quarantined == 4
    reasons = dict(con.execute("SELECT source_key, reason FROM ops.quarantine ORDER BY source_key").fetchall())
    assert reasons["c0"].startswith("gate: expect_column_values_to_have_enough_words on claim {\"min_words\": 5}")


def test_only_the_model_written_reasons_are_checked():
    """A factuality row the pipeline itself removed carries the pipeline's reason ("year: 1967; year: 1967; …"),
    not a model's: the row_condition of the rule leaves it alone."""
    frame = pd.DataFrame({"claim_id": ["a", "b", "c"], "case_id": [1, 1, 1], "supported": [True, None, True],
                          "status": ["supported", "leaks_identifiers", "supported"],
                          "reason": ["one sentence", "year: 1967; year: 1967; year: 1969; year: 1968; year: 1969",
                                     "The claim restates the rule the conclusion gives."], "model": "m"})
    result = gate.validate("casefacts_factuality", frame)
    assert list(result.failed_rows) == [0]


def test_a_rejected_batch_keeps_each_rows_own_reasons_in_the_quarantine(db_path):
    claims = GENERATED_CLAIMS * 6 + GOOD_CLAIMS
    frame = pd.DataFrame({"claim_id": [f"c{i:02d}" for i in range(len(claims))], "case_id": 1,
                          "claim_index": range(len(claims)), "claim": claims, "model": "m"})
    con = connect(db_path)
    outcome = gate_and_load(con, 1, frame, GENERATED)
    assert outcome.batch_rejected and "the model is probably broken" in outcome.reasons[0]
    reasons = dict(con.execute("SELECT source_key, reason FROM ops.quarantine").fetchall())
    assert reasons["c00"].startswith("gate: expect_column_values_to_have_enough_words")
    assert "the model is probably broken" in reasons["c00"]
    assert reasons["c24"].startswith("batch rejected by gate")                 # a good claim: the batch's reason


def test_an_unknown_rule_set_is_named():
    suite = {"name": "x", "meta": {}, "expectations": [
        {"type": "include_text_rules", "kwargs": {"column": "claim", "rules": "klingon"}}]}
    with pytest.raises(ValueError, match="no text rule set 'klingon'"):
        gate.expand_text_rules(suite, "x.json")


def test_every_suite_loads_and_names_only_known_rule_sets():
    from caseforge.settings import EXPECTATIONS_DIR

    for path in sorted(EXPECTATIONS_DIR.glob("*.json")):
        if path.name == gate.TEXT_RULES_FILE:
            continue
        suite = gate.load_suite_json(path.stem)
        assert all(e["type"] != gate.INCLUDE_TEXT_RULES for e in suite["expectations"]), path.name
    assert json.loads((EXPECTATIONS_DIR / gate.TEXT_RULES_FILE).read_text())


def test_a_stage_whose_every_row_is_quarantined_holds_no_row_of_the_last_build(db_path):
    """Found in the nightly on the samples: with every generated claim quarantined, build.casefacts_generated kept
    the previous build's 9 claims, and the factuality check was asked about them."""
    from caseforge.stage_report import StageReport
    from caseforge.tasks.casefacts.config import BuildConfig
    from caseforge.tasks.casefacts.context import BuildContext, load_stage

    con = connect(db_path)
    ctx = BuildContext(con, 1, StageReport("build casefacts"), BuildConfig(), backends={})

    def generated(claims):
        return pd.DataFrame({"claim_id": [f"c{i}" for i in range(len(claims))], "case_id": 1,
                             "claim_index": range(len(claims)), "claim": claims, "model": "m"})

    assert len(load_stage(ctx, "generated", generated(GOOD_CLAIMS), "claim_id")) == 2
    assert len(load_stage(ctx, "generated", generated(GENERATED_CLAIMS[:2]), "claim_id")) == 0
    assert con.execute("SELECT count(*) FROM build.casefacts_generated").fetchone() == (0,)


def test_an_answer_whose_reasoning_is_degenerate_is_a_failed_item(db_path):
    """CASE baselines: a reply whose reasoning only repeats its prompt's placeholder ("two or three sentences", what
    the recorded double wrote) or is a run of one character is a failed item, counted wrong, not a scored answer."""
    from caseforge.evalstore import ItemResult, gate_outputs
    from caseforge.tasks.case.eval import barexam

    def item(key, reasoning):
        return ItemResult(key, "A", {"answer": "A"}, {"answer": "A", "reasoning": reasoning}, {"accuracy": 1.0})

    items = [item("q1", "two or three sentences"), item("q2", "A" * 40),
             item("q3", "The rule against perpetuities voids the gift, so option A is right.")]
    con = connect(db_path)
    out = gate_outputs(con, 1, barexam.ANSWERS_SUITE, items, {"reasoning": "reasoning"}, barexam.FAILED_SCORES)
    assert [(i.status, i.scores) for i in out] == [("failed", {"accuracy": 0.0})] * 2 + [("ok", {"accuracy": 1.0})]
    assert "expect_column_values_to_not_echo_prompt on reasoning" in out[0].reason
    assert "expect_column_values_to_not_run_one_character on reasoning" in out[1].reason
    assert barexam.summarise(out)["n_failed"] == 2
    assert con.execute("SELECT count(*) FROM ops.quarantine WHERE table_name = 'case_answers'").fetchone() == (2,)


def test_a_degenerate_attributed_answer_is_a_failed_output_not_scored(db_path):
    from caseforge.tasks.aquaechr.eval.pipeline import gate_answers
    from caseforge.tasks.aquaechr.eval.systems import SystemOutput

    good = ("States must protect life by law and investigate deaths caused by force [1]. The obligation is one of "
            "means, not of result [2].")
    outputs = [SystemOutput("a", "the the the the the the the the the the the the the the the the the the the the"),
               SystemOutput("b", good), SystemOutput("c", None, status="failed", reason="call failed")]
    out = gate_answers(connect(db_path), outputs)
    assert [(o.status, (o.reason or "")[:28]) for o in out] == [
        ("failed", "rejected by the content gate"), ("ok", ""), ("failed", "call failed")]
    assert "expect_column_values_to_not_repeat_one_token on answer" in out[0].reason
