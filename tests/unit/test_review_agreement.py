"""Agreement by the field's libraries: irrCAC (installed without its pins, on our numpy and scipy) gives Gwet's AC1
as the formula does and Krippendorff's α as the krippendorff package does; the κ of the bootstrap resamples is
scikit-learn's; the intervals are reproducible; the judge card and the release policy read them."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from caseforge.review import agreement
from caseforge.review.card import apply_policy, table_card
from caseforge.settings_tables import ReviewPolicy

CATEGORIES = ["SUPPORTED", "REFUTED", "OVERRULED", "UNUSABLE"]
# ten items, two annotators: 8 agreements (5 SUPPORTED, 2 REFUTED, 1 OVERRULED), 2 disagreements
TABLE = [["SUPPORTED", "SUPPORTED"]] * 5 + [["REFUTED", "REFUTED"]] * 2 + [["OVERRULED", "OVERRULED"]] + \
        [["SUPPORTED", "REFUTED"], ["REFUTED", "SUPPORTED"]]


def test_irrcac_gives_gwets_ac1_as_the_formula_does_on_our_numpy_and_scipy():
    # AC1 = (pa - pe) / (1 - pe), pe = sum_k pi_k (1 - pi_k) / (q - 1), pi_k the mean share of category k
    pa = 8 / 10
    shares = {"SUPPORTED": 12 / 20, "REFUTED": 6 / 20, "OVERRULED": 2 / 20, "UNUSABLE": 0.0}
    pe = sum(p * (1 - p) for p in shares.values()) / (len(CATEGORIES) - 1)
    assert agreement.gwet(TABLE, CATEGORIES, ordinal=False) == pytest.approx((pa - pe) / (1 - pe), abs=1e-5)


def test_krippendorff_and_irrcac_agree_on_alpha():
    from irrCAC.raw import CAC
    import pandas as pd

    ours = agreement.krippendorff_alpha(TABLE, CATEGORIES, ordinal=False)
    theirs = CAC(pd.DataFrame(TABLE), categories=CATEGORIES).krippendorff()["est"]["coefficient_value"]
    assert ours == pytest.approx(float(theirs), abs=1e-5)


def test_the_resamples_kappa_is_scikit_learns():
    rng = random.Random(5)
    for ordinal in (False, True):
        for _ in range(20):
            a = np.array([rng.randrange(5) for _ in range(30)])
            b = np.array([min(4, max(0, x + rng.choice((-1, 0, 0, 1)))) for x in a])
            expected = cohen_kappa_score(a, b, labels=list(range(5)), weights="quadratic" if ordinal else None)
            assert agreement.kappa_of_codes(a, b, 5, ordinal) == pytest.approx(expected, abs=1e-12)


def figures_of(result: agreement.FieldAgreement) -> dict:
    return {f.name: f for f in (*result.annotators, *result.judge)}


def test_figures_have_reproducible_intervals_and_the_judge_is_measured_against_the_consensus():
    answers = {f"i{k}": row for k, row in enumerate(TABLE)}
    judge = {f"i{k}": row[0] for k, row in enumerate(TABLE)}
    judge["i0"] = "REFUTED"                                     # one agreed item the judge got wrong
    first = agreement.field_agreement("verdict", CATEGORIES, False, answers, judge, seed=13, resamples=200)
    again = agreement.field_agreement("verdict", CATEGORIES, False, answers, judge, seed=13, resamples=200)
    assert first.as_dict() == again.as_dict()
    figures = figures_of(first)
    assert figures["alpha"].value == pytest.approx(agreement.krippendorff_alpha(TABLE, CATEGORIES, False), abs=1e-6)
    assert figures["alpha"].low <= figures["alpha"].value <= figures["alpha"].high
    assert figures["ac1"].interval == "gwet" and figures["ac1"].low <= figures["ac1"].value
    assert first.no_consensus == 2 and figures["accuracy"].n == 8 and figures["accuracy"].value == 7 / 8
    # rows: the judge; columns: the consensus
    assert first.confusion == [[4, 0, 0, 0], [1, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]


def test_one_expert_per_item_gives_the_judge_figures_and_no_agreement_between_annotators():
    answers = {f"p{k}": [str(1 + k % 5)] for k in range(12)}
    judge = {f"p{k}": str(1 + (k + (k % 3 == 0)) % 5) for k in range(12)}
    result = agreement.field_agreement("conciseness", ["1", "2", "3", "4", "5"], True, answers, judge, 13, 200)
    assert result.annotators == []
    assert {f.name for f in result.judge} == {"accuracy", "kappa", "ac2", "spearman"}


def card(answers, verdicts):
    return table_card("casefacts", "casefacts.factuality", [{"model": "judge-model", "served_model": None,
                                                               "answers": 40}],
                      "people on Label Studio", 2, answers, verdicts, len(verdicts), 13, 200)


def test_the_policy_marks_or_holds_a_card_below_it_in_one_line():
    answers = {f"i{k}": {"verdict": row} for k, row in enumerate(TABLE * 4)}
    verdicts = {f"i{k}": {"verdict": "REFUTED" if k % 10 == 0 else row[0]} for k, row in enumerate(TABLE * 4)}
    built = card(answers, verdicts)
    good = apply_policy(built, ReviewPolicy(min_reviewed=30, min_agreement=0.5))
    assert good.reviewed == 40 and good.verdict is None
    few = apply_policy(built, ReviewPolicy(min_reviewed=50))
    assert few.verdict == "40 reviewed items, fewer than min_reviewed 50"
    strict = apply_policy(built, ReviewPolicy(min_reviewed=30, min_agreement=0.99, agreement="ac1"))
    assert strict.verdict.startswith("the judge's ac1 on verdict is ") and "below min_agreement 0.99" in strict.verdict
    text = strict.markdown()
    assert "**Unreviewed**: the judge's ac1 on verdict" in text and "judge-model as configured" in text
    assert "| verdict | annotators | alpha |" in text and "![confusion matrices" in text
    assert strict.picture[:8] == b"\x89PNG\r\n\x1a\n"
    rai = strict.rai()
    assert rai["rai:annotationsPerItem"] == "2" and "Unreviewed" in rai["rai:dataAnnotationAnalysis"]
    assert json.loads(json.dumps(strict.as_dict()))["reviewed"] == 40


def test_a_release_of_an_unreviewed_benchmark_is_marked_or_held_as_the_policy_says(tmp_path, monkeypatch):
    from caseforge.release import ReleaseHeld
    from caseforge.review.card import release_judge
    from caseforge.warehouse.connection import connect

    con = connect(tmp_path / "w.duckdb")
    marked = release_judge(con, "casefacts")
    assert marked.verdict == "0 reviewed items, fewer than min_reviewed 30"
    assert "no answer of the judge (casefacts.factuality) is recorded" in marked.markdown()
    config = tmp_path / "caseforge.toml"
    config.write_text('[review.policy]\nbelow = "hold"\n')
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    with pytest.raises(ReleaseHeld, match=r"the casefacts release is held back by the release policy \(\[review.policy\] "
                                          r"below = \"hold\"\): 0 reviewed items, fewer than min_reviewed 30"):
        release_judge(con, "casefacts")
    con.close()


def test_the_aquaechr_filter_renders_the_judge_card_beside_its_unchanged_f1(tmp_path, monkeypatch):
    """The evaluation behind `caseforge eval aquaechr-filter` (which prints its `lines`), on expert scores: the F1
    lines as before, then the card in the shape a review gives (one expert per item: the judge's figures, no
    agreement between annotators), and the card with its picture in the reports folder."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from aquaechr_support import GOLD, ScriptedJudgeDouble

    from caseforge.llm.backends.replay import export_replay
    from caseforge.settings import load_settings
    from caseforge.tasks.aquaechr.eval.judge_agreement import evaluate, read_gold
    from caseforge.tasks.aquaechr.eval.run import evaluate_judge
    from caseforge.warehouse.connection import connect

    recording = connect(tmp_path / "record.duckdb")
    evaluate(recording, ScriptedJudgeDouble(), read_gold(GOLD))
    export_replay(recording, tmp_path / "judge.jsonl")
    recording.close()
    (tmp_path / "caseforge.toml").write_text("[review]\nbootstrap_resamples = 200\n")
    monkeypatch.setenv("CASEFORGE_CONFIG", str(tmp_path / "caseforge.toml"))
    report = evaluate_judge(load_settings(tmp_path / "w.duckdb"), str(GOLD), "replay", "double-judge",
                            str(tmp_path / "judge.jsonl"))
    assert report.ok, report.failures
    out = "\n".join(report.results["lines"])
    assert "comprehensiveness    85.7    3    0    1    2        80.0" in out       # the F1 line, unchanged
    assert "judge aquaechr-judge: double-judge as configured" in out
    assert "reviewed by the published expert scores: 6 items, 1 annotator(s) per item, of 6 put before them" in out
    assert "comprehensiveness judge vs consensus kappa " in out and "answer_fluency judge vs consensus spearman " in out
    assert "annotators alpha" not in out and "release policy" not in out
    card = (tmp_path / "w-reports" / "aquaechr-filter" / "judge_card.md").read_text()
    assert card.startswith("# Judge card") and "| field | between | figure | value | 95% interval | items |" in card
    assert (tmp_path / "w-reports" / "aquaechr-filter" / "judge" / "confusion.png").read_bytes()[:4] == b"\x89PNG"
