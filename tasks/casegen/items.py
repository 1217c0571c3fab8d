"""CaseGen task items from gold sections: pure functions over rows, no database.

A source row is either a curated.cn_judgments row (section columns claims, defense, evidence,
facts, reasoning, judgment ...) or a CaseGen-format record (prosecution, defense, evidence as a
{name: content} dict, events, fact, reasoning, judgement). Inputs are always gold sections, so a
task whose input or reference section is absent is skipped with a reason, never built half-empty.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

TASKS = ("defense", "facts", "reasoning", "judgment")
TASK_INPUTS: dict[str, tuple[str, ...]] = {
    "defense": ("claims", "evidence"),
    "facts": ("claims", "defense", "evidence"),
    "reasoning": ("claims", "defense", "facts"),
    "judgment": ("facts", "reasoning"),
}
SECTION_TITLES = {"claims": "原告诉称", "defense": "被告辩称", "evidence": "证据", "facts": "审理查明的事实",
                  "reasoning": "本院认为", "judgment": "判决结果"}

# canonical section -> the names it goes by in the inputs we accept
_ALIASES = {
    "claims": ("claims", "prosecution", "诉称段"),
    "defense": ("defense", "defence", "辩称段"),
    "facts": ("facts", "fact", "事实段"),
    "reasoning": ("reasoning", "裁判分析过程段"),
    "judgment": ("judgment", "judgement", "判决结果段"),
}
_ID_KEYS = ("doc_id", "id", "文书ID")


@dataclass(frozen=True)
class Evidence:
    name: str
    content: str | None = None     # judgments list names only; content only where the input has it
    event: str | None = None


@dataclass
class CaseSections:
    doc_id: str
    source: str
    sections: dict[str, str] = field(default_factory=dict)   # claims/defense/facts/reasoning/judgment
    evidence: list[Evidence] = field(default_factory=list)


@dataclass(frozen=True)
class TaskItem:
    item_id: str
    doc_id: str
    task: str
    inputs: dict            # section name -> text, and "evidence" -> list of {name, content, event}
    reference: str
    source: str

    def inputs_json(self) -> str:
        return json.dumps(self.inputs, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Skipped:
    doc_id: str
    task: str
    reason: str


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:      # NaN from a DataFrame
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value if _text(v))
    return str(value).strip()


# ---------------------------------------------------------------- evidence names

_NUMBERED = re.compile(
    r"(?:^|[\n；;。])\s*(?:证据)?[（(]?(?:[0-9０-９]{1,2}|[一二三四五六七八九十]{1,3})[)）]?[、.．:：]\s*"
    r"(?:证据[名称]*[:：])?([^，,。；;：:\n（(]{2,40})"
)
_BOOK_TITLE = re.compile(r"(?:证据[0-9０-９一二三四五六七八九十]*|提交(?:了|的)?|提供(?:了|的)?|出具(?:了|的)?)《([^》]{2,40})》")
_SUMMARY = re.compile(r"(?:上述|以上)(?:事实|案件事实)[，,]?(?:有|由|系)(.{2,300}?)等?(?:证据|在案|为证|予以证实|证实|佐证)")
_EVIDENCE_INTRO = re.compile(r"(?:以下|如下|下列)证据|提(?:交|供|举)(?:了)?(?:如下|以下)?证据[:：]|举证[:：]")
_SPLIT = re.compile(r"[、，,；;]|以及|及|和")
_OWNER_PREFIX = re.compile(r"^(?:原告|被告|第三人|双方当事人|当事人|双方|本院)[^、，的]{0,12}?(?:提交|提供|出具)?的")
_COUNT_SUFFIX = re.compile(r"[一两二三四五六七八九十0-9０-９]+(?:份|张|页|组|本|套|册)$")
_NOT_EVIDENCE = ("证明", "拟证", "用以", "本院", "认为", "判决")


def _clean_name(raw: str) -> str:
    name = _OWNER_PREFIX.sub("", raw.strip())
    name = _COUNT_SUFFIX.sub("", name).strip(" 　:：“”\"《》")
    name = name.removesuffix("等")
    return name


def _accept(name: str) -> bool:
    return 2 <= len(name) <= 30 and not any(word in name for word in _NOT_EVIDENCE)


def extract_evidence_names(*texts: str) -> list[str]:
    """Names of the evidence a judgment mentions, in order of first mention, without duplicates.

    Looks at book-title names next to 提交/提供/证据N (《借款合同》), numbered lists after an
    evidence intro (以下证据：1、借条…) and summary sentences (上述事实，有借条、收据等证据在案为证).
    Pass the evidence section alone to treat every numbered line as evidence.
    """
    names: list[str] = []

    def add(raw: str) -> None:
        name = _clean_name(raw)
        if _accept(name) and name not in names:
            names.append(name)

    for text in texts:
        text = _text(text)
        if not text:
            continue
        for match in _BOOK_TITLE.finditer(text):
            add(match.group(1))
        for intro in _EVIDENCE_INTRO.finditer(text):
            block_end = text.find("\n\n", intro.end())
            block = text[intro.end(): block_end if block_end != -1 else len(text)]
            for match in _NUMBERED.finditer(block):
                add(match.group(1))
        for match in _SUMMARY.finditer(text):
            for part in _SPLIT.split(match.group(1)):
                add(part)
    return names


def evidence_from_section(evidence_text: str) -> list[str]:
    """In a dedicated evidence section every numbered entry is evidence; summaries count as well."""
    names = []
    for match in _NUMBERED.finditer("\n" + _text(evidence_text)):
        name = _clean_name(match.group(1))
        if _accept(name) and name not in names:
            names.append(name)
    for name in extract_evidence_names(evidence_text):
        if name not in names:
            names.append(name)
    return names


def _evidence_list(value, events) -> list[Evidence]:
    """A CaseGen evidence dict {name: content}, a list of names/dicts, or section text."""
    event_of = events if isinstance(events, dict) else {}
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith(("{", "[")):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError:
                pass
    if isinstance(value, dict):
        return [Evidence(str(k).strip(), _text(v) or None, _text(event_of.get(k)) or None) for k, v in value.items()]
    if isinstance(value, list):
        out = []
        for entry in value:
            if isinstance(entry, dict):
                name = _text(entry.get("name") or entry.get("evidence") or entry.get("名称"))
                if name:
                    out.append(Evidence(name, _text(entry.get("content") or entry.get("内容")) or None,
                                        _text(entry.get("event") or event_of.get(name)) or None))
            elif _text(entry):
                out.append(Evidence(_text(entry), None, _text(event_of.get(_text(entry))) or None))
        return out
    if isinstance(value, str) and value.strip():
        return [Evidence(name) for name in evidence_from_section(value)]
    return []


def sections_from_record(record: dict, source: str) -> CaseSections:
    """One input row (curated row or CaseGen-format record) → canonical gold sections."""
    doc_id = next((_text(record[k]) for k in _ID_KEYS if k in record and _text(record[k])), None)
    if doc_id is None:
        raise ValueError(f"{source}: record without an id (one of {', '.join(_ID_KEYS)})")
    sections = {}
    for canonical, names in _ALIASES.items():
        for name in names:
            if name in record and _text(record[name]):
                sections[canonical] = _text(record[name])
                break
    evidence = _evidence_list(record.get("evidence"), record.get("events"))
    if not evidence:
        # judgments usually name their evidence only inside the facts ("上述事实，有…等证据")
        evidence = [Evidence(n) for n in extract_evidence_names(sections.get("facts", ""))]
    return CaseSections(doc_id=doc_id, source=source, sections=sections, evidence=evidence)


def item_id_for(doc_id: str, task: str, source: str) -> str:
    digest = hashlib.sha256(f"{source}\x1f{doc_id}\x1f{task}".encode()).hexdigest()[:16]
    return f"cg-{task}-{digest}"


def items_for_case(case: CaseSections, tasks: tuple[str, ...] = TASKS) -> tuple[list[TaskItem], list[Skipped]]:
    items, skipped = [], []
    for task in tasks:
        reference = case.sections.get(task, "")
        missing = []
        inputs: dict = {}
        for name in TASK_INPUTS[task]:
            if name == "evidence":
                if not case.evidence:
                    missing.append("evidence")
                inputs["evidence"] = [asdict(e) for e in case.evidence]
            elif case.sections.get(name):
                inputs[name] = case.sections[name]
            else:
                missing.append(name)
        if not reference:
            missing.append(f"reference {task}")
        if missing:
            skipped.append(Skipped(case.doc_id, task, "missing gold section(s): " + ", ".join(missing)))
            continue
        items.append(TaskItem(item_id_for(case.doc_id, task, case.source), case.doc_id, task, inputs,
                              reference, case.source))
    return items, skipped


def build_items(records, source: str, tasks: tuple[str, ...] = TASKS) -> tuple[list[TaskItem], list[Skipped]]:
    """All items buildable from `records` (an iterable of dicts or a pandas DataFrame)."""
    if hasattr(records, "to_dict"):
        records = records.to_dict(orient="records")
    items, skipped = [], []
    for record in records:
        try:
            case = sections_from_record(record, source)
        except ValueError as exc:
            skipped.append(Skipped("?", "*", str(exc)))
            continue
        built, missed = items_for_case(case, tasks)
        items.extend(built)
        skipped.extend(missed)
    return items, skipped


def render_evidence(evidence: list[dict]) -> str:
    """Evidence as prompt text: a numbered list; content and the event it proves where known."""
    lines = []
    for number, entry in enumerate(evidence, start=1):
        line = f"{number}. {entry['name']}"
        if entry.get("content"):
            line += f"：{entry['content']}"
        if entry.get("event"):
            line += f"（证明事项：{entry['event']}）"
        lines.append(line)
    return "\n".join(lines)
