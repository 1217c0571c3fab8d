"""Encodings, normalisation, case numbers and dates for Chinese judgments."""
import codecs
import datetime as dt
import json
from pathlib import Path

import pytest

from caseforge.tasks.cn.casenumber import parse_case_number, parse_cn_date
from caseforge.tasks.cn.records import parse_record, read_dump, record_from_dict, RecordError
from caseforge.tasks.cn.text import DecodeError, decode_bytes, normalise_text

DOC = (Path(__file__).resolve().parent.parent / "fixtures" / "cn_civil_judgment.txt").read_text(encoding="utf-8").strip()



def test_gbk_and_gb18030_are_detected():
    assert decode_bytes(DOC.encode("gbk")) == DOC
    assert decode_bytes(DOC.encode("gb18030")) == DOC


def test_utf8_with_and_without_bom():
    assert decode_bytes(codecs.BOM_UTF8 + DOC.encode("utf-8")) == DOC
    assert decode_bytes(DOC.encode("utf-8")) == DOC


def test_undecodable_bytes_raise_a_clear_error():
    with pytest.raises(DecodeError):
        decode_bytes(b"\x81\x20\xff\xff\xfe")


def test_full_width_spaced_titles_are_joined():
    text = normalise_text(DOC)
    assert "民事判决书" in text and "审判员王五" in text and "书记员赵六" in text


def test_html_full_text_is_stripped():
    assert normalise_text("<div>本院认为，</div><div>审　判　长　李晓光</div>") == "本院认为，\n审判长李晓光"


def test_gbk_jsonl_dump_parses_into_a_complete_row():
    raw = (json.dumps({"doc_id": "d1", "full_text": DOC}, ensure_ascii=False) + "\n").encode("gbk")
    [record] = read_dump("dump.jsonl", raw)
    row = parse_record(record_from_dict(record))
    assert row["doc_id"] == "d1" and row["complete"] is True
    assert row["simplified"] == "简易程序" and row["cause"] == "民间借贷纠纷"
    assert row["claims"].startswith("张三向本院提出诉讼请求") and row["defense"] == "李四辩称：借款已经归还。"
    assert row["judgment"].startswith("依照《中华人民共和国合同法》") and row["judgment_date"] == dt.date(2019, 3, 5)


def test_csv_dump_with_bom():
    raw = codecs.BOM_UTF8 + "doc_id,full_text\nd2,\"本院认为，应予支持。\"\n".encode("utf-8")
    [record] = read_dump("dump.csv", raw)
    assert record_from_dict(record).doc_id == "d2"


def test_record_without_text_is_rejected():
    with pytest.raises(RecordError):
        record_from_dict({"doc_id": "x", "full_text": ""})


def test_case_numbers_and_dates():
    old = parse_case_number("（2015）镇坦民初字第29号")
    assert (old.year, old.court_code, old.kind, old.seq) == (2015, "镇坦", "民初", 29)
    new = parse_case_number("(2020)最高法民再12号")
    assert (new.court_code, new.kind, new.seq) == ("最高法", "民再", 12)
    assert parse_cn_date("二〇一七年十二月三十一日") == dt.date(2017, 12, 31)
    assert parse_cn_date("二〇一七年二月三十一日") is None
