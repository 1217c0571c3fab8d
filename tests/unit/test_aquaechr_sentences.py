"""Sentence numbering, citation carry-over into answers, answer assembly."""
import pytest

from caseforge.tasks.aquaechr.attribution import attribution_problem, cited_paragraph_count, pinpoint_numbers, \
    sentence_records
from caseforge.tasks.aquaechr.sentences import Citation, InvalidSentenceIds, Paragraph, answer_text, \
    assemble_answer, number_window, numbered_text, sentence_spans, split_paragraph

PARA_2 = ("Article 2 ranks as one of the most fundamental provisions in the Convention, one which in peace "
          "time, admits of no derogation under Article 15. Together with Article 3, it enshrines one of the basic "
          "values of the democratic societies making up the Council of Europe (Giuliani and Gaggio v. Italy [GC], "
          "2011, § 174). As such, its provisions must be strictly construed (McCann and Others v. the United "
          "Kingdom, 1995, § 147).")
CITES_2 = [
    Citation(1, "Giuliani and Gaggio v. Italy", "001-104098", ("174",), 2011, "Giuliani and Gaggio v. Italy [GC], 2011, § 174"),
    Citation(2, "McCann and Others v. the United Kingdom", "001-57943", ("147",), 1995),
]


def test_sentences_end_outside_parentheses_and_not_after_v_or_dec():
    text = "It applies (Boso v. Italy (dec.), 2002). See also No. 5 of A. B. v. Malta. Last one!"
    spans = [text[s:e] for s, e in sentence_spans(text)]
    assert spans == ["It applies (Boso v. Italy (dec.), 2002).", "See also No. 5 of A. B. v. Malta.", "Last one!"]


def test_paragraph_numbering_and_citations_land_in_their_sentence():
    sentences, unlocated = split_paragraph("art2", "2", PARA_2, CITES_2, first_number=4)
    assert [s.number for s in sentences] == [4, 5, 6]
    assert sentences[0].text.startswith("Article 2 ranks") and sentences[0].text.endswith("Article 15.")
    assert [c.ordinal for c in sentences[0].citations] == []
    assert [c.itemid for c in sentences[1].citations] == ["001-104098"]
    assert [c.itemid for c in sentences[2].citations] == ["001-57943"]
    assert unlocated == []


def test_citation_text_split_over_lines_is_still_found_and_missing_one_reported():
    text = "First point (McCann and Others  v. the United\nKingdom, 1995, § 146). Second point."
    ghost = Citation(3, "Nobody v. Nowhere", None, ())
    sentences, unlocated = split_paragraph("g", "1", text, [CITES_2[1], ghost])
    assert [c.case_name for c in sentences[0].citations] == ["McCann and Others v. the United Kingdom"]
    assert sentences[1].citations == [] and unlocated == [ghost]


def test_window_numbering_runs_across_paragraphs_and_shows_numbers():
    window = [Paragraph("g", "1", "One. Two."), Paragraph("g", "2", PARA_2, citations=CITES_2)]
    sentences, _ = number_window(window)
    assert [(s.number, s.para_no) for s in sentences] == [(1, "1"), (2, "1"), (3, "2"), (4, "2"), (5, "2")]
    shown = numbered_text(sentences).splitlines()
    assert shown[0] == "[1] One." and shown[3].startswith("[4] Together with Article 3")


def test_answer_is_the_chosen_sentences_verbatim_with_their_citations():
    window = [Paragraph("g", "1", "One. Two."), Paragraph("g", "2", PARA_2, citations=CITES_2)]
    sentences, _ = number_window(window)
    answer = assemble_answer(sentences, [5, 4, 4])
    assert answer_text(answer) == (sentences[3].text + " " + sentences[4].text).replace("\n", " ")
    records = sentence_records(answer, {("001-104098", "174"): "174. The text."})
    assert records[0]["citations"][0]["passages"] == [{"para_no": "174", "text": "174. The text."}]
    assert records[1]["citations"][0]["passages"] == [{"para_no": "147", "text": None}]
    assert cited_paragraph_count(records) == 2 and attribution_problem(records) is None


@pytest.mark.parametrize("chosen", [[0], [6], [2, 99], []])
def test_unknown_sentence_numbers_are_invalid(chosen):
    sentences, _ = number_window([Paragraph("g", "2", PARA_2, citations=CITES_2)])
    with pytest.raises(InvalidSentenceIds):
        assemble_answer(sentences, chosen)


def test_attribution_filters():
    def records(**kw):
        base = {"case_name": "X v. Y", "year": 2000, "itemid": "001-1", "pinpoints": ["5"], "language": "ENG"}
        base.update(kw)
        return [{"sentence": "s", "guide_para_no": "1", "citations": [base]}]
    assert attribution_problem(records(language="FRE")) == "non_english_citation"
    assert attribution_problem(records(pinpoints=[])) == "whole_case_citation"
    assert attribution_problem(records(itemid=None)) == "unresolved_citation"
    assert attribution_problem([{"sentence": "s", "guide_para_no": "1", "citations": []}]) == "no_resolved_pinpoint"
    assert attribution_problem(records(language=None)) is None
    assert pinpoint_numbers(["52-57", 3, "3"]) == ("52", "53", "54", "55", "56", "57", "3")
