import json

import numpy as np
import pandas as pd
import pytest

from caseforge.tasks.casefacts.chains import overlap_groups
from caseforge.tasks.casefacts.dataset_gate import gate_dataset
from caseforge.embeddings import SentenceTransformerEmbedder
from caseforge.tasks.casefacts.embed import HashingEmbedder
from caseforge.tasks.casefacts.splits import Candidate, assign_splits, keep_one_per_fact


def test_chain_of_three_merges_around_most_similar_pair():
    groups = overlap_groups([("a", "b", 0.85), ("b", "c", 0.93), ("x", "y", 0.81)])
    assert [g.claim_ids for g in groups] == [("a", "b", "c"), ("x", "y")]
    assert groups[0].anchor == ("b", "c") and groups[0].anchor_similarity == pytest.approx(0.93)
    assert groups[1].anchor == ("x", "y")
    assert overlap_groups([]) == []


def test_chain_joins_components_through_shared_claims():
    groups = overlap_groups([("d", "e", 0.9), ("a", "b", 0.8), ("e", "a", 0.95)])
    assert len(groups) == 1 and groups[0].claim_ids == ("a", "b", "d", "e") and groups[0].anchor == ("a", "e")


def test_one_claim_per_fact_and_no_fact_across_splits():
    candidates = []
    for i in range(200):
        candidates += [Candidate(f"c{i}", f"f{i}", "SUPPORTED"), Candidate(f"c{i}~neg", f"f{i}", "REFUTED")]
    kept = keep_one_per_fact(candidates, seed=3)
    assert len(kept) == 200 and len({c.fact_id for c in kept}) == 200
    share_refuted = sum(c.label == "REFUTED" for c in kept) / 200
    assert 0.35 < share_refuted < 0.65                     # chosen at random, not always the first
    assert [c.claim_id for c in keep_one_per_fact(candidates, seed=3)] == [c.claim_id for c in kept]
    splits = assign_splits([c.fact_id for c in kept] + ["f1", "f1"], 0.25, seed=3)
    assert set(splits) == {f"f{i}" for i in range(200)}
    assert sum(v == "test" for v in splits.values()) == 50
    assert assign_splits(["only"], 0.2, 1) == {"only": "test"}


def test_hashing_embedder_is_unit_length_and_similarity_tracks_wording():
    vectors = HashingEmbedder().encode(["A state must give a free lawyer to the poor.",
                                        "A state need not give a free lawyer to the poor.",
                                        "Railway cars may be separated by race."])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_sentence_transformer_embedder_needs_an_existing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="embedding model folder not found"):
        SentenceTransformerEmbedder(tmp_path / "absent")


def _claims(rows):
    frame = pd.DataFrame(rows, columns=["claim_id", "fact_id", "claim", "label", "evidence_case_ids", "split"])
    frame["evidence_case_ids"] = frame["evidence_case_ids"].map(json.dumps)
    return frame


CASES = pd.DataFrame([{"case_id": 1, "name": "Gideon v. Wainwright", "first_party": "Clarence Earl Gideon",
                       "second_party": "Louie L. Wainwright"}])


def test_dataset_gate_catches_leaks_and_split_leakage():
    bad = _claims([
        ("a", "f1", "Gideon had a right to a lawyer in 1963.", "SUPPORTED", [1], "train"),
        ("b", "f1", "A poor defendant has no right to a lawyer.", "REFUTED", [1], "test"),
    ])
    reasons = gate_dataset(bad, CASES)
    assert any("more than one split" in r for r in reasons)
    assert any("claim a leaks identifiers" in r and "party name: Gideon" in r and "year: 1963" in r for r in reasons)
    good = _claims([("a", "f1", "A poor defendant charged with a felony gets a free lawyer.", "SUPPORTED", [1],
                     "train")])
    assert gate_dataset(good, CASES) == []


def test_dataset_gate_catches_length_artifact_and_label_imbalance():
    rows = [(f"s{i}", f"fs{i}", "A short true rule." + " x" * i, "SUPPORTED", [1], "train") for i in range(15)]
    rows += [(f"r{i}", f"fr{i}", "A much longer false statement about the law " * 4, "REFUTED", [1], "train")
             for i in range(6)]
    reasons = gate_dataset(_claims(rows), CASES)
    assert any("lengths differ" in r for r in reasons)
    only = [(f"s{i}", f"fs{i}", "A short true rule that holds.", "SUPPORTED", [1], "train") for i in range(25)]
    reasons = gate_dataset(_claims(only), CASES)
    assert any("SUPPORTED is 100%" in r for r in reasons) and any("no REFUTED" in r for r in reasons)
