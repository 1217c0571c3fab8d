"""Which cases are a CaseFacts claim's gold evidence: the paper's rule and caseforge's, and what happens to
names the corpus lacks."""
from __future__ import annotations

import json

import pytest

from caseforge.tasks.casefacts.eval import retrieval
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.claims import load_claims

NAMES = CaseNameIndex([("101", "Riley v. California"), ("102", "Obergefell v. Hodges"),
                       ("103", "Plessy v. Ferguson"), ("104", "Brown v. Board of Education")])
CORPUS = {"101", "102", "103", "104"}
ROWS = [
    {"claim": "Segregated schools are fine when equal.", "case_name": ["Plessy v. Ferguson"],
     "overruling_case": "Brown v. Board of Education; Obergefell v. Hodges", "label": "Overruled"},
    {"claim": "Phones need a warrant.", "case_name": ["Riley v. California", "Marbury v. Madison"],
     "overruling_case": None, "label": "Supported"},
    {"claim": "Courts may review laws.", "case_name": ["Marbury v. Madison"], "overruling_case": None,
     "label": "Supported"},
]


def _claims(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(ROWS))
    claims, problems = load_claims(path)
    assert problems == []
    return claims


def test_overruling_case_names_joined_by_semicolons_are_each_gold(tmp_path):
    claims = _claims(tmp_path)
    assert claims[0].overruling_cases == ["Brown v. Board of Education", "Obergefell v. Hodges"]
    prepared = retrieval.prepare(claims, NAMES, CORPUS, gold_rule="caseforge")
    plessy = prepared[0]
    assert plessy.skip_reason is None and plessy.gold.missing == []
    assert plessy.gold.cases == [frozenset({"103"}), frozenset({"104"}), frozenset({"102"})]


def test_missing_gold_miss_scores_claims_with_no_resolvable_gold_as_misses(tmp_path):
    prepared = retrieval.prepare(_claims(tmp_path), NAMES, CORPUS, missing_gold="miss")
    marbury = prepared[2]
    assert marbury.skip_reason is None            # "count as misses", as the option's help says
    scores = retrieval.score_claim(marbury, ["101", "102", "103"])
    assert scores["recall@1"] == scores["recall@10"] == scores["evidence_score"] == 0.0
    riley = prepared[1]
    assert riley.skip_reason is None and retrieval.score_claim(riley, ["101"])["recall@1"] == 0.5


def test_gold_rule_paper_uses_case_names_only_and_drops_names_missing_from_the_corpus(tmp_path):
    claims = _claims(tmp_path)
    assert retrieval.DEFAULT_GOLD_RULE == "paper"
    paper = retrieval.prepare(claims, NAMES, CORPUS)
    # the overruling cases are not gold under the paper's rule
    assert paper[0].gold.cases == [frozenset({"103"})] and paper[0].skip_reason is None
    # a name the corpus lacks is dropped, not counted as a miss: Riley alone is the gold
    assert paper[1].skip_reason is None and paper[1].gold.cases == [frozenset({"101"})]
    assert paper[1].gold.dropped == ["Marbury v. Madison"]
    assert retrieval.score_claim(paper[1], ["101"])["recall@1"] == 1.0
    # nothing left: the claim is left out, as the authors' code does
    assert paper[2].skip_reason and "Marbury v. Madison" in paper[2].skip_reason
    caseforge = retrieval.prepare(claims, NAMES, CORPUS, gold_rule="caseforge")
    assert caseforge[0].gold.cases[1:] == [frozenset({"104"}), frozenset({"102"})]
    assert caseforge[1].skip_reason is not None          # caseforge's default for missing names: skip
    with pytest.raises(ValueError, match="gold rule"):
        retrieval.prepare(claims, NAMES, CORPUS, gold_rule="mine")
    assert "case_name only" in retrieval.describe_gold_rule("paper", None)
