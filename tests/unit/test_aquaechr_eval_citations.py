"""The citation parser on messy model output."""
from caseforge.tasks.aquaechr.eval.citations import (cited_passages, invalid_citations, parse_answer, split_sentences,
                                              strip_citations)

SHOWN = ["001-1#10", "001-2#20", "001-3#30"]


def cites(sentence):
    return [(c.doc, c.passage_id) for c in sentence.citations]


def test_canonical_and_grouped_markers():
    sentences = parse_answer("Article 17 applies only exceptionally [Doc 1]. Context matters [Doc 1, Doc 3].",
                             SHOWN)
    assert [s.text for s in sentences] == ["Article 17 applies only exceptionally.", "Context matters."]
    assert cites(sentences[0]) == [(1, "001-1#10")]
    assert cites(sentences[1]) == [(1, "001-1#10"), (3, "001-3#30")]


def test_bare_numbers_parentheses_adjacent_and_whitespace():
    text = "Intent matters [1][2]. Severity is key (Doc 2). Stray spacing [ doc  3 ] here.\nAlso [Docs 1, 3]."
    sentences = parse_answer(text, SHOWN)
    assert [s.text for s in sentences] == ["Intent matters.", "Severity is key.", "Stray spacing here.", "Also."]
    assert cites(sentences[0]) == [(1, "001-1#10"), (2, "001-2#20")]
    assert cites(sentences[1]) == [(2, "001-2#20")]
    assert cites(sentences[2]) == [(3, "001-3#30")]
    assert cites(sentences[3]) == [(1, "001-1#10"), (3, "001-3#30")]


def test_marker_after_the_period_belongs_to_that_sentence():
    sentences = parse_answer("First point. [Doc 2] Second point.", SHOWN)
    assert [(s.text, cites(s)) for s in sentences] == [("First point.", [(2, "001-2#20")]),
                                                      ("Second point.", [])]


def test_line_opening_marker_and_marker_only_line():
    sentences = parse_answer("[Doc 3] The complaint was rejected.\nIt was ill-founded.\n[Doc 1]", SHOWN)
    assert [(s.text, cites(s)) for s in sentences] == [("The complaint was rejected.", [(3, "001-3#30")]),
                                                      ("It was ill-founded.", [(1, "001-1#10")])]


def test_non_existent_docs_are_recorded_as_invalid():
    sentences = parse_answer("Claim one [Doc 4]. Claim two [Doc 0][Doc 2].", SHOWN)
    assert invalid_citations(sentences) == [4, 0]
    assert sentences[0].valid_passages == []
    assert cited_passages(sentences) == ["001-2#20"]


def test_legal_abbreviations_do_not_split_sentences():
    text = "See Pastörs v. Germany, no. 55225/14, § 37 [Doc 1]. Compare Art. 10 with 2.5 per cent."
    assert split_sentences(strip_citations(text)) == ["See Pastörs v. Germany, no. 55225/14, § 37.",
                                                      "Compare Art. 10 with 2.5 per cent."]


def test_parenthesised_plain_number_is_not_a_citation():
    sentences = parse_answer("The Court listed (1) legality and (2) necessity.", SHOWN)
    assert sentences[0].citations == []
    assert sentences[0].text == "The Court listed (1) legality and (2) necessity."


