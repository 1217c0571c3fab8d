"""The guide_citations and echr_paragraphs suites reject what the brief forbids."""
from __future__ import annotations

import pandas as pd

from caseforge.gate import validate
from caseforge.tasks.guides.ingest import CITATION_COLUMNS
from caseforge.tasks.hudoc.paragraphs import COLUMNS as PARAGRAPH_COLUMNS


def _citation(**changes) -> dict:
    row = {c: None for c in CITATION_COLUMNS}
    row.update(guide_id="g", para_no="1", ordinal=1, case_name="Opuz v. Turkey", applicant="Opuz", respondent="Turkey",
               year=2009, grand_chamber=False, is_decision=False, pinpoints=[129], whole_case=False,
               is_ibid=False, repeats_previous=False, raw_citation="Opuz v. Turkey, 2009, § 129", raw_sha256="0" * 64)
    row.update(changes)
    return row


def test_citations_need_a_case_name_and_a_pinpoint_or_the_whole_case_flag():
    frame = pd.DataFrame([
        _citation(),
        _citation(ordinal=2, pinpoints=[], whole_case=True),
        _citation(ordinal=3, case_name=None),                        # ibid. with nothing before it
        _citation(ordinal=4, pinpoints=[], whole_case=False),        # neither pinpoint nor flag
        _citation(ordinal=5, case_name="Article 6 § 1"),
        _citation(ordinal=6, signal="as it were"),
    ], columns=CITATION_COLUMNS)
    result = validate("guide_citations", frame)
    assert not result.batch_rejected
    assert sorted(result.failed_rows) == [2, 3, 4, 5]


def test_empty_paragraphs_are_quarantined():
    rows = [{"itemid": "001-1", "para_no": "1", "part": "judgment", "section": "THE LAW", "heading_path": None,
             "text": text, "ordinal": i, "footnotes": [], "source_format": "html", "raw_sha256": "0" * 64}
            for i, text in enumerate(["A paragraph.", "   ", "Another."], start=1)]
    result = validate("echr_paragraphs", pd.DataFrame(rows, columns=PARAGRAPH_COLUMNS))
    assert sorted(result.failed_rows) == [1]


def test_a_citation_year_outside_the_conventions_time_is_quarantined_by_the_gate():
    frame = pd.DataFrame([_citation(), _citation(ordinal=2, year=201), _citation(ordinal=3, year=None),
                          _citation(ordinal=4, year=2999)], columns=CITATION_COLUMNS)
    result = validate("guide_citations", frame)
    assert sorted(result.failed_rows) == [1, 3]
    assert "expect_column_values_to_be_between on year" in result.failed_rows[1][0]
