"""Reading the judge's reply: JSON or lines, odd number formats, and malformed replies."""
import pytest

from caseforge.tasks.casegen.eval.judge import dimensions_for, read_judge_reply


def as_table(reading):
    return {s.dimension: (s.score, s.status) for s in reading.scores}


def test_lines_with_full_width_digits_fen_and_out_of_ten():
    reply = ("分析：与参考答案相比，生成的答辩意见遗漏了已部分还款的抗辩。\n"
             "事实准确性：８分\n法律准确性: 7/10\n逻辑连贯性：6.5\n完整性：5分\n总体评分：６")
    reading = read_judge_reply(reply, "defense")
    assert reading.fmt == "lines"
    assert as_table(reading) == {"factuality": (8.0, "ok"), "legal_accuracy": (7.0, "ok"),
                                 "logical_coherence": (6.5, "ok"), "completeness": (5.0, "ok"), "overall": (6.0, "ok")}


def test_json_reply_nested_scores_and_string_values():
    reply = ('好的，评分如下：```json\n{"analysis": "……", "scores": {"事实准确性": 8, "相关性": "7分", '
             '"逻辑连贯性": {"score": 6}, "completeness": 9}, "总体评分": "6/10"}\n```')
    reading = read_judge_reply(reply, "facts")
    assert reading.fmt == "json"
    assert as_table(reading) == {"factuality": (8.0, "ok"), "relevance": (7.0, "ok"), "logical_coherence": (6.0, "ok"),
                                 "completeness": (9.0, "ok"), "overall": (6.0, "ok")}


def test_missing_dimension_is_null_with_a_reason_never_a_number():
    reading = read_judge_reply("判决结果准确性：7\n总体评分：7", "judgment").by_dimension()
    assert reading["judgment_accuracy"].score == 7.0
    missing = reading["provision_accuracy"]
    assert (missing.score, missing.status, missing.reason) == (None, "missing", "dimension not found in judge reply")


def test_out_of_range_other_scales_and_words_are_invalid():
    reply = "争议焦点准确性：12\n法律准确性：0\n逻辑连贯性：良好\n完整性：8/5\n伦理合规性：9\n总体评分：-3"
    table = read_judge_reply(reply, "reasoning").by_dimension()
    assert (table["issue_accuracy"].status, table["issue_accuracy"].reason) == ("invalid", "out of range 1-10: 12")
    assert table["legal_accuracy"].status == "invalid" and table["legal_accuracy"].score is None
    assert table["logical_coherence"].reason == "not a number: '良好'"
    assert table["completeness"].reason == "score on another scale: 8/5"
    assert table["ethics"].score == 9.0
    assert table["overall"].status == "invalid"


def test_the_score_after_the_analysis_wins_over_a_mention_inside_it():
    reply = "逐项分析：\n事实准确性：与参考基本一致。\n……\n评分：\n事实准确性：7\n相关性：8\n逻辑连贯性：8\n完整性：6\n总体评分：7"
    assert read_judge_reply(reply, "facts").by_dimension()["factuality"].score == 7.0


@pytest.mark.parametrize("reply", ["", None, "抱歉，我无法评价。", "{not json", '{"score": }'])
def test_malformed_replies_give_all_missing_and_no_numbers(reply):
    reading = read_judge_reply(reply, "defense")
    assert reading.fmt == "none"
    assert [s.status for s in reading.scores] == ["missing"] * 5
    assert all(s.score is None for s in reading.scores)


def test_every_task_has_its_dimensions_plus_overall():
    assert [d[0] for d in dimensions_for("judgment")] == ["judgment_accuracy", "provision_accuracy", "overall"]
    assert len(dimensions_for("reasoning")) == 6


