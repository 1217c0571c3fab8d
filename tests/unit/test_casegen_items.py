"""Task items from gold sections; evidence names; middle truncation."""
import json
from pathlib import Path

import pandas as pd
import pytest

from caseforge.tasks.casegen import items as cg
from caseforge.tasks.casegen.eval.truncate import CUT_MARK, cut_middle

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "casegen" / "full_cases.jsonl"


def fixture_records():
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def test_casegen_format_record_builds_four_tasks_from_gold_sections():
    items, skipped = cg.build_items(fixture_records()[:1], source="fixture")
    assert skipped == []
    by_task = {item.task: item for item in items}
    assert set(by_task) == {"defense", "facts", "reasoning", "judgment"}
    record = fixture_records()[0]
    assert set(by_task["defense"].inputs) == {"claims", "evidence"}
    assert by_task["defense"].inputs["claims"] == record["prosecution"]
    assert by_task["defense"].reference == record["defense"]
    assert set(by_task["facts"].inputs) == {"claims", "defense", "evidence"}
    assert set(by_task["reasoning"].inputs) == {"claims", "defense", "facts"}
    assert by_task["reasoning"].inputs["facts"] == record["fact"]
    assert by_task["judgment"].inputs == {"facts": record["fact"], "reasoning": record["reasoning"]}
    assert by_task["judgment"].reference == record["judgement"]
    # the evidence dict imports directly, content and the event it proves included
    evidence = by_task["defense"].inputs["evidence"]
    assert [e["name"] for e in evidence] == ["借条", "银行转账记录", "微信转账记录"]
    assert evidence[2]["content"].startswith("2020年8月10日") and evidence[2]["event"] == "被告已归还部分借款"


def test_item_ids_are_stable_and_distinct():
    first, _ = cg.build_items(fixture_records(), source="fixture")
    again, _ = cg.build_items(fixture_records(), source="fixture")
    assert [i.item_id for i in first] == [i.item_id for i in again]
    assert len({i.item_id for i in first}) == len(first) == 12


def test_evidence_as_a_list_of_names_has_no_content():
    items, _ = cg.build_items(fixture_records()[2:], source="fixture")
    evidence = next(i for i in items if i.task == "defense").inputs["evidence"]
    assert evidence == [{"name": "道路交通事故认定书", "content": None, "event": None},
                        {"name": "医疗费票据", "content": None, "event": None},
                        {"name": "误工证明", "content": None, "event": None}]


def test_curated_rows_as_a_dataframe_with_an_evidence_section():
    frame = pd.DataFrame([{
        "doc_id": "d1", "claims": "原告诉称：被告欠款未还。", "defense": "被告辩称：已经还清。",
        "evidence": "原告提交了以下证据：\n1、借条一份，证明借款事实；\n2、银行流水，证明款项交付。",
        "facts": "经审理查明：被告向原告借款1万元。", "reasoning": "本院认为，借款事实清楚。",
        "judgment": "被告于判决生效之日起十日内归还借款1万元。", "complete": True,
    }])
    items, skipped = cg.build_items(frame, source="cn_judgments")
    assert skipped == [] and len(items) == 4
    defense = next(i for i in items if i.task == "defense")
    assert [e["name"] for e in defense.inputs["evidence"]] == ["借条", "银行流水"]


def test_missing_sections_skip_the_task_with_a_reason_and_never_build_half_items():
    record = {"id": 7, "fact": "经审理查明：……", "reasoning": "本院认为：……", "judgement": "驳回原告的诉讼请求。"}
    items, skipped = cg.build_items([record], source="x")
    assert [i.task for i in items] == ["judgment"]
    reasons = {s.task: s.reason for s in skipped}
    assert reasons["defense"] == "missing gold section(s): claims, evidence, reference defense"
    assert reasons["reasoning"] == "missing gold section(s): claims, defense"
    _, bad = cg.build_items([{"fact": "x"}], source="x")
    assert bad[0].reason.startswith("x: record without an id")


def test_evidence_names_from_summary_sentences_and_numbered_sections():
    text = "上述事实，有原告提交的借条、收款收据、银行转账凭证及当事人陈述等证据在案为证。"
    assert cg.extract_evidence_names(text) == ["借条", "收款收据", "银行转账凭证", "当事人陈述"]
    section = "证据1：《房屋租赁合同》，证明双方租赁关系；\n证据2：催告函两份，证明原告已催告。"
    assert cg.evidence_from_section(section) == ["房屋租赁合同", "催告函"]


def test_cut_middle_keeps_head_and_tail_and_marks_the_cut():
    cut = cut_middle("一二三四五六七八九十", 5)
    assert cut.text == "一二三" + CUT_MARK + "九十"
    assert (cut.original_length, cut.kept_length, cut.cut) == (10, 5, True)
    short = cut_middle("一二三", 5)
    assert short.text == "一二三" and not short.cut


def test_cut_middle_with_a_token_budget():
    two_per_char = lambda s: 2 * len(s)  # noqa: E731 - a stand-in tokenizer: every character costs two tokens
    cut = cut_middle("一二三四五六七八九十", 9, measure=two_per_char)
    # 9 tokens allow 4 characters: head 一二, tail 九十
    assert cut.text == "一二" + CUT_MARK + "九十" and cut.kept_length == 8
    with pytest.raises(ValueError):
        cut_middle("abc", 1)
