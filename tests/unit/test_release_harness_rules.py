"""The scoring rules a release's harness tasks carry (caseforge/scoring_rules.py, written into a release as
harness/caseforge_scoring.py, which imports no caseforge), loaded as the release loads them, read replies and score
them exactly as caseforge's evaluation code does: the same inputs, odd ones among them, through both."""
import importlib.util
import json
import sys

import pytest

from caseforge.llm import render
from caseforge.llm.parsing import InvalidOutput, extract_json, parse_output, schema_for
from caseforge.release.harness import SHIPPED, TASK_FILES, mark
from caseforge.tasks.aquaechr.eval import citations, metrics as aquaechr_metrics
from caseforge.tasks.aquaechr.eval.systems import AnswerOutput
from caseforge.tasks.case.answers import parse_verdict
from caseforge.tasks.casefacts.eval.metrics import verdict_f1
from caseforge.tasks.casefacts.eval.systems import VerdictWithCases
from caseforge.tasks.casegen.eval import metrics as casegen_metrics
from caseforge.tasks.casegen.eval.judge import OVERALL, dimension_names, read_judge_reply

sys.path.insert(0, str(SHIPPED))            # the shipped modules import each other by their plain names
spec = importlib.util.spec_from_file_location("caseforge_scoring_under_test", TASK_FILES["caseforge_scoring.py"])
rules = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rules)
harness = importlib.import_module("caseforge_harness")

VERDICT_REPLIES = [
    '{"verdict": "SUPPORTED", "cases": ["Roe v. Wade"]}', '{"verdict": "supported", "cases": []}',
    '{"verdict": "Verdict: REFUTED", "cases": []}', '```json\n{"verdict": "OVERRULED", "cases": ["A", "B"]}\n```',
    'Sure! {"verdict": "REFUTED", "cases": ["x"]} hope it helps', '{"verdict": "SUPPORTED"}',
    '{"verdict": "SUPPORTED", "cases": ["a", "b", "c", "d"]}', '{"verdict": "SUPPORTED", "cases": ["' + "n" * 111 + '"]}',
    '{"verdict": 3, "cases": []}', '{"verdict": "maybe", "cases": []}', "SUPPORTED", "", "{not json",
    '{"verdict": "REFUTED", "cases": [1]}', '[{"verdict": "REFUTED", "cases": []}]',
    '{"verdict": "The claim is OVERRULED by later precedent", "cases": []}', '{"verdict": "SUPPORTED", "cases": "Roe"}',
]
ANSWER_REPLIES = [
    '{"answer": "The Court applies a strict test [Doc 1]."}', '{"answer": ""}', '{"answer": 5}', '{"reply": "x"}',
    '{"answer": "' + "a" * 651 + '"}', '{"answer": "' + "a" * 650 + '"}', "no json at all",
    'Here: ```json\n{"answer": "Fenced."}\n```', '{"answer": "x", "extra": true}',
]
CITED_ANSWERS = [
    "Article 17 applies only exceptionally [Doc 1]. Context matters [Doc 1, Doc 3].",
    "Intent matters [1][2]. Severity is key (Doc 2). Stray spacing [ doc  3 ] here.\nAlso [Docs 1, 3].",
    "[Doc 3]\nThe complaint was rejected.\nIt was ill-founded.\n[Doc 1]",
    "[Doc 3] The complaint was rejected.\nIt was ill-founded.\n[Doc 1]",
    "Claim one [Doc 4]. Claim two [Doc 0][Doc 2].", "See Pastörs v. Germany, no. 55225/14, § 37 [Doc 2]. Art. 10 [5].",
    "The Court listed (1) legality and (2) necessity.", "No citation here", "[Doc 2]",
]
SHOWN = ["001-1#10", "001-2#20", "001-3#30"]
JUDGE_REPLIES = [
    "分析：遗漏了部分抗辩。\n事实准确性：８分\n法律准确性: 7/10\n逻辑连贯性：6.5\n完整性：5分\n总体评分：６",
    '好的：```json\n{"analysis": "……", "scores": {"事实准确性": 8}, "总体评分": "6/10"}\n```',
    '{"分析": "基本一致", "总体评分": 7}', '{"分析": "x", "scores": {"总体评分": {"score": 9}}}',
    "总体评分：12\n综合评分：8", "总分: 8/5", "最终评分：良好", "**总体评分**：7分", "overall: 4",
    '{"分析": "x", "总体评分": true}', '{"分析": "x", "overall": "9分"}', "逐项：总体评分：与参考一致。\n总体评分：8",
    "", None, "抱歉，我无法评价。", '{"分析": "x"}\n总体评分：5',
]


@pytest.mark.parametrize("text", VERDICT_REPLIES + ANSWER_REPLIES + JUDGE_REPLIES[:4])
def test_json_is_found_where_caseforge_finds_it(text):
    try:
        expected = extract_json(text)
    except InvalidOutput:
        with pytest.raises(ValueError):
            rules.extract_json(text)
        return
    assert rules.extract_json(text) == expected


@pytest.mark.parametrize("reply", VERDICT_REPLIES + ["verdict: refuted", "It is SUPPORTED.", "supported or refuted"])
def test_a_stated_verdict_reads_as_caseforge_reads_it(reply):
    assert rules.parse_verdict(reply) == parse_verdict(reply)


@pytest.mark.parametrize("reply", VERDICT_REPLIES)
def test_the_closed_book_verdict_is_the_one_caseforge_eval_scores(reply):
    try:
        out = parse_output(reply, VerdictWithCases)
        expected = parse_verdict(f'{{"verdict": "{out.verdict.strip()}"}}') or parse_verdict(out.verdict)
    except InvalidOutput:
        expected = None
    assert rules.casefacts_verdict(reply, schema_for(VerdictWithCases)) == expected


@pytest.mark.parametrize("reply", ANSWER_REPLIES)
def test_an_answer_is_read_or_failed_as_caseforge_does(reply):
    try:
        expected = parse_output(reply, AnswerOutput).answer
    except InvalidOutput:
        expected = None
    found = rules.reply_object(reply, schema_for(AnswerOutput))
    assert (found["answer"] if found else None) == expected


@pytest.mark.parametrize("answer", CITED_ANSWERS)
def test_cited_paragraphs_and_rouge_match_the_aquaechr_evaluation(answer):
    gold = ["001-2#20", "001-9#1"]
    sentences = citations.parse_answer(answer, SHOWN)
    precision, recall, f1 = aquaechr_metrics.citation_prf(set(citations.cited_passages(sentences)), set(gold))
    reference = "The Court applies a strict test. Context matters for the complaint."
    found = rules.aquaechr_scores(answer, reference, gold, SHOWN)
    assert found == {"rouge_l": aquaechr_metrics.rouge_l(answer, reference), "citation_precision": precision,
                     "citation_recall": recall, "citation_f1": f1}
    assert set(rules.aquaechr_scores(answer, reference, gold, None)) == {"rouge_l"}


@pytest.mark.parametrize("pair", [("经审理查明：原告于2021年借款５万元。", "经审理查明，原告在2021年借给被告5万元！"),
                                  ("ABC 12.5 元", "abc12.5元"), ("", "文本"), ("。。。", "，，"),
                                  ("判决如下：一、被告支付原告租金120000元。", "判决：被告支付租金12万元")])
def test_character_rouge_matches_casegen(pair):
    reference, draft = pair
    assert rules.rouge_l_chars(reference, draft) == casegen_metrics.rouge_l(reference, draft, "char").f1


@pytest.mark.parametrize("reply", JUDGE_REPLIES)
def test_the_judges_overall_score_is_the_one_casegen_reads(reply):
    expected = read_judge_reply(reply, "facts").by_dimension()["overall"].score
    assert rules.judge_score(reply, dimension_names(OVERALL)) == expected


def test_verdict_metrics_match_caseforges_per_label_accuracy_and_f1():
    pairs = [("SUPPORTED", "SUPPORTED"), ("SUPPORTED", None), ("REFUTED", "SUPPORTED"), ("REFUTED", "REFUTED"),
             ("SUPPORTED", "REFUTED")]
    found = rules.verdict_metrics(pairs)
    assert {k: v for k, v in found.items() if k.startswith("verdict_f1") or k == "verdict_macro_f1"} == \
        verdict_f1(pairs)
    assert found["verdict_accuracy"] == 2 / 5 and found["verdict_accuracy/SUPPORTED"] == 1 / 3
    assert found["verdict_f1/OVERRULED"] is None and found["verdict_f1/SUPPORTED"] == 2 * 1 / (2 * 1 + 3)


@pytest.mark.parametrize("candidate", ["草稿", "  前后有空白的草稿\n\n", "含{{ 括号 }}的草稿"])
def test_a_prompt_filled_by_the_harness_is_the_prompt_caseforge_renders(candidate):
    values = {"case_input": "【审理查明的事实】\n事实", "reference": "  参考文本  "}
    rendered = render("casegen/eval/judge_facts.j2", **values, candidate=candidate).messages
    with_marks = render("casegen/eval/judge_facts.j2", case_input=values["case_input"], reference=mark("reference"),
                        candidate=mark("candidate")).messages
    filled = harness.messages_for([{**m, "content": harness.fill(m["content"], values)} for m in with_marks],
                                  {"candidate": candidate})
    assert json.dumps(filled, ensure_ascii=False) == json.dumps(rendered, ensure_ascii=False)
