"""Case numbers (案号) and Chinese dates."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

CASE_NO = re.compile(r"[（(〔\[]\s*((?:19|20)\d{2})\s*[）)〕\]]\s*([^\s，。、；：:（(]{1,30}?号)")
_INNER = re.compile(
    r"^(?P<court>.*?)(?P<kind>[民刑行执赔知商司国委破][\u4e00-\u9fff]{0,3}?)字?第?(?P<seq>\d+)号$")

_DIGITS = {"〇": 0, "○": 0, "零": 0, "Ｏ": 0, "O": 0, "0": 0, "０": 0, "o": 0, "一": 1, "二": 2, "三": 3, "四": 4,
           "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
# the year's zero is written 〇, ○, 零, or (typed) Ｏ, O, 0, ０: '二0一八年十二月十六日' is a real signing date
CN_DATE = re.compile(r"([〇○零ＯO0０o一二三四五六七八九]{4})年([一二三四五六七八九十]{1,3})月([一二三四五六七八九十]{1,3})日")
ARABIC_DATE = re.compile(r"((?:19|20)\d{2})[-年./](\d{1,2})[-月./](\d{1,2})")

KIND_PROCEDURE = {"初": "一审", "终": "二审", "再": "再审", "申": "再审审查", "监": "审判监督",
                  "复": "复核", "特": "特别程序", "督": "督促程序", "执": "执行"}
KIND_CASE_TYPE = {"民": "民事", "刑": "刑事", "行": "行政", "执": "执行", "赔": "国家赔偿",
                  "知": "民事", "商": "民事", "司": "司法救助", "国": "国家赔偿", "委": "国家赔偿", "破": "民事"}


@dataclass(frozen=True)
class CaseNumber:
    text: str
    year: int
    court_code: str | None
    kind: str | None
    seq: int | None


def parse_case_number(text: str | None) -> CaseNumber | None:
    """'（2017）沪0120刑初684号' -> year 2017, court code '沪0120', kind '刑初', seq 684."""
    if not text:
        return None
    match = CASE_NO.search(text)
    if not match:
        return None
    year, inner = int(match.group(1)), match.group(2)
    parts = _INNER.match(inner)
    full = match.group(0)
    if not parts:
        return CaseNumber(full, year, None, None, None)
    return CaseNumber(full, year, parts.group("court") or None, parts.group("kind"), int(parts.group("seq")))


def procedure_from_kind(kind: str | None) -> str | None:
    if not kind:
        return None
    for char in kind[1:]:
        if char in KIND_PROCEDURE:
            return KIND_PROCEDURE[char]
    return None


def case_type_from_kind(kind: str | None) -> str | None:
    return KIND_CASE_TYPE.get(kind[0]) if kind else None


def _cn_number(text: str) -> int:
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)
    return _DIGITS[text]


def parse_cn_date(text: str | None) -> dt.date | None:
    """'二〇一七年六月二十八日' or '2017-06-28' -> date; None when absent or impossible."""
    if not text:
        return None
    match = CN_DATE.search(text)
    try:
        if match:
            year = int("".join(str(_DIGITS[c]) for c in match.group(1)))
            return dt.date(year, _cn_number(match.group(2)), _cn_number(match.group(3)))
        match = ARABIC_DATE.search(text)
        if match:
            return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except (KeyError, ValueError):
        return None
    return None


def last_cn_date(text: str | None) -> dt.date | None:
    """The last Chinese-numeral date in a text (the signing date in a judgment's tail)."""
    if not text:
        return None
    matches = list(CN_DATE.finditer(text))
    return parse_cn_date(matches[-1].group(0)) if matches else None
