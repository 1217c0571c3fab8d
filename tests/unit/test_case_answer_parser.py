import pytest

from caseforge.tasks.case.answers import parse_answer, parse_verdict


@pytest.mark.parametrize("reply, expected", [
    ("THE ANSWER IS B", "B"),                                   # the released parser read A from "ANSWER"
    ("After weighing all four options, the answer is B.", "B"),
    ("B) admissible because the testimony was relevant", "B"),
    ("(B) It is admissible.", "B"),
    ("I think (c)", "C"),
    ("I think (c) is best because a court would agree.", "C"),
    ('{"answer": "B"}', "B"),
    ('Reasoning first.\n```json\n{"reasoning": "A is wrong", "answer": "D"}\n```', "D"),
    ('{"answer": "(c) inadmissible"}', "C"),
    ("A is tempting, but the correct answer is D.", "D"),
    ("Answer: A at first glance, but on reflection the final answer is (C).", "C"),
    ("Final answer: c", "C"),
    ("Option D is correct because Dan was a bona fide purchaser.", "D"),
    ("I choose option A.", "A"),
    ("D", "D"),
])
def test_parser_reads_the_stated_answer(reply, expected):
    assert parse_answer(reply) == expected


@pytest.mark.parametrize("reply", [
    "",
    None,
    "A court would have to decide this as a matter of law.",   # starts with the article "A", states nothing
    "The answer is a matter of some debate among scholars.",   # the article "a", not option A
    "Both are plausible; I cannot decide.",
])
def test_parser_refuses_when_no_answer_is_stated(reply):
    assert parse_answer(reply) is None


@pytest.mark.parametrize("reply, expected", [
    ('{"verdict": "Refuted", "cases": []}', "REFUTED"),
    ("Verdict: OVERRULED", "OVERRULED"),
    ("supported", "SUPPORTED"),
    ("Some call it supported, but the verdict is REFUTED.", "REFUTED"),
])
def test_verdict_parser(reply, expected):
    assert parse_verdict(reply) == expected


def test_verdict_parser_refuses_ambiguous_text():
    assert parse_verdict("It could be supported or refuted depending on the reading of the case law.") is None


def test_label_valued_outputs_are_enums_with_every_field_required():
    """Constrained decoding follows the schema: only a label can come out, and an empty object cannot."""
    from pydantic import ValidationError

    from caseforge.tasks.case.eval.barexam import MCAnswer
    from caseforge.tasks.case.method import JurorVote, QueryProposal
    from caseforge.tasks.casefacts.eval.systems import VerdictWithCases

    assert JurorVote.model_json_schema()["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]
    assert VerdictWithCases.model_json_schema()["properties"]["verdict"]["enum"] == ["SUPPORTED", "REFUTED", "OVERRULED"]
    for model in (JurorVote, MCAnswer, QueryProposal, VerdictWithCases):
        schema = model.model_json_schema()
        assert set(schema["required"]) == set(schema["properties"]), model.__name__
    with pytest.raises(ValidationError):
        QueryProposal.model_validate({})
    with pytest.raises(ValidationError):
        VerdictWithCases.model_validate({"verdict": "SUPPORTED|REFUTED|OVERRULED", "cases": []})
    # an unconstrained model's phrasing is still read the way the answer parser reads it
    assert MCAnswer.model_validate({"reasoning": "r", "answer": "THE ANSWER IS B"}).answer == "B"
    assert VerdictWithCases.model_validate({"verdict": "Supported", "cases": []}).verdict == "SUPPORTED"
