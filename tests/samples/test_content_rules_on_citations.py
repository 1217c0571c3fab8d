"""The content rules accept the citation conventions of each jurisdiction (issue 36): real sentences that carry
citations — ECHR guide and HUDOC judgment paragraphs, the AQuAECHR experts' answers, U.S. case text (Bar Exam
passages, Oyez summaries), Chinese judgments' sections; tests/citation_sentences.py reads them — checked as a
model's question, claim, reason or answer is checked, are rejected by none of the rules.

Each kind of text meets the content expectations of the suite it meets in a build: a question those of
`curated.aquaechr_qa` on `question` (its text rule set and prompt echo; not the two rules on a question's form, a
closing question mark and no answer inside it, which no declarative sentence could pass and which do not look at
citations), a claim those of `casefacts_claims` on `claim`, a reason those of `aquaechr_qa` on `judge_analysis`, a
whole paragraph those of `aquaechr_qa` on `answer`; a Chinese sentence those of `casegen_judge_replies` on
`analysis`. The rejections per rule are printed (`-s`)."""
from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from caseforge import gate
from citation_sentences import CN_MARKS, chinese_corpus, english_corpus

pytestmark = [pytest.mark.samples]

QUESTION_FORM = {"expect_column_values_to_match_regex", "expect_column_pair_values_to_not_leak_answer"}


def content_suite(table: str, column: str) -> dict:
    """The content expectations of a table's suite on `column` (text rule sets and rules marked content), minus the
    rules on a question's form, given to a column named `text`; never a batch rejection."""
    suite = gate.load_suite_json(table)
    picked = [{**e, "kwargs": {**e["kwargs"], "column": "text"}} for e in suite["expectations"]
              if (e.get("meta") or {}).keys() & {"text_rules", "content"} and e["kwargs"].get("column") == column
              and e["type"] not in QUESTION_FORM]
    assert picked, (table, column)
    return {**suite, "meta": {**suite["meta"], "max_failed_row_fraction": 1.0}, "expectations": picked}


def rejections(table: str, column: str, texts: list[str]) -> dict[int, set[str]]:
    """Row -> the rules that reject it."""
    result = gate.validate(table, pd.DataFrame({"text": texts}), content_suite(table, column))
    assert not result.batch_reasons, result.batch_reasons
    return {row: {reason.removeprefix("gate: ").split(" on ")[0] for reason in reasons}
            for row, reasons in result.failed_rows.items()}


def report(what: str, texts: list[str], rejected: dict[int, set[str]]) -> None:
    per_rule = Counter(rule for rules in rejected.values() for rule in rules)
    print(f"{what}: {len(texts)} texts, {len(rejected)} rejected {dict(sorted(per_rule.items()))}")
    for row in sorted(rejected)[:5]:
        print(f"    {sorted(rejected[row])}: {texts[row][:160]}")


@pytest.fixture(scope="module")
def english(samples_dir):
    units, paragraphs, joined = english_corpus(samples_dir)
    sources = Counter(unit.source for unit in units)
    print(f"\nEnglish: {len(units)} citation sentences {dict(sources)} ({sum(joined.values())} citation-only "
          f"sentences kept with the sentence before them), {len(paragraphs)} paragraphs")
    assert min(sources[s] for s in ("guide", "hudoc", "aquaechr", "barexam", "oyez")) >= 40, sources
    return units, paragraphs


@pytest.mark.parametrize("kind, table, column", [
    ("question", "aquaechr_qa", "question"),
    ("claim", "casefacts_claims", "claim"),
    ("reason", "aquaechr_qa", "judge_analysis"),
])
def test_english_citation_sentences_pass(english, kind, table, column):
    units, _ = english
    texts = [unit.text for unit in units]
    rejected = rejections(table, column, texts)
    for source in sorted({unit.source for unit in units}):
        rows = [i for i, unit in enumerate(units) if unit.source == source]
        report(f"{source} sentences as a {kind} ({table}.{column})", [texts[i] for i in rows],
               {n: rejected[i] for n, i in enumerate(rows) if i in rejected})
    assert not rejected, [(sorted(rules), texts[row]) for row, rules in sorted(rejected.items())[:10]]


def test_english_paragraphs_with_citations_pass_as_answers(english):
    _, paragraphs = english
    texts = [text for _, text in paragraphs]
    rejected = rejections("aquaechr_qa", "answer", texts)
    report("paragraphs as an answer (aquaechr_qa.answer)", texts, rejected)
    assert not rejected, [(sorted(rules), texts[row]) for row, rules in sorted(rejected.items())[:10]]


def test_chinese_sentences_are_not_rejected_for_their_case_numbers_or_laws(samples_dir):
    """A Chinese sentence with a case number ("（2019）京01民终1234号", "〔2018〕240号") or a law cited by its title is
    rejected only where it is rejected with those marks cut out: for its own text, not its citations."""
    units, _ = chinese_corpus(samples_dir)
    texts = [unit.text for unit in units]
    assert len(texts) >= 1000
    rejected = rejections("casegen_judge_replies", "analysis", texts)
    report("Chinese sentences as a judge's analysis (casegen_judge_replies.analysis)", texts, rejected)
    cut = rejections("casegen_judge_replies", "analysis", [CN_MARKS.sub("", texts[row]) for row in sorted(rejected)])
    for_citations = {row: rejected[row] - cut.get(n, set()) for n, row in enumerate(sorted(rejected))}
    assert not {row: rules for row, rules in for_citations.items() if rules}, \
        [(sorted(rules), texts[row]) for row, rules in for_citations.items() if rules]
