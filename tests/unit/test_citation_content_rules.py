"""Content rules and legal citations (issue 36): the letters check leaves the numbered parts of citations out
beside prose — ECHR "§§ 45-47", "no. 12345/06", "ECHR 2005-VII"; U.S. reporters and "Id. at 5"; Chinese case
numbers in 〔〕 and （） — while digits that only look like citations are still refused.
(tests/samples/test_content_rules_on_citations.py measures the rules on the samples' real sentences.)"""
import pandas as pd
import pytest

from caseforge import gate, textchecks

# digits and punctuation that only look like citations, and lists of citations with no prose
CITATION_SOUP = [
    "The applicant, no. 1/06, no. 2/06, no. 3/06, no. 4/06, no. 5/06, no. 6/06, no. 7/06, no. 8/06.",
    "The applicant no. 1/06 no. 2/06 no. 3/06 no. 4/06 no. 5/06 no. 6/06 no. 7/06 no. 8/06",
    "See § 1, § 2, § 3, § 4, § 5, § 6, § 7, § 8, § 9 and § 10 of the Act.",
    "(1967), (1968), (1969), (1970), (1971), (1972) the Court held",
    "410 U.S. 113, 410 U.S. 114, 410 U.S. 115, 410 U.S. 116, 410 U.S. 117, 410 U.S. 118",
    "Id. at 5, Id. at 6, Id. at 7, Id. at 8, Id. at 9, Id. at 10, Id. at 11, Id. at 12",
]


def statement_rules(frame: pd.DataFrame, column: str = "text", rules: str = "english_statement"):
    suite = gate.expand_text_rules({"name": "t", "meta": {"max_failed_row_fraction": 1.0}, "expectations": [
        {"type": "include_text_rules", "kwargs": {"column": column, "rules": rules}}]}, "test")
    result = gate.validate("t", frame, suite)
    return {row: {reason.removeprefix("gate: ").split(" on ")[0] for reason in reasons}
            for row, reasons in result.failed_rows.items()}


@pytest.mark.parametrize("text", CITATION_SOUP)
def test_digits_that_look_like_citations_are_still_digit_soup(text):
    assert not textchecks.mostly_letters(text, 0.75)
    assert statement_rules(pd.DataFrame({"text": [text]}))


def test_citations_are_left_out_of_the_letter_share_only_beside_prose():
    citations = ("(see Muršić v. Croatia [GC], no. 7334/13, §§ 137-41, ECHR 2016, and Labita v. Italy [GC], "
                 "no. 26772/95, § 121, ECHR 2000-IV)")
    assert not textchecks.mostly_letters(citations, 0.75)
    assert textchecks.mostly_letters(f"The Court reiterated the principles of its case-law {citations}.", 0.75)
    assert textchecks.mostly_letters("Roe v. Wade, 410 U.S. 113, 153 (1973), held that the right is fundamental.",
                                     0.75)
    assert not textchecks.mostly_letters("1967-01-04, 1967-01-14, 1969-01-24, 1968-01-28", 0.75)
