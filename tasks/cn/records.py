"""Judgment records from bulk dumps (JSONL/JSON/CSV) and the site's own formats, parsed into rows.

Accepted field names: generic (doc_id + full_text), the site's s-codes (s1 案件名称, s2 法院,
s5 文书ID, s6 文书类型, s7 案号, s8 案件类型, s9 审判程序, s11 案由, s22–s28 sections,
s31 裁判日期, qwContent HTML full text), the old API's content script (HTML with anchors
WBSB…WBWB), and the research dumps in the samples: JuDGE (text_id, fd, text = gold fact part),
CaseFormer (id, content + claim/fact/reason/result), CAIL2020 (id, sentence lists), CAIL2021
(文书ID + 诉称段/辩称段/裁判分析过程段, sections only), CaseGen references (fact/reasoning/judgement).
"""
from __future__ import annotations

import codecs
import hashlib
import json
import re
from dataclasses import dataclass, field

from caseforge.archive import ParseBudget, size_problem
from caseforge.text import csv_records
from caseforge.tasks.cn.text import similarity
from caseforge.tasks.cn.casenumber import (case_type_from_kind, last_cn_date, parse_case_number,
                                           parse_cn_date, procedure_from_kind)
from caseforge.tasks.cn.sections import SECTIONS, parse_sections
from caseforge.tasks.cn.text import DecodeError, decode_bytes, normalise_text

DOC_TYPE_CODES = {"01": "判决书", "02": "裁定书", "03": "调解书", "04": "决定书", "05": "通知书"}
DOC_TYPES = ("判决书", "裁定书", "调解书", "决定书", "通知书", "支付令")
CASE_TYPES = ("民事", "刑事", "行政", "执行", "国家赔偿")
PROCEDURES = ("一审", "二审", "再审审查", "再审", "复核", "审判监督", "特别程序", "执行")
GOLD_FIELDS = {  # dump field -> our section
    "s22": "header", "s23": "procedure_record", "s25": "facts", "s26": "reasoning", "s27": "judgment",
    "s28": "tail", "诉称段": "claims", "辩称段": "defense", "裁判分析过程段": "reasoning",
}
# CaseFormer's fields as the section accuracy bench maps them (tasks/cn/accuracy.py)
CASEFORMER_GOLD = {"claim": "claims", "fact": "findings_part", "reason": "reasoning", "result": "judgment_items"}
# gold names that are spans derived from the sections (ParsedJudgment properties), not sections
DERIVED_SPANS = ("fact_part", "findings_part", "judgment_items", "judgment_to_end")
OLD_API_ANCHORS = {"WBSB": "header", "DSRXX": "parties", "SSJL": "procedure_record",
                   "AJJBQK": "fact_part", "CPYZ": "reasoning", "PJJG": "judgment", "WBWB": "tail"}
_ANCHOR = re.compile(r"<a type='dir' name='(\w+)'></a>")
_OLD_HTML = re.compile(r'var jsonHtmlData = "(.*?)";\s*\n', re.S)
_OLD_CASEINFO = re.compile(r"JSON\.stringify\((\{.*?\})\);")
SIMPLIFIED = (("小额诉讼", "小额诉讼"), ("速裁", "速裁"), ("简易程序", "简易程序"))
_NOT_SIMPLIFIED = re.compile(r"转(?:为|入|换为)?普通程序")
_CRIME = re.compile(r"犯([\u4e00-\u9fff、]{2,30}?罪)")
_DISPUTE = re.compile(r"([\u4e00-\u9fff、]{2,14}?纠纷)")
# common causes (案由) without 纠纷, longest first, to cut party names off "许胡生租赁合同纠纷"
CAUSE_STEMS = sorted((
    "民间借贷", "借款合同", "金融借款合同", "买卖合同", "租赁合同", "房屋租赁合同", "房屋买卖合同", "商品房买卖合同",
    "侵权责任", "机动车交通事故责任", "劳动争议", "离婚", "建设工程施工合同", "物业服务合同", "保证合同", "追偿权",
    "不当得利", "提供劳务者受害责任", "继承", "服务合同", "承揽合同", "运输合同", "股权转让", "信用卡",
    "合伙协议", "土地承包经营权", "生命权、健康权、身体权", "名誉权", "委托合同", "债权转让", "装饰装修合同",
    "产品责任", "医疗损害责任", "劳务合同", "劳动合同", "财产损害赔偿", "排除妨害", "确认合同效力", "同居关系",
    "赡养", "抚养", "分家析产", "所有权确认", "保险合同", "财产保险合同", "人身保险合同", "定作合同", "借用合同",
    "居间合同", "融资租赁合同", "储蓄存款合同", "网络服务合同", "电信服务合同", "建设工程合同", "民间委托理财合同"),
    key=len, reverse=True)


def _cause_from(text: str | None) -> str | None:
    match = _DISPUTE.search(text or "")
    if not match:
        return None
    found = match.group(1)
    for stem in CAUSE_STEMS:
        if found.endswith(stem + "纠纷"):
            return stem + "纠纷"
    return found.rsplit("、", 1)[-1]


class RecordError(ValueError):
    """A record without an id or without any text to parse."""


@dataclass
class JudgmentRecord:
    doc_id: str
    full_text: str
    meta: dict = field(default_factory=dict)
    gold: dict = field(default_factory=dict)
    source_format: str = "generic"


def _kind(value) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def _text(record: dict, key: str) -> str | None:
    """A text field: a string or nothing; RecordError naming the field for anything else (a list, a number)."""
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise RecordError(f"field {key} is {_kind(value)}, not text")


def _ident(record: dict, key: str) -> str | None:
    """An id or code: a string or a whole number (CaseGen's ids are numbers)."""
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise RecordError(f"field {key} is {_kind(value)}, not an id")


def _texts(record: dict, key: str) -> str | None:
    """A text or a list of texts (the new API's s11 causes), joined with '、'."""
    value = record.get(key)
    if isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise RecordError(f"field {key} holds {_kind(item)}, not text")
        return "、".join(value)
    return _text(record, key)


def _first(record: dict, *names: str, ident: bool = False):
    for name in names:
        value = _ident(record, name) if ident else _text(record, name)
        if value not in (None, ""):
            return value
    return None


def _sentences(record: dict) -> str:
    pieces = []
    for i, sentence in enumerate(record["text"]):
        if isinstance(sentence, dict):
            sentence = _text(sentence, "sentence") if "sentence" in sentence else ""
        if not isinstance(sentence, str):
            raise RecordError(f"field text[{i}] is {_kind(sentence)}, not a sentence")
        pieces.append(sentence or "")
    return "\n".join(pieces)


def record_from_dict(record: dict) -> JudgmentRecord:
    """Recognise a dump row's format and pull out id, full text, metadata and any gold sections.

    RecordError when it is not a record: no full text, or a field of a type no real dump has (a list for a
    text, an object for an id), named in the message."""
    if not isinstance(record, dict):
        raise RecordError(f"row is {_kind(record)}, not a record")
    if "qwContent" in record or "s5" in record:
        fmt = "wenshu_api"
        sections = {k: _text(record, k) for k in ("s22", "s23", "s25", "s26", "s27", "s28")}
        text = _text(record, "qwContent") or "\n".join(v for v in sections.values() if v)
        doc_id = _ident(record, "s5")
        gold = {GOLD_FIELDS[k]: v for k, v in sections.items() if v}
        meta = {"case_name": _text(record, "s1"), "court": _text(record, "s2"), "case_no": _text(record, "s7"),
                "doc_type": DOC_TYPE_CODES.get(_ident(record, "s6") or ""), "case_type": _text(record, "s8"),
                "procedure": _text(record, "s9"), "judgment_date": _text(record, "s31"), "cause": _texts(record, "s11")}
    elif "fd" in record:
        fmt, text, doc_id = "judge", _text(record, "fd"), _ident(record, "text_id")
        fact_part = _text(record, "text")
        gold = {"fact_part": fact_part} if fact_part else {}
        meta = {"cited_articles": record.get("la")}
    elif "content" in record:
        fmt, text, doc_id = "caseformer", _text(record, "content"), _ident(record, "id")
        gold = {name: _text(record, k) for k, name in CASEFORMER_GOLD.items()}
        meta = {"doc_type": _text(record, "type"), "case_no": doc_id, "program": _text(record, "program")}
    elif isinstance(record.get("text"), list):
        fmt, doc_id = "cail2020", _ident(record, "id")
        text = _sentences(record)
        gold, meta = {}, {"summary": _text(record, "summary")}
    elif "诉称段" in record or "文书ID" in record:
        fmt, doc_id = "cail2021", _ident(record, "文书ID")
        sections = {k: _text(record, k) for k in ("诉称段", "辩称段", "裁判分析过程段")}
        text = "\n".join(v or "" for v in sections.values())
        gold = {GOLD_FIELDS[k]: v for k, v in sections.items() if v}
        meta = {"sections_only": True}
    elif "judgement" in record and "fact" in record:
        fmt = "casegen"
        doc_id = f"casegen-{_ident(record, 'id')}"
        sections = {k: _text(record, k) for k in ("fact", "reasoning", "judgement")}
        text = "\n".join(v or "" for v in sections.values())
        gold = {"facts": sections["fact"], "reasoning": sections["reasoning"], "judgment_to_end": sections["judgement"]}
        meta = {"sections_only": True}
    else:
        fmt = "generic"
        text = _first(record, "full_text", "fullText", "qw", "text", "content", "全文")
        doc_id = _first(record, "doc_id", "docId", "id", "文书ID", ident=True)
        gold = {name: _text(record, f"gold_{name}") for name in SECTIONS}
        meta = {k: _text(record, k) for k in ("case_name", "court", "case_no", "doc_type", "case_type",
                                               "procedure", "judgment_date", "cause")}
    if not text or not text.strip():
        raise RecordError(f"{fmt} record {doc_id or '?'} has no full text")
    if doc_id in (None, ""):
        doc_id = "sha1-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]
    return JudgmentRecord(str(doc_id), text, {k: v for k, v in meta.items() if v not in (None, "")},
                          {k: v for k, v in gold.items() if v}, fmt)


def parse_old_api(body: str) -> JudgmentRecord:
    """The old API's content script: caseinfo JSON + HTML whose anchors mark the sections.
    RecordError for a script this cannot read (no jsonHtmlData, broken JSON or escapes, no Html)."""
    try:
        return _parse_old_api(body)
    except RecordError:
        raise
    except Exception as exc:  # noqa: BLE001 - json, unicode_escape and lookups fail in many ways on a broken script
        raise RecordError(f"old API content script unreadable: {type(exc).__name__}: {exc}") from None


def _parse_old_api(body: str) -> JudgmentRecord:
    html_match = _OLD_HTML.search(body)
    if not html_match:
        raise RecordError("old API content without jsonHtmlData")
    payload = json.loads(html_match.group(1).encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
                         if "\\u" in html_match.group(1) else json.loads(f'"{html_match.group(1)}"'))
    if not isinstance(payload, dict) or not isinstance(payload.get("Html"), str):
        raise RecordError("old API content: jsonHtmlData holds no Html")
    html = payload["Html"].replace("01lydyh01", "'")
    info_match = _OLD_CASEINFO.search(body)
    info = json.loads(info_match.group(1)) if info_match else {}
    if not isinstance(info, dict):
        raise RecordError("old API content: caseinfo is not an object")
    pieces = _ANCHOR.split(html)
    gold: dict[str, str] = {}
    for name, chunk in zip(pieces[1::2], pieces[2::2]):
        section = OLD_API_ANCHORS.get(name)
        text = normalise_text(chunk)
        if section and text:
            gold[section] = (gold.get(section, "") + "\n" + text).strip()
    doc_id = _ident(info, "文书ID") or hashlib.sha1(html.encode("utf-8")).hexdigest()[:20]
    title = payload.get("Title")
    meta = {"case_name": _text(info, "案件名称") or (title if isinstance(title, str) else None),
            "court": _text(info, "法院名称"),
            "case_no": None if info.get("案号") in (None, "无") else _text(info, "案号"),
            "judgment_date": _text(info, "裁判日期")}
    return JudgmentRecord(str(doc_id), html, {k: v for k, v in meta.items() if v}, gold, "wenshu_old_api")


class DumpError(RecordError):
    """A dump file that cannot be read at all (not text, not JSON, a broken old API script)."""


def _json_loads(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:           # a number of more than 4,300 digits
        raise DumpError(f"not JSON ({exc})") from None
    except RecursionError:
        raise DumpError("not JSON (nested too deeply to read)") from None


_ESCAPED = re.compile("[\udc80-\udcff]")      # bytes the file's encoding could not read (surrogateescape)


def _decode_dump(raw: bytes) -> tuple[str, str]:
    """(text, encoding) of a dump: UTF-16 with a BOM, UTF-8 (BOM or not), else UTF-8 or GB18030, whichever most of
    its non-ASCII lines are. Bytes that are not in that encoding stay as surrogate escapes, so the one line or
    record holding them is refused and the rest is read (a strict decode lost the whole file)."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return decode_bytes(raw), "utf-16"
        except (DecodeError, UnicodeDecodeError) as exc:
            raise DumpError(f"not text: {exc}") from None
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    utf8 = other = 0
    for line in raw.split(b"\n"):
        if line.isascii():
            continue
        try:
            line.decode("utf-8")
            utf8 += 1
        except UnicodeDecodeError:
            other += 1
    encoding = "utf-8" if utf8 > other else "gb18030"
    return raw.decode(encoding, errors="surrogateescape"), encoding


def _not_in(encoding: str, text: str) -> str:
    at = _ESCAPED.search(text).start()
    return f"bytes that are not {encoding.upper()} (at character {at})"


def read_dump_rows(name: str, raw: bytes) -> tuple[list[tuple[str, dict | JudgmentRecord]], list[tuple[str, str]]]:
    """Rows of one dump file, each with where it is ("line 10" in JSONL and CSV, "record 3" in a JSON array,
    "document" for an old API script), and one (where, reason) problem per row that cannot be read: a JSONL
    line that is not JSON or not an object, bytes not in the file's encoding, a CSV row with the wrong field
    count, a row over the cn record size limit. One broken row never loses the others. DumpError when the file
    as a whole cannot be read (not JSON as a whole, a broken old API script)."""
    lower = name.lower()
    text, encoding = _decode_dump(raw)
    too_big = lambda size: size_problem("cn", "record", size)  # noqa: E731
    rows: list[tuple[str, dict | JudgmentRecord]] = []
    problems: list[tuple[str, str]] = []
    if "jsonHtmlData" in text[:200_000] and not lower.endswith(".csv"):
        if _ESCAPED.search(text):
            raise DumpError(f"old API content script: {_not_in(encoding, text)}")
        return [("document", parse_old_api(text))], []
    if lower.endswith(".csv"):
        try:
            records, csv_problems = csv_records(text.encode("utf-8", "surrogateescape"), set(), name, too_big)
        except ValueError as exc:
            raise DumpError(str(exc)) from None
        rows = [(f"line {number}", record) for number, record in records]
        return rows, [tuple(p.replace("not UTF-8", f"not {encoding.upper()}").split(": ", 1)) for p in csv_problems]
    stripped = text.lstrip()
    data = None
    if lower.endswith(".json"):
        data = _json_loads(stripped)
    elif stripped.startswith("["):                 # a JSON array under another name; else JSONL below
        try:
            data = _json_loads(stripped)
        except DumpError:
            data = None
    if data is not None:
        if isinstance(data, dict):
            data = data.get("result") or data.get("data") or [data]
            data = data if isinstance(data, list) else [data]
        if not isinstance(data, list):
            raise DumpError(f"a JSON {_kind(data)}, not records")
        for index, value in enumerate(data, start=1):
            where = f"record {index}"
            dumped = json.dumps(value, ensure_ascii=False, default=str)
            problem = too_big(len(dumped.encode("utf-8", "surrogateescape")))
            if problem is None and _ESCAPED.search(dumped):
                problem = _not_in(encoding, dumped)
            if problem is None and not isinstance(value, dict):
                problem = f"{_kind(value)}, not a record object"
            if problem is None:
                rows.append((where, value))
            else:
                problems.append((where, problem))
        return rows, problems
    for number, line in enumerate(text.split("\n"), start=1):          # JSONL, and any other name
        if not line.strip():
            continue
        where = f"line {number}"
        problem = too_big(len(line.encode(encoding if encoding != "utf-16" else "utf-8", "surrogateescape")))
        if problem is None and _ESCAPED.search(line):
            problem = _not_in(encoding, line)
        if problem is None:
            try:
                value = _json_loads(line)
            except DumpError as exc:
                problem = str(exc)
            else:
                if isinstance(value, dict):
                    rows.append((where, value))
                    continue
                problem = f"{_kind(value)}, not a record object"
        problems.append((where, problem))
    return rows, problems


def read_dump(name: str, raw: bytes) -> list[dict | JudgmentRecord]:
    """Rows of one dump file (any supported encoding): dicts for JSON/JSONL/CSV, a record for old API scripts.
    Strict: DumpError naming the first row that cannot be read (read_dump_rows reads past it)."""
    rows, problems = read_dump_rows(name, raw)
    if problems:
        where, reason = problems[0]
        raise DumpError(f"{name} {where}: {reason}")
    return [row for _, row in rows]


def _pick(options: tuple[str, ...], *texts: str | None) -> str | None:
    for text in texts:
        if text:
            for option in options:
                if option in text:
                    return option
    return None


def parse_record(record: JudgmentRecord, budget: ParseBudget | None = None) -> dict:
    """One curated.cn_judgments row (a pure function). LimitExceeded when the record takes longer than its
    parse-time `budget` (by default the cn record budget, started now), checked between the stages."""
    budget = budget or ParseBudget("cn", "record")
    text = normalise_text(record.full_text)
    budget.check("normalising its text")
    parsed = parse_sections(text)
    budget.check("finding its sections")
    sec = parsed.sections
    meta = record.meta
    header = sec["header"] or text[:200]
    number = parse_case_number(meta.get("case_no")) or parse_case_number(header)
    kind = number.kind if number else None
    procedure_text = sec["procedure_record"] or ""
    simplified = None
    if not _NOT_SIMPLIFIED.search(procedure_text):
        simplified = next((label for key, label in SIMPLIFIED if key in procedure_text), None)
    case_type = _pick(CASE_TYPES, meta.get("case_type"), header, meta.get("program"), meta.get("case_name")) \
        or case_type_from_kind(kind)
    cause = meta.get("cause")
    if not cause:
        crime = _CRIME.search(procedure_text or text[:1500])
        dispute = _cause_from(meta.get("case_name")) or _cause_from(procedure_text)
        cause = crime.group(1) if case_type == "刑事" and crime else dispute
    date = parse_cn_date(str(meta["judgment_date"])) if meta.get("judgment_date") else last_cn_date(sec["tail"])
    doc_type = _pick(DOC_TYPES, meta.get("doc_type"), header, meta.get("case_name"))
    # a ruling (裁定书, e.g. on a withdrawal) may lack claims and findings; a judgment may not
    body_ok = bool(sec["claims"] or sec["facts"] or sec["evidence"]) or doc_type in ("裁定书", "决定书")
    complete = bool(sec["header"] and (sec["parties"] or sec["procedure_record"]) and body_ok
                    and sec["reasoning"] and sec["judgment"] and sec["tail"])
    agreement = {}
    for name, gold_text in record.gold.items():
        found = getattr(parsed, name) if name in DERIVED_SPANS else sec.get(name)
        agreement[name] = round(similarity(found, gold_text), 4)
        budget.check(f"comparing its gold {name}")
    court = meta.get("court")
    if not court:
        match = re.search(r"[\u4e00-\u9fff]{2,30}?法院", header)
        court = match.group(0).rsplit("书", 1)[-1] if match else None
    return {
        "doc_id": record.doc_id, "source_format": record.source_format,
        "case_name": meta.get("case_name"), "case_no": number.text if number else meta.get("case_no"),
        "case_year": number.year if number else None, "court_code": number.court_code if number else None,
        "case_kind": kind, "case_seq": number.seq if number else None, "court": court,
        "judgment_date": date, "doc_type": doc_type,
        "case_type": case_type,
        "procedure": _pick(PROCEDURES, meta.get("procedure"), meta.get("program"), meta.get("case_name"))
        or procedure_from_kind(kind),
        "simplified": simplified, "cause": cause,
        **{name: sec[name] for name in SECTIONS},
        "full_text": text, "complete": complete,
        "gold_sections": json.dumps(record.gold, ensure_ascii=False) if record.gold else None,
        "gold_agreement": json.dumps(agreement, ensure_ascii=False) if agreement else None,
    }
