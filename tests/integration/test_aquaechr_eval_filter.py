"""Judge–expert agreement: F1 and confusion matrices on a hand-made gold CSV with a scripted judge."""
import pytest
from aquaechr_support import GOLD, ScriptedJudgeDouble

from caseforge.tasks.aquaechr.eval.judge_agreement import Confusion, agreement, evaluate, read_gold
from caseforge.warehouse.connection import connect

def test_f1_and_confusion_per_dimension(db_path):
    result = evaluate(connect(db_path), ScriptedJudgeDouble(), read_gold(GOLD), threshold=3, convention="caseforge")
    got = {d: (c.tp, c.fp, c.fn, c.tn) for d, c in result.per_dimension.items()}
    assert result.judged == 6 and result.failures == []
    assert got["comprehensiveness"] == (2, 1, 0, 3)       # F1 = 4/5
    assert got["conciseness"] == (1, 0, 1, 4)             # F1 = 2/3
    assert got["answer_fluency"] == (1, 0, 0, 5)          # F1 = 1
    assert got["overall"] == (2, 1, 1, 2)                 # F1 = 4/6
    assert result.per_dimension["comprehensiveness"].f1 == pytest.approx(0.8)
    assert result.per_dimension["conciseness"].f1 == pytest.approx(2 / 3)
    assert result.per_dimension["overall"].f1 == pytest.approx(2 / 3)
    assert "comprehensiveness" in "\n".join(result.lines())


def test_threshold_moves_the_positive_class():
    gold = read_gold(GOLD)
    predicted = {p.key: dict(p.scores) for p in gold}
    strict = agreement(gold, predicted, threshold=4, convention="caseforge")
    assert all(c.fp == 0 and c.fn == 0 for c in strict.per_dimension.values())
    assert strict.per_dimension["comprehensiveness"].tp == 4      # gold 2, 4, 3, 4 are ≤ 4
    assert Confusion().f1 == 0.0


def test_bad_gold_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "g.csv"
    bad.write_text("question,answer,comprehensiveness\nq,a,3\n")
    with pytest.raises(ValueError, match="missing column"):
        read_gold(bad)
    bad.write_text("question,answer,comprehensiveness,conciseness,answer_fluency\nq,a,7,3,3\n")
    with pytest.raises(ValueError, match="between 1 and 5"):
        read_gold(bad)


def test_cli_eval_filter_through_the_replay_backend(tmp_path, capsys):
    from caseforge.cli import main
    from caseforge.llm.backends.replay import export_replay

    recording = connect(tmp_path / "record.duckdb")
    evaluate(recording, ScriptedJudgeDouble(), read_gold(GOLD))
    replay = tmp_path / "judge.jsonl"
    assert export_replay(recording, replay) == 6
    recording.close()
    code = main(["eval", "aquaechr-filter", "--gold", str(GOLD), "--llm", "replay", "--model", "double-judge",
                 "--replay-file", str(replay), "--db", str(tmp_path / "w.duckdb"), "--convention", "caseforge"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err[-3000:]
    assert "comprehensiveness    80.0    2    1    0    3" in out
    assert "conciseness          66.7    1    0    1    4" in out
    assert "overall              66.7    2    1    1    2" in out


def _paper_fluency_pairs():
    """300 pairs whose answer-fluency scores give the paper's Table 2 row (TP 281, FP 14, TN 1, FN 4 with
    "high quality" positive): 285 pairs the expert scored above 3, 15 at or below."""
    from caseforge.tasks.aquaechr.eval.judge_agreement import GoldPair

    plan = [(5, 5)] * 281 + [(2, 5)] * 14 + [(2, 2)] * 1 + [(5, 2)] * 4       # (expert, judge)
    gold, predicted = [], {}
    for i, (expert, judge) in enumerate(plan):
        pair = GoldPair(f"q{i}", f"a{i}", {"comprehensiveness": 5, "conciseness": 5, "answer_fluency": expert})
        gold.append(pair)
        predicted[pair.key] = {"comprehensiveness": 5, "conciseness": 5, "answer_fluency": judge}
    return gold, predicted


def test_paper_convention_reproduces_the_published_fluency_f1_and_the_always_high_baseline():
    from caseforge.tasks.aquaechr.eval.judge_agreement import DEFAULT_CONVENTION

    assert DEFAULT_CONVENTION == "paper"
    gold, predicted = _paper_fluency_pairs()
    result = agreement(gold, predicted, threshold=3)
    fluency = result.per_dimension["answer_fluency"]
    assert (fluency.tp, fluency.fp, fluency.tn, fluency.fn) == (281, 14, 1, 4)
    assert round(100 * fluency.f1, 1) == 96.9                       # the paper's figure
    assert fluency.tp + fluency.fn == 285                            # = expert scores above 3
    # a judge that always answers "high" does better on the same pairs: 2·285 / (2·285 + 15)
    assert round(100 * result.baseline["answer_fluency"].f1, 1) == 97.4
    lines = "\n".join(result.lines())
    assert "high quality (score > 3) is the positive class" in lines
    assert "overall: high quality only when all of comprehensiveness, conciseness, answer_fluency" in lines
    assert "answer_fluency       96.9  281   14    4    1        97.4" in lines


def test_the_two_conventions_count_the_same_pairs_from_opposite_sides():
    gold, predicted = _paper_fluency_pairs()
    paper = agreement(gold, predicted, threshold=3, convention="paper").per_dimension["answer_fluency"]
    ours = agreement(gold, predicted, threshold=3, convention="caseforge")
    low = ours.per_dimension["answer_fluency"]
    assert (low.tp, low.fp, low.fn, low.tn) == (paper.tn, paper.fn, paper.fp, paper.tp)
    assert round(100 * low.f1, 1) == 10.0                           # 2·1 / (2·1 + 4 + 14)
    assert ours.baseline["answer_fluency"].f1 == 0.0                # "always high" never finds a low pair
    assert "low quality (score <= 3) is the positive class" in "\n".join(ours.lines())
    with pytest.raises(ValueError, match="convention"):
        agreement(gold, predicted, threshold=3, convention="mine")


def test_cli_eval_filter_defaults_to_the_papers_convention_and_prints_the_baseline(tmp_path, capsys):
    from caseforge.cli import main
    from caseforge.llm.backends.replay import export_replay

    recording = connect(tmp_path / "record.duckdb")
    evaluate(recording, ScriptedJudgeDouble(), read_gold(GOLD))
    replay = tmp_path / "judge.jsonl"
    export_replay(recording, replay)
    recording.close()
    assert main(["eval", "aquaechr-filter", "--gold", str(GOLD), "--llm", "replay", "--model", "double-judge",
                 "--replay-file", str(replay), "--db", str(tmp_path / "w.duckdb")]) == 0
    out = capsys.readouterr().out
    assert "convention paper: high quality (score > 3) is the positive class" in out
    # high positive: comprehensiveness gold high on 4 pairs, judge high on 3 of them and on no other
    assert "comprehensiveness    85.7    3    0    1    2        80.0" in out
    assert "overall: high quality only when all of" in out
