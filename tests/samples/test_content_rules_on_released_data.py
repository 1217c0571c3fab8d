"""The content rules reject none of the released data in the samples (issue 28): the 5,794 claims of the CaseFacts
train split, the 20 AQuAECHR expert records (question and answer), the CaseGen reference sections (facts,
reasoning, judgment) — each through the content expectations of the suite its kind of text meets in a build. The
false rejections per rule are printed (`-s`)."""
import json
from collections import Counter

import pandas as pd
import pytest

from caseforge import gate

pytestmark = [pytest.mark.samples]


def content_suite(table: str, columns: set[str]) -> dict:
    """The content expectations of a table's suite on `columns`: the text rule sets it includes, and the expectations
    marked as content rules (prompt echo, answer leak, a question's question mark); never a batch rejection."""
    suite = gate.load_suite_json(table)
    picked = [e for e in suite["expectations"]
              if (e.get("meta") or {}).keys() & {"text_rules", "content"}
              and {e["kwargs"].get("column"), e["kwargs"].get("column_A")} & columns]
    return {**suite, "meta": {**suite["meta"], "max_failed_row_fraction": 1.0}, "expectations": picked}


def false_rejections(table: str, frame: pd.DataFrame, columns: set[str]) -> tuple[int, Counter]:
    suite = content_suite(table, columns)
    assert suite["expectations"], table
    result = gate.validate(table, frame, suite)
    assert not result.batch_reasons, result.batch_reasons
    per_rule = Counter(reason for reasons in result.failed_rows.values() for reason in reasons)
    print(f"{table} on {len(frame)} released rows ({len(suite['expectations'])} content rules): "
          f"{len(result.failed_rows)} rejected {dict(per_rule)}")
    return len(result.failed_rows), per_rule


def test_casefacts_train_claims_pass(samples_dir):
    """casefacts_claims' content rules on a claim are those of every CaseFacts stage a claim passes (generated,
    kept_claims: the same text rule set; its prompt echo covers every CaseFacts template)."""
    claims = pd.DataFrame({"claim": [r["claim"] for r in json.loads(
        (samples_dir / "casefacts" / "train.json").read_text(encoding="utf-8"))]})
    assert len(claims) == 5794
    for table in ("casefacts_generated", "casefacts_kept_claims"):
        assert [e for e in content_suite(table, {"claim"})["expectations"]
                if e not in content_suite("casefacts_claims", {"claim"})["expectations"]
                and e["type"] != "expect_column_values_to_not_echo_prompt"] == [], table
    assert false_rejections("casefacts_claims", claims, {"claim"}) == (0, Counter())


def test_aquaechr_expert_records_pass(samples_dir):
    records = json.loads((samples_dir / "aquaechr" / "expert_annotations_rag.json").read_text(encoding="utf-8"))
    frame = pd.DataFrame({"question": [r["question"] for r in records], "answer": [r["answer"] for r in records]})
    assert false_rejections("aquaechr_qa", frame, {"question", "answer"}) == (0, Counter())


def test_casegen_reference_sections_pass_as_drafts(samples_dir):
    task_of = {"fact": "facts", "reasoning": "reasoning", "judgement": "judgment"}
    rows = [json.loads(line) for line in (samples_dir / "cn" / "casegen_reference_sections.jsonl")
            .read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = pd.DataFrame([{"key": f"{r['id']}:{section}", "task": task, "draft": r[section]}
                          for r in rows for section, task in task_of.items() if r.get(section)])
    assert len(frame) == 750
    assert false_rejections("casegen_drafts", frame, {"draft"}) == (0, Counter())
