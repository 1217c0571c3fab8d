"""Golden files for the Chinese judgment parser: a handful of real judgments from every cn sample file.

tests/golden/cn/<file>.<index>.compare.json holds the whole row parse_record gives for one record (what
the ingest stage loads, less the archive keys it adds), with gold_sections and gold_agreement decoded
from their JSON strings so a reviewer reads them as text. Regenerate with
`.venv/bin/python tests/golden/regenerate.py cn`. PICKS says why each record was picked and which
defects a reviewer found in its parse (reading the record's text against the sections); the parser is
not fixed here, so a fix of a named defect shows up as an expected diff.
"""
from __future__ import annotations

import json
from functools import lru_cache, partial
from pathlib import Path

import pytest
from golden.golden import assert_golden

from caseforge.tasks.cn.records import JudgmentRecord, parse_record, read_dump, record_from_dict
from caseforge.tasks.cn.sections import SECTIONS

pytestmark = pytest.mark.samples
SOURCE = "cn"

# (sample file under samples/cn, record index) -> why it was picked; "DEFECT" marks what review found wrong.
PICKS = {
    ("judge_criminal.jsonl", 2):
        "criminal, first instance, simplified procedure (简易程序) with a prior conviction in the parties. "
        "DEFECT cause '有诈骗罪' (from '犯有诈骗罪'; the crime is 诈骗罪). DEFECT the evidence paragraph "
        "'上述事实，被告人许某某在开庭审理过程中无异议，且表示认罪。并有…等证据证实，足以认定。' stays in claims "
        "(evidence None): its evidence words are in the second sentence.",
    ("judge_criminal.jsonl", 22):
        "criminal, second instance (刑终), several crimes in the cause, appeal partly allowed. "
        "DEFECT the first-instance findings '原审认定：…' are labelled claims, and the first-instance reasoning "
        "and judgment '原审认为…判决：…' together with the appellant's grounds '上诉人王杰文上诉称：…应宣告其无罪。' "
        "are labelled evidence.",
    ("judge_criminal.jsonl", 49):
        "criminal, first instance, fast-track procedure (速裁), defence counsel; a clean parse.",
    ("judge_criminal.jsonl", 59):
        "criminal retrial (刑再) of the court's own judgment. DEFECT cause None although the parties say "
        "'涉嫌犯贩卖毒品罪' and the judgment '犯贩卖毒品罪' (only the procedure record, '贩卖毒品一案', is searched). "
        "The original judgment and both sides' retrial positions all fall in claims.",
    ("caseformer_criminal.jsonl", 13):
        "CaseFormer's glued text, ten defendants, long findings and evidence. The signing date "
        "'二0一八年十二月十六日' has an ASCII 0 among the Chinese numerals: read as 2018-12-16 (was None, fixed).",
    ("caseformer_criminal.jsonl", 17):
        "CaseFormer, fast-track drunk driving, shortest kind of judgment. DEFECT the defendant's admission "
        "'被告人刘继对上述事实、证据均无异议，并自愿认罪认罚' is labelled evidence (the document lists no evidence).",
    ("caseformer_criminal.jsonl", 20):
        "CaseFormer, no party paragraph, findings after the evidence. DEFECT cause '掩饰、隐瞒犯罪' cut at the first "
        "罪 of 掩饰、隐瞒犯罪所得罪.",
    ("cail2020_civil_fulltext.jsonl", 3):
        "civil, first instance, simplified procedure, all ten sections present; a clean parse.",
    ("cail2020_civil_fulltext.jsonl", 6):
        "civil inheritance case with evidence items and addenda (另查明). DEFECT the defendants' oral defence "
        "'被告龙某2、龙某3、龙某4口头答辩，…' stays in claims (defense None). DEFECT the findings "
        "'根据当事人陈述和经审查确认的证据，本院认定事实如下：…另查明…' fall in reasoning (facts None) because "
        "reasoning already began at the court's view of the evidence '本院认为，原告提供的证据6、7…'. "
        "The dump's '&divide;' entity is kept as is.",
    ("cail2020_civil_fulltext.jsonl", 10):
        "civil, element-style judgment (本案查明的事实如下 with the claims and the court's view per item): "
        "genuinely without claims, defense, evidence and reasoning sections, so complete is False.",
    ("casegen_reference_sections.jsonl", 0):
        "CaseGen sections only (fact, reasoning, judgement): no header, so no case metadata; a clean parse.",
    ("casegen_reference_sections.jsonl", 10):
        "CaseGen, a civil trademark case. DEFECT case_type '行政' taken from '国家工商行政管理总局' in the facts.",
    ("casegen_reference_sections.jsonl", 60):
        "CaseGen, a civil loan case citing another judgment. DEFECT case_no, case_year, court_code, case_kind, "
        "procedure 二审 and doc_type come from the judgment cited in the facts ('另据河南省南阳市中级人民法院"
        "（2018）豫13民终2004号民事判决书'), court is '另据河南省南阳市中级人民法院'. DEFECT the court's analysis "
        "'根据原、被告的举证、质证和诉辩意见，本院归纳本案的争议焦点为：… 关于第1个焦点，本院认为：…' stays in facts.",
    ("casegen_reference_sections.jsonl", 92):
        "CaseGen, a civil securities misrepresentation claim built on a criminal judgment. DEFECT case_no "
        "'（2012）昆刑一初字第73号' is the cited criminal judgment's, so case_type is 刑事 and case_kind '刑一初'.",
    ("cail2021_civil_sections.jsonl", 0):
        "CAIL2021 claims/defense/analysis sections only; a clean parse.",
    ("cail2021_civil_sections.jsonl", 17):
        "CAIL2021, several defendants. DEFECT case_type '执行' taken from '至案件执行完毕止' in the claims.",
    ("cail2021_civil_sections.jsonl", 20):
        "CAIL2021. DEFECT case_no '（2012）第2012000049号' (case_year 2012) is the forest-right certificate "
        "'江林证字（2012）第2012000049号' quoted in the claims.",
    ("cail2021_civil_sections.jsonl", 37):
        "CAIL2021 whose analysis opens with the issues. DEFECT '本案的争议焦点有：…关于第一个争议焦点，本院认为：…' "
        "is labelled defense and reasoning is None (gold agreement: reasoning 0.0).",
    ("wenshu_raw/new_api_docInfoSearch.json", 0):
        "the current China Judgments Online API (s-codes, HTML qwContent): a civil ruling on a withdrawal, "
        "site sections kept as gold; a clean parse.",
    ("wenshu_raw/old_api_content.xhr.txt", 0):
        "the old API's content script (anchored HTML): a Supreme People's Court death-penalty review ruling "
        "(复核) without a case number. DEFECT facts hold only finding 一; findings 二 to 十一 ('二、关于故意杀人"
        "事实' …) are labelled evidence because each follows an evidence paragraph without a findings marker.",
}


@lru_cache(maxsize=None)
def _dump(path: str) -> tuple:
    return tuple(read_dump(Path(path).name, Path(path).read_bytes()))


def parsed_record(samples_dir: Path, name: str, index: int) -> dict:
    """parse_record's row for one record, its JSON-string columns decoded."""
    item = _dump(str(samples_dir / "cn" / name))[index]
    row = parse_record(item if isinstance(item, JudgmentRecord) else record_from_dict(item))
    for column in ("gold_sections", "gold_agreement"):
        row[column] = json.loads(row[column]) if row[column] else None
    return row


def example_name(name: str, index: int) -> str:
    stem = name.replace("/", ".").rsplit(".", 1)[0]
    return stem if name.startswith("wenshu_raw/") else f"{stem}.{index:03d}"


EXAMPLES = {example_name(name, index): partial(parsed_record, name=name, index=index) for name, index in PICKS}


@pytest.mark.parametrize("example", EXAMPLES)
def test_matches_reviewed_golden_row(samples_dir, example):
    row = assert_golden(SOURCE, example, EXAMPLES[example], samples_dir)
    assert set(SECTIONS) <= set(row) and row["full_text"]


def test_every_sample_file_has_picks(samples_dir):
    files = {p.relative_to(samples_dir / "cn").as_posix() for p in (samples_dir / "cn").rglob("*") if p.is_file()}
    assert files == {name for name, _ in PICKS}


def test_picks_cover_civil_and_criminal_first_and_second_instance_and_missing_sections(samples_dir):
    rows = [parsed_record(samples_dir, name, index) for name, index in PICKS]
    assert {"刑事", "民事"} <= {r["case_type"] for r in rows}
    assert {"一审", "二审", "再审"} <= {r["procedure"] for r in rows}
    assert any(not r["complete"] and r["header"] for r in rows)          # a full text with sections missing
