"""Pure section parser for Chinese court judgments (裁判文书).

The text is cut into units (sentences and paragraphs, plus cuts at markers that glued texts
lack, e.g. "审理终结" or "判决如下"), and a forward-only state machine labels every unit with
one of SECTIONS. Claims, defense, evidence and facts may alternate (several defendants,
evidence after the findings, 另查明 addenda); reasoning, judgment and tail come once, in order.
Reasoning runs from 本院认为 to the court's statement of legal basis; that sentence
(依照/依据/根据《…》…之规定) and the operative items after 判决如下 form the judgment.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from caseforge.tasks.cn.casenumber import CASE_NO

SECTIONS = ("header", "parties", "procedure_record", "claims", "defense", "evidence", "facts",
            "reasoning", "judgment", "tail")
# findings shorter than this ("经审理查明的事实与公诉机关的指控相一致") point back to the accusation
SHORT_FINDINGS = 50
SAME_AS_ACCUSATION = re.compile(r"^[^。]{0,30}(?:与|同)[^。]{0,20}(?:指控|起诉书?)[^。]{0,10}(?:一致|相同|相符)")
BODY = ("claims", "defense", "evidence", "facts")

_SENTENCE_END = re.compile(r"[。！？!?][”’」』）)]*|\n")
_CUT_AFTER = re.compile(r"(?:审理终结|审理完毕|复核终结|审查终结)(?=[^。，,；\n])"
                        r"|(?:判决|裁定|决定|调解)如下[：:]?(?=[^\n])"
                        r"|达成(?:如下|以下)(?:调解)?协议[：:]?(?=[^\n])")
_CUT_BEFORE_TAIL = re.compile(r"如不服本(?:判决|裁定)|本(?:判决|裁定)为终审")
_CUT_BEFORE_SECTION = re.compile(r"本院认为|经审理查明|本院查明|经审理认定")
_NO_CUT_AFTER_TAIL = "\n。"
_NO_CUT_AFTER_SECTION = "\n。，,；;：:、（(“\"本院"
_HEADER_LINE = re.compile(r"法院|(?:判决|裁定|调解|决定)书|案号")
_LEAD = re.compile(r"[\s：:，,。；;、）)]+")

_PARTY = r"(?:原告|被告|被告人|上诉人|被上诉人|申请人|被申请人|再审申请人|申诉人|原审|第三人|公诉机关|自诉人|罪犯|辩护人|赔偿请求人|起诉人)"
PROCEDURE_START = re.compile(
    r"一案|提起公诉|提起上诉|提出上诉|申请再审|本院在审理|本院于\d|向本院提起|向本院起诉|立案受理|提请(?:本院)?(?:核准|裁定|减刑|假释)")
PROCEDURE_END = re.compile(r"(?:审理终结|审理完毕|复核终结|审查终结)[。]?$")
FACTS_START = re.compile(
    r"^[^。]{0,60}?(?:审理查明|审查查明|本院查明|经查明|二审查明|再审查明|本院认定(?:的)?事实如下|认定(?:本案|案件)?事实如下|查明(?:本案|案件)?(?:的)?事实如下|审理认定)"
    r"|^(?:另|再|又|还|同时|此外，?)查明|^经复核确认"
    r"|^(?:一审|原审)(?:法院)?(?:审理)?(?:查明|认定事实)"
    r"|^本院对(?:当事人|双方)?(?:无争议|没有争议)的事实"
    r"|^[^。]{0,40}?(?:确认|认定|查明|确定)[^。，,]{0,8}(?:如下|以下)[^。，,]{0,8}事实"
    r"|^[^。]{0,40}?(?:确认|认定|查明|确定)[^。，,]{0,10}事实(?:为|如下)"
    r"|^[^。]{0,40}?据此查明")
REASONING_START = re.compile(
    r"^(?:(?:综上所述|综上|据此|经审查|经审理)[，,]?)?本院(?:经审查|经审理|审查|再审|二审|经审查后)?认为")
EVIDENCE_START = re.compile(
    r"^(?:上述|以上|认定上述|认定以上|认定上列|上列)(?:事实|犯罪事实|案件事实|指控事实)[^。]{0,300}?(?:证据|证实|为证|佐证|在案|属实)"
    r"|^[^。]{0,40}?围绕[^。]{0,20}(?:提交|提供)了?[^。]{0,40}证据"
    r"|^[^。]{0,20}对[^。]{0,40}证据[^。]{0,40}(?:无异议|有异议|没有异议|认可|真实性|质证)"
    r"|^本院组织[^。]{0,20}(?:证据交换|质证)|^(?:原告|被告|公诉机关)[^。]{0,40}为(?:证明|支持)[^。]{0,60}(?:提交|提供|出示)"
    r"|^(?:证据|下列证据|经庭审举证)[^。]{0,20}(?:如下|有)[：:]|^(?:上述|以上)证据"
    r"|^[^。]{0,40}?(?:上述|以上|前述)(?:犯罪)?事实[^。]{0,200}?(?:下列|如下|以下)[^。]{0,20}证据"
    r"|^[^。]{0,20}(?:证据|证明)(?:如下|有)[：:]"
    r"|^[^。]{0,10}(?:经庭审质证|经质证|庭审质证|经庭审举证)[：:，,]"
    r"|^(?:针对|对)(?:上述|以上|该|前述)(?:指控|事实)[，,][^。]{0,20}(?:出示|提供|提交|宣读|列举)"
    r"|^[一二三四五六七八九十\d]{1,3}[、.．][^。]{0,80}?(?:等证据|证据证实|予以证实|证实了)")
CLAIMS_START = re.compile(
    r"^[^。，,；;：:]{0,60}?(?:诉称|起诉称|向本院提出(?:如下)?(?:诉讼)?请求|提出(?:如下)?诉讼请求|诉讼请求[：:]|起诉要求|起诉请求|上诉请求|上诉称|申请再审称|再审请求|反诉称|反诉请求|请求判令)"
    r"|^[^。，,；;：:]{0,60}?(?:向本院)?提起诉讼[，,]?(?:请求|要求)"
    r"|^(?:公诉机关|[^，。：]{2,25}(?:人民检察院|检察院)|自诉人[^，。：]{0,10})(?:起诉)?指控(?:称|：|:|，|,|\s|\d|被告人)"
    r"|^(?:公诉机关|[^，。：]{2,25}人民检察院)认为")
DEFENSE_STRONG = re.compile(
    r"^[^。，,；;：:]{0,60}?(?:辩称|答辩称|答辩意见|辩解称|辩护意见|述称|陈述称|答辩状[^。，,]{0,4}称|答辩[^。，,]{0,4}意见)"
    r"|^[^。，,；;：:]{0,30}?(?:辩护人|辩护律师)[^。，,；;]{0,10}?(?:称|认为|提出|意见)")
DEFENSE_WEAK = re.compile(
    rf"^{_PARTY}[^。]{{0,80}}?(?:无异议|没有异议|未作[^。]{{0,6}}答辩|未[^。]{{0,6}}答辩|未提交[^。]{{0,6}}答辩|未作陈述|未到庭|没有到庭|未出庭|拒不到庭|自愿认罪|当庭认罪|供认不讳)")
JUDGMENT_MARKER = re.compile(r"(?:判决|裁定|决定|调解)如下|达成(?:如下|以下)(?:调解)?协议|判决：|裁定：")
BASIS_CLAUSE = re.compile(
    r"(?:^|(?<=[，,；;。：:]))\s*(?:(?:综上所述|综上|据此|为此|因此|故|遂|现)[，,]?\s*)?"
    r"(?:依照|依据|根据|按照|参照|依)(?=《|中华人民共和国|最高人民法院|[^，。]{0,6}(?:法|规定|解释|条))")
TAIL_START = re.compile(
    r"^(?:如不服本|如不服|本(?:判决|裁定|调解书|决定)(?:书)?(?:为终审|自|送达后|经双方|一经)|本案一审判决|"
    r"审判长|审判员|代理审判员|人民陪审员|书记员|代理书记员|法官助理|执行员|[〇○零一二][〇○零一二三四五六七八九]{3}年|附[:：]?(?:相关|本判决|本案)?(?:法律|法条|所适用))")


# Cheap substring checks that must hold before a marker regex can match (speed only).
_KEYS = {
    "facts": ("查明", "认定", "确认", "确定", "争议的事实"),
    "claims": ("诉", "请求", "指控", "认为"),
    "defense_strong": ("辩", "述称", "陈述称"),
    "defense_weak": ("异议", "答辩", "到庭", "出庭", "认罪", "供认", "陈述"),
    "evidence": ("证",),
    "procedure": ("一案", "公诉", "上诉", "再审", "本院", "立案", "提请"),
    "judgment": ("如下", "协议", "判决：", "裁定："),
}


def _may(kind: str, unit: str) -> bool:
    for key in _KEYS[kind]:
        if key in unit:
            return True
    return False


def facts_start(unit: str) -> bool:
    return _may("facts", unit) and FACTS_START.match(unit) is not None


def claims_start(unit: str) -> bool:
    return _may("claims", unit) and CLAIMS_START.match(unit) is not None


def evidence_start(unit: str) -> bool:
    return _may("evidence", unit) and EVIDENCE_START.match(unit) is not None


def procedure_start(unit: str) -> bool:
    return _may("procedure", unit) and PROCEDURE_START.search(unit) is not None


def judgment_marker(unit: str) -> bool:
    return _may("judgment", unit) and JUDGMENT_MARKER.search(unit) is not None


def defense_strong(unit: str) -> bool:
    return _may("defense_strong", unit) and DEFENSE_STRONG.match(unit) is not None


def defense_weak(unit: str) -> bool:
    return _may("defense_weak", unit) and DEFENSE_WEAK.match(unit) is not None


@dataclass
class ParsedJudgment:
    """Sections as text (None when absent) with their spans in `text` (the normalised full text)."""
    text: str
    sections: dict[str, str | None]
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    judgment_items_start: int | None = None

    def span_text(self, start: int, end: int) -> str:
        return self.text[start:end].strip()

    def first_start(self, *names: str) -> int | None:
        starts = [self.spans[n][0][0] for n in names if self.spans.get(n)]
        return min(starts) if starts else None

    @property
    def judgment_items(self) -> str | None:
        """The operative items after 判决如下 (without the legal-basis sentence)."""
        if self.judgment_items_start is None or not self.spans.get("judgment"):
            return None
        end = self.spans["judgment"][-1][1]
        return self.span_text(self.judgment_items_start, end) or None

    @property
    def judgment_to_end(self) -> str | None:
        """The judgment with everything after it (CaseGen's 'judgement' keeps the appeal notice)."""
        start = self.first_start("judgment")
        return self.span_text(start, len(self.text)) or None if start is not None else None

    @property
    def fact_part(self) -> str | None:
        """Everything between the procedure record and the reasoning (JuDGE's 'fact part')."""
        start = self.first_start(*BODY)
        end = self.first_start("reasoning", "judgment", "tail")
        if start is None:
            return None
        return self.span_text(start, end if end is not None else len(self.text)) or None

    @property
    def findings_part(self) -> str | None:
        """The court's first run of findings (经审理查明…), or the accusation when there are none or they only refer to it."""
        facts = self.spans.get("facts")
        if facts and len(self.span_text(*facts[0])) >= SHORT_FINDINGS \
                and not SAME_AS_ACCUSATION.match(self.span_text(*facts[0])):
            return self.span_text(*facts[0])
        runs = self.spans.get("claims") or facts
        if not runs:
            return None
        return self.span_text(*runs[0])


def split_units(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or paragraph, with extra cuts at markers glued texts lack."""
    cuts = {0, len(text)}
    for match in _SENTENCE_END.finditer(text):
        cuts.add(match.end())
    for match in _CUT_AFTER.finditer(text):
        cuts.add(match.end())
    for pattern, no_cut_after in ((_CUT_BEFORE_TAIL, _NO_CUT_AFTER_TAIL), (_CUT_BEFORE_SECTION, _NO_CUT_AFTER_SECTION)):
        for match in pattern.finditer(text):
            start = match.start()
            if start and text[start - 1] not in no_cut_after:
                cuts.add(start)
    head = CASE_NO.search(text, 0, 400)
    if head:
        cuts.add(head.end())
    bounds = sorted(cuts)
    units = []
    for start, end in zip(bounds, bounds[1:]):
        lead = _LEAD.match(text, start, end)
        if lead:
            start = lead.end()
        if text[start:end].strip():
            units.append((start, end))
    return units


def _header_end(text: str, units: list[tuple[int, int]]) -> int:
    """Index of the first unit after the header (title, court, document kind, case number)."""
    for index, (start, end) in enumerate(units[:8]):
        unit = text[start:end]
        if re.match(_PARTY, unit) or PROCEDURE_START.search(unit) or CLAIMS_START.match(unit) \
                or FACTS_START.match(unit) or REASONING_START.match(unit):
            break
        found = CASE_NO.search(unit) if start < 400 and "，" not in unit else None
        if found and found.end() >= len(text[start:end].rstrip("：: \n")) - 1:
            return index + 1
    count = 0
    for start, end in units[:4]:
        unit = text[start:end]
        if len(unit) > 80 or not _HEADER_LINE.search(unit):
            break
        count += 1
    return count


def _basis_split(text: str, start: int, end: int) -> int | None:
    """Offset where the legal-basis clause begins inside a unit, if it has one."""
    found = None
    for match in BASIS_CLAUSE.finditer(text[start:end]):
        found = start + match.start() + len(match.group(0)) - len(match.group(0).lstrip())
    return found


def _label_units(text: str, units: list[tuple[int, int]]) -> list[str]:
    labels: list[str] = []
    header_end = _header_end(text, units)
    has_reasoning = any(REASONING_START.match(text[s:e]) for s, e in units[header_end:])
    state = "header"
    seen: set[str] = set()
    for index, (start, end) in enumerate(units):
        unit = text[start:end]
        if index < header_end:
            labels.append("header")
            continue
        if state == "header":
            state = "parties"
        new = state
        if state in ("judgment",):
            if TAIL_START.match(unit):
                new = "tail"
        elif state == "reasoning":
            if judgment_marker(unit):
                new = "judgment"
            elif TAIL_START.match(unit) and not unit.startswith(("如不服", "附")):
                new = "tail"
        elif state != "tail":
            if REASONING_START.match(unit):
                new = "judgment" if judgment_marker(unit) else "reasoning"
            elif not has_reasoning and judgment_marker(unit) and state in BODY + ("procedure_record",):
                new = "judgment"
            elif state == "parties" and procedure_start(unit) and not facts_start(unit) and not (
                    claims_start(unit) and "一案" not in unit):
                new = "procedure_record"
            else:
                new = _body_transition(state, unit, seen)
        if new != state:
            seen.add(new)
            state = new
        labels.append(state)
        if state == "procedure_record" and PROCEDURE_END.search(unit):
            state = "procedure_done"
    return ["procedure_record" if label == "procedure_done" else label for label in labels]


def _body_transition(state: str, unit: str, seen: set[str]) -> str:
    if facts_start(unit):
        return "facts"
    if evidence_start(unit):
        return "evidence"
    defense = defense_strong(unit) or (state in ("claims", "defense", "evidence") and defense_weak(unit))
    if state in ("parties", "procedure_record", "procedure_done", "claims", "defense") and claims_start(unit):
        return "defense" if defense and state == "defense" else "claims"
    if defense and state != "facts":
        return "defense"
    if state == "procedure_done":
        return "claims"
    return state


def _move_basis(text: str, units: list[tuple[int, int]], labels: list[str]) -> int | None:
    """Move the legal-basis sentence into the judgment; return where the operative items start."""
    try:
        first = labels.index("judgment")
    except ValueError:
        return None
    start, end = units[first]
    items_start = units[first + 1][0] if first + 1 < len(units) else end
    basis = _basis_split(text, start, end)
    if basis is not None and basis > start:
        units[first] = (basis, end)
        units.insert(first, (start, basis))
        own = REASONING_START.match(text[start:end])
        labels.insert(first, "reasoning" if own or first == 0 else labels[first - 1])
    elif basis is None and first > 0 and labels[first - 1] == "reasoning":
        prev_start, prev_end = units[first - 1]
        prev_basis = _basis_split(text, prev_start, prev_end)
        if prev_basis is not None:
            if prev_basis > prev_start:
                units[first - 1] = (prev_start, prev_basis)
                units.insert(first, (prev_basis, prev_end))
                labels.insert(first, "judgment")
            else:
                labels[first - 1] = "judgment"
    return items_start


def parse_sections(full_text: str) -> ParsedJudgment:
    """Sections of one judgment whose text is already normalised (see text.normalise_text)."""
    text = full_text
    units = split_units(text)
    labels = _label_units(text, units)
    items_start = _move_basis(text, units, labels)
    spans: dict[str, list[tuple[int, int]]] = {name: [] for name in SECTIONS}
    for (start, end), label in zip(units, labels):
        runs = spans[label]
        if runs and _only_space(text, runs[-1][1], start):
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    sections = {}
    for name in SECTIONS:
        parts = [text[s:e].strip() for s, e in spans[name]]
        joined = "\n".join(p for p in parts if p)
        sections[name] = joined or None
    return ParsedJudgment(text=text, sections=sections, spans=spans, judgment_items_start=items_start)


def _only_space(text: str, end: int, start: int) -> bool:
    return not text[end:start].strip(" \n：:，,。；;、）)")
