"""Content rules and legal citations (issue 36): the citation conventions of each jurisdiction pass the rules a
model's question, claim or reason meets — ECHR "[GC]", "(dec.)", "§§ 45-47", "no. 12345/06", "ECHR 2005-VII"; U.S.
reporters and "Id. at 5"; editors' brackets in quotations; Chinese case numbers in 〔〕 and （） — while markup debris
that looks like a citation, and digits that only look like citations, are still refused.
(tests/samples/test_content_rules_on_citations.py measures the rules on the samples' real sentences.)"""
import pandas as pd
import pytest

from caseforge import gate, textchecks

QUESTIONS_WITH_CITATIONS = [
    "How did the Court in Giuliani and Gaggio v. Italy [GC] assess the planning of a police operation (§§ 174-75)?",
    "Does a decision such as Boso v. Italy (dec.), no. 50490/99, ECHR 2002-VII, settle whether Article 2 protects "
    "the unborn?",
    "Which obligations did the Grand Chamber draw from Article 2 in Kurt v. Austria ([GC], no. 62903/15, §§ 157-65, "
    "15 June 2021) and Savchenko v. Ukraine [Committee], no. 1574/06, § 99?",
    "How did Roe v. Wade, 410 U.S. 113, 153 (1973), and Planned Parenthood v. Casey, 505 U.S. 833, 846 (1992), frame "
    "the right to privacy?",
    "What test for an exigent search did the Court adopt in 123 S. Ct. 456, and did 5 F.3d 789, 791 (2d Cir. 1993) "
    "follow it (Id. at 5)?",
    "Did the statute reach “[t]he financial assets that are identified in” the proceedings, or only those that "
    "would not “caus[e] undue harm to [the] plan participants”?",
    "Was the ouster hostile enough to disseize the cotenants, as Felder [v. Fleming], 278 S.C. [327] at 330 "
    "[(1982)] required, or was the possession merely permissive?[4]",
]
CHINESE_REASONS_WITH_CASE_NUMBERS = [
    "本院认为，依照《中华人民共和国合同法》第五十二条，（2019）京01民终1234号判决认定合同无效，理由充分。",
    "公诉机关以石检二部刑诉〔2018〕240号起诉书指控被告人犯盗窃罪，草稿对此的概括准确完整。",
]
# what a model leaves behind, made to look like a citation, and each rule that must refuse it
MARKUP_DEBRIS = {
    "[INST] What did the Court hold in McCann v. the United Kingdom [GC]? [/INST]": "bracket",
    "How did Kurt v. Austria [GC] define a real and immediate risk?</s>": "regex",
    "<br>How did Giuliani and Gaggio v. Italy [GC], 2011, § 174, assess the planning?": "regex",
    '{"question": "What did the Court hold in Kurt v. Austria [GC], § 160?"}': "regex",
    'Which cases apply the test? ["Kurt v. Austria [GC]", "Osman v. the United Kingdom"]': "bracket",
    "['Which case', 'applies Article 2 to prison suicides'] under the Convention?": "bracket",
    "Which cases did the Court follow in the judgment? []": "bracket",
    "Which cases does the answer cite for the obligation [1, 3] under Article 2?": "bracket",
    "How must the State protect life by law [Doc 1] and investigate deaths [Doc 2]?": "bracket",
    "[3] It will be liable for any violations of those rights in the same way?": "bracket",
    "How did [Kurt v. Austria](https://hudoc.echr.coe.int) define the risk for the State?": "bracket",
    "Which footnote [^1] of the guide lists the Grand Chamber cases on Article 2?": "bracket",
    "How did the Court in [[GC]] Kurt v. Austria assess the preventive measures taken?": "bracket",
    "How did the Court in Kurt v. Austria [GC assess the preventive measures taken?": "bracket",
    "Which standard applies [TOOL_CALLS] to the use of lethal force by State agents?": "bracket",
    "Which standard applies to the use of force [SEP] by State agents under Article 2?": "bracket",
}
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


def test_citation_conventions_of_each_jurisdiction_pass_the_rules_of_a_question_and_a_reason():
    assert statement_rules(pd.DataFrame({"text": QUESTIONS_WITH_CITATIONS})) == {}
    assert statement_rules(pd.DataFrame({"text": QUESTIONS_WITH_CITATIONS}), rules="english_reason") == {}
    assert statement_rules(pd.DataFrame({"text": CHINESE_REASONS_WITH_CASE_NUMBERS}), rules="chinese_reason") == {}


def test_markup_debris_that_looks_like_a_citation_is_refused():
    texts = list(MARKUP_DEBRIS)
    rejected = statement_rules(pd.DataFrame({"text": texts}))
    rule = {"regex": "expect_column_values_to_not_match_regex",
            "bracket": "expect_column_values_to_not_contain_bracket_markup"}
    assert {texts[row]: rules for row, rules in rejected.items() if rule[MARKUP_DEBRIS[texts[row]]] in rules} \
        .keys() == set(texts), {t: rejected.get(i) for i, t in enumerate(texts)}


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


def test_square_brackets_of_citations_and_quotations_are_not_markup():
    for text in ("Giuliani and Gaggio v. Italy [GC], 2011", "Savchenko v. Ukraine [Committee], no. 1574/06",
                 "“[T]he assets”", "caus[e] harm", "[the record's] identity", "for nuisance.[4] An example",
                 "Re Dolphin's Conveyance [1970] Ch 654", "a “claim[ ] to property”", "the [...] rule", "[sic]",
                 "recover for [NIED]", "Muršić v. Croatia ([GC], no. 7334/13)", "278 S.C. [327] at 330 [(1982)]",
                 "[1970] Ch 654 held that the scheme binds every purchaser"):
        assert textchecks.no_bracket_markup(text), text
    for text in ("[INST] hi", "[/INST]", "[]", "[ 1, 2 ]", '["a"]', "['a', 'b']", "[Doc 1]", "[docs 1, 2]",
                 "[x](http://a)", "[^1]", "[[GC]]", "[GC", "GC]", "[TOOL_CALLS]", "[control_8]", "x\n[2] y", "[1] y"):
        assert not textchecks.no_bracket_markup(text), text
