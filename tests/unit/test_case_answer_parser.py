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
