"""The four release writers (scotus, casefacts, aquaechr, casegen) on one small warehouse: every released column
has a meaning, every row keeps its provenance and source-document date, croissant.json passes mlcroissant, the
fresh split follows its cutoff, and writing twice gives the same bytes."""
import json

import pyarrow.parquet as pq
import pytest
from release_clients import client_problems

from caseforge.release import (CROISSANT, FRESH, METADATA, NothingToRelease, read_manifest, validate_croissant,
                              verify_release)
from caseforge.tasks.aquaechr import release as aquaechr_release
from caseforge.tasks.casefacts import release as casefacts_release
from caseforge.tasks.casegen import release as casegen_release
from caseforge.tasks.oyez import release as scotus_release
from caseforge.warehouse.connection import connect

WRITERS = {"scotus": scotus_release, "casefacts": casefacts_release, "aquaechr": aquaechr_release,
           "casegen": casegen_release}
NOW = "TIMESTAMPTZ '2026-01-01 00:00:00+00'"

CITATIONS = json.dumps([{"sentence": "Article 2 protects the right to life (McCann, § 146).", "guide_para_no": "1",
                         "citations": [{"case_name": "McCann and Others v. the United Kingdom", "year": 1995,
                                        "itemid": "001-57943", "pinpoints": ["146"],
                                        "passages": [{"para_no": "146", "text": "The Court recalls ..."}]}]}])
INPUTS = json.dumps({"claims": "原告请求判令被告归还借款五万元。", "facts": "二〇一七年三月，被告向原告借款。",
                     "evidence": [{"name": "借条", "content": "今借到五万元", "event": "借款"}]})


def fill(con) -> None:
    """Three SCOTUS cases, two CaseFacts claims (one per split, one built by a merge), two AQuAECHR pairs (one
    removed), three CaseGen items from two dated judgments, with the payloads, build steps and LLM calls behind them."""
    con.execute(f"""
    INSERT INTO ops.raw_payloads (source, key, sha256, fetched_at, body) VALUES
      ('oyez', '1972/70-18', 'a1', {NOW}, 'x'), ('oyez', '2015/14-1', 'a2', {NOW}, 'x'),
      ('oyez', '2019/18-9', 'a3', {NOW}, 'x'), ('echr_guides', 'guide_art_2.csv', 'g1', {NOW}, 'x'),
      ('cn', 'dump.jsonl', 'c1', {NOW}, 'x');
    INSERT INTO curated.scotus_cases (case_id, name, term, decided_date, facts, question, conclusion, citation,
                                      raw_sha256, updated_at) VALUES
      (50613, 'Roe v. Wade', '1971', DATE '1973-01-22', 'facts', 'question?', 'conclusion', '410 U.S. 113', 'a1', {NOW}),
      (62001, 'Doe v. Roe', '2015', DATE '2016-06-27', 'facts', 'question?', 'conclusion', '579 U.S. 1', 'a2', {NOW}),
      (63001, 'Poe v. Moe', '2019', DATE '2020-06-15', 'facts', 'question?', 'conclusion', '590 U.S. ___', 'a3', {NOW});
    INSERT INTO curated.casefacts_claims VALUES
      ('c50613-0', 'f:c50613-0', 'Women have a constitutional right to choose abortion.', 'SUPPORTED',
       '[50613]', '[]', 'train'),
      ('c62001-0', 'f:c62001-0', 'States may not put undue burdens on abortion access.', 'SUPPORTED',
       '[62001, 63001]', '[]', 'test');
    INSERT INTO build.casefacts_kept_claims VALUES
      ('c50613-0', 50613, 'Women have a constitutional right to choose abortion.', 'generated'),
      ('c62001-0', 62001, 'A state may not burden abortion unduly.', 'generated');
    INSERT INTO ops.casefacts_build_steps VALUES
      (7, 'generate', 'gen-model', 'casefacts/generate_claims.j2', 'sha-gen', 2),
      (7, 'overlap_merge', 'gen-model', 'casefacts/merge_overlap.j2', 'sha-merge', 1),
      (7, 'factuality', 'check-model', 'casefacts/check_factuality.j2', 'sha-check', 2);
    INSERT INTO curated.guide_paragraphs (guide_id, para_no, text, guide_version_date, ordinal, raw_sha256,
                                          updated_at) VALUES
      ('guide_art_2', '1', 'Article 2 protects the right to life.', DATE '2023-08-31', 1, 'g1', {NOW});
    INSERT INTO curated.echr_judgments (itemid, judgment_date, raw_sha256, updated_at) VALUES
      ('001-57943', DATE '1995-09-27', 'h1', {NOW});
    INSERT INTO curated.aquaechr_qa (qa_id, guide_id, window_id, strategy, question, answer, citations,
                                     comprehensiveness, conciseness, fluency, kept, n_answer_sentences,
                                     n_cited_paragraphs, updated_at) VALUES
      ('qa1', 'guide_art_2', 'guide_art_2:1-1', 'i', 'What does Article 2 protect?',
       'Article 2 protects the right to life (McCann, § 146).', '{CITATIONS}', 5, 5, 5, true, 1, 1, {NOW}),
      ('qa2', 'guide_art_2', 'guide_art_2:1-1', 'ii', 'Removed?', 'x', '[]', 1, 1, 1, false, 1, 0, {NOW});
    INSERT INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request, status, attempts,
                               created_at) VALUES
      ('i1', 'aquaechr-question-i', 'replay', 'q-model', 'aquaechr/question_single.j2', 'sha-q',
       '{{"key": "qa1"}}', 'ok', 1, {NOW}),
      ('i2', 'aquaechr-judge', 'replay', 'j-model', 'aquaechr/judge.j2', 'sha-j', '{{"key": "qa1"}}', 'ok', 1, {NOW});
    INSERT INTO curated.cn_judgments (doc_id, court, judgment_date, case_year, source_format, full_text, complete,
                                      content_sha256, raw_sha256, raw_key, updated_at) VALUES
      ('d1', '某某区人民法院', DATE '2017-05-02', 2017, 'jsonl', '全文', true, 'cs1', 'c1', 'dump.jsonl', {NOW}),
      ('d2', '某某市中级人民法院', DATE '2018-05-08', 2018, 'jsonl', '全文', true, 'cs2', 'c1', 'dump.jsonl', {NOW});
    INSERT INTO curated.casegen_items VALUES
      ('d1:facts', 'd1', 'facts', '{INPUTS}', '经审理查明……', 'cn_judgments', 1, 1, 'h-d1f', {NOW}),
      ('d2:facts', 'd2', 'facts', '{INPUTS}', '经审理查明……', 'cn_judgments', 1, 1, 'h-d2f', {NOW}),
      ('d2:judgment', 'd2', 'judgment', '{INPUTS}', '判决如下……', 'cn_judgments', 1, 1, 'h-d2j', {NOW});
    """)


@pytest.fixture
def warehouse(db_path):
    con = connect(db_path)
    try:
        fill(con)
    finally:
        con.close()
    return db_path


def write_all(db_path, root):
    con = connect(db_path)
    try:
        return {name: module.write(con, root / name) for name, module in WRITERS.items()}
    finally:
        con.close()


def tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def rows(release, split):
    return [json.loads(line) for line in (release.path / "data" / f"{split}.jsonl").read_text().splitlines()]


def test_every_writer_gives_the_same_bytes_twice_wherever_it_writes(warehouse, tmp_path):
    first = write_all(warehouse, tmp_path / "a")
    second = write_all(warehouse, tmp_path / "b" / "elsewhere")
    for name in WRITERS:
        assert tree_bytes(first[name].path) == tree_bytes(second[name].path), name
    # rewriting in place (a previous release of the same rows is there): same bytes, same fresh cutoff
    again = write_all(warehouse, tmp_path / "a")
    for name in WRITERS:
        assert tree_bytes(again[name].path) == tree_bytes(first[name].path), name


def test_every_release_verifies_and_its_croissant_passes_mlcroissant(warehouse, tmp_path):
    written = write_all(warehouse, tmp_path)
    for name, release in written.items():
        assert verify_release(release.path) == [], name
        assert {CROISSANT, METADATA, "README.md", f"data/{FRESH}.parquet"} <= set(read_manifest(release.path)), name
        assert validate_croissant(release.path) == [], name
        doc = json.loads((release.path / CROISSANT).read_text())
        assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
        assert doc["datePublished"] == json.loads((release.path / METADATA).read_text())["data_date"]
        files = {d["contentUrl"]: d["sha256"] for d in doc["distribution"]}
        assert {rel: sha for rel, sha in read_manifest(release.path).items() if rel in files} == files


def test_every_released_column_has_a_meaning(warehouse, tmp_path):
    written = write_all(warehouse, tmp_path)
    for name, release in written.items():
        meanings = WRITERS[name].COLUMNS
        for parquet in sorted((release.path / "data").glob("*.parquet")):
            columns = pq.read_schema(parquet).names
            assert [c for c in columns if not meanings.get(c)] == [], f"{name}: {parquet.name}"
        released = set(pq.read_schema(release.path / "data" / f"{FRESH}.parquet").names)
        assert set(meanings) - released == set(), f"{name}: meanings for columns it does not release"
        card = (release.path / "README.md").read_text()
        assert all(f"| {c} | " in card for c in released)


def test_rows_keep_provenance_and_source_dates(warehouse, tmp_path):
    written = write_all(warehouse, tmp_path)
    train, test = rows(written["casefacts"], "train"), rows(written["casefacts"], "test")
    assert train[0]["source_date"].startswith("1973-01-22") and train[0]["source_payload_sha256"] == ["a1"]
    assert (train[0]["claim_stage"], train[0]["model"], train[0]["prompt_sha256"]) == ("generate", "gen-model", "sha-gen")
    # the newest evidence case dates the claim; its text differs from the kept claim's: an overlap merge wrote it
    assert test[0]["source_date"].startswith("2020-06-15") and test[0]["source_payload_sha256"] == ["a2", "a3"]
    assert (test[0]["claim_stage"], test[0]["prompt_sha256"]) == ("overlap_merge", "sha-merge")
    [pair] = rows(written["aquaechr"], "aquaechr_qa")
    assert pair["qa_id"] == "qa1" and pair["source_date"].startswith("2023-08-31")
    assert pair["newest_cited_judgment_date"].startswith("1995-09-27") and pair["source_payload_sha256"] == ["g1"]
    assert (pair["model"], pair["prompt_sha256"], pair["judge_model"], pair["judge_prompt_sha256"]) == (
        "q-model", "sha-q", "j-model", "sha-j")
    aquaechr_card = (written["aquaechr"].path / "README.md").read_text()
    assert "| aquaechr-question-i | q-model | aquaechr/question_single.j2 | sha-q |" in aquaechr_card
    assert "| aquaechr-judge | j-model | aquaechr/judge.j2 | sha-j |" in aquaechr_card
    items = rows(written["casegen"], "casegen_items")
    assert {(i["item_id"], i["judgment_date"][:10], i["source_payload_sha256"]) for i in items} == {
        ("d1:facts", "2017-05-02", "c1"), ("d2:facts", "2018-05-08", "c1"), ("d2:judgment", "2018-05-08", "c1")}
    card = (written["casegen"].path / "README.md").read_text()
    assert card.startswith("---\nlicense: cc-by-nc-sa-4.0\nlanguage:\n- zh\n")
    assert "  - split: casegen_items\n    path: data/casegen_items.parquet\n" in card


def test_the_fresh_split_is_cut_on_the_previous_release_of_the_folder(warehouse, tmp_path):
    first = write_all(warehouse, tmp_path)
    # no previous release: the 12 months before the newest source-document date
    assert [r["case_id"] for r in rows(first["scotus"], FRESH)] == [63001]
    assert json.loads((first["scotus"].path / METADATA).read_text())["fresh"]["cutoff"] == "2019-06-15"
    assert [r["item_id"] for r in rows(first["casegen"], FRESH)] == ["d2:facts", "d2:judgment"]
    assert [r["claim_id"] for r in rows(first["casefacts"], FRESH)] == ["c62001-0"]
    con = connect(warehouse)
    try:
        con.execute(f"""INSERT INTO curated.scotus_cases (case_id, name, decided_date, raw_sha256, updated_at)
                        VALUES (64001, 'New v. Case', DATE '2021-03-01', 'a4', {NOW})""")
        second = scotus_release.write(con, tmp_path / "scotus")
    finally:
        con.close()
    # new rows: fresh is what is newer than the previous release's newest date, and the card says so
    assert [r["case_id"] for r in rows(second, FRESH)] == [64001]
    meta = json.loads((second.path / METADATA).read_text())
    assert meta["fresh"]["cutoff"] == "2020-06-15" and meta["fresh"]["rule"] == "previous_release"
    assert meta["data_date"] == "2021-03-01" and meta["version"].startswith("2021.3.1+")
    assert "after 2020-06-15: the newest source-document date of the previous release" in (
        second.path / "README.md").read_text()


def test_an_aquaechr_warehouse_keeping_no_pair_says_why_nothing_is_released(warehouse, tmp_path):
    con = connect(warehouse)
    try:
        con.execute("UPDATE curated.aquaechr_qa SET kept = false, removal_reason = CASE qa_id "
                    "WHEN 'qa1' THEN 'low_quality (cascade: window dropped)' ELSE 'duplicate_question: of qa1' END")
        with pytest.raises(NothingToRelease) as caught:
            aquaechr_release.write(con, tmp_path / "aquaechr")
        con.execute("DELETE FROM curated.aquaechr_qa")
        with pytest.raises(NothingToRelease, match="has no pairs: run `caseforge build aquaechr` first"):
            aquaechr_release.write(con, tmp_path / "aquaechr")
    finally:
        con.close()
    assert str(caught.value).startswith("curated.aquaechr_qa keeps none of its 2 pairs (removed: "
                                        "duplicate_question 1, low_quality 1); the judge removed them as low quality")
    assert not (tmp_path / "aquaechr").exists()


def test_every_release_loads_with_the_clients_people_use(warehouse, tmp_path):
    """The defects (issue 28): the scotus JSONL held pandas placeholders ("<NA>" for a missing vote count, "NaT"
    for a missing date), which datasets, polars.read_ndjson and pyarrow.json refuse; CaseFacts typed
    overruling_case_ids list<null> (no claim is OVERRULED), CaseGen typed the members of inputs.evidence null
    (judgments name their evidence but rarely give its content)."""
    names_only = json.dumps({"claims": "原告请求判令被告归还借款五万元。", "facts": "二〇一七年三月，被告向原告借款。",
                             "evidence": [{"name": "借条", "content": None, "event": None}]}, ensure_ascii=False)
    con = connect(warehouse)
    try:
        con.execute("UPDATE curated.casegen_items SET inputs = ?", [names_only])
    finally:
        con.close()
    written = write_all(warehouse, tmp_path / "releases")
    for name, release in written.items():
        assert client_problems(release.path, tmp_path / "hf-cache") == [], name
    roe = next(r for r in rows(written["scotus"], "scotus_cases") if r["case_id"] == 50613)
    assert roe["decided_date"] == "1973-01-22" and roe["argued_date"] is None and roe["majority_vote"] is None
    schema = pq.read_schema(written["casefacts"].path / "data" / "test.parquet")
    assert str(schema.field("overruling_case_ids").type) == "list<element: int64>"
    item = rows(written["casegen"], "casegen_items")[0]
    assert item["inputs"]["evidence"] == [{"name": "借条", "content": None, "event": None}]


def test_cards_say_only_what_is_true_of_the_release_in_hand(warehouse, tmp_path):
    """The defects (issue 28): the CaseFacts card said "Train on `train`" of a release without a train split; the
    scotus card showed a "Distribution: winning_party_is_first" (no such column) and disposition "(none)" beside
    "none" without saying how they differ."""
    con = connect(warehouse)
    try:
        con.execute("DELETE FROM curated.casefacts_claims WHERE split = 'train'")
        con.execute("UPDATE curated.scotus_cases SET disposition = 'none' WHERE case_id = 62001")
        con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (50613, 'Roe v. Wade', 'l1')")
        con.execute("UPDATE curated.aquaechr_qa SET removal_reason = 'low_quality' WHERE qa_id = 'qa2'")
    finally:
        con.close()
    written = write_all(warehouse, tmp_path)
    casefacts = (written["casefacts"].path / "README.md").read_text()
    assert "Train on `train`" not in casefacts and "This release has only the `test` split (1 claims)" in casefacts
    scotus = (written["scotus"].path / "README.md").read_text()
    assert "winning_party_is_first" not in scotus
    for value in ("none", "(empty: not in the legacy table)", "(empty in the legacy table)"):
        assert f"| {value} | 1 |" in scotus and f"`{value}`" in scotus
    aquaechr = (written["aquaechr"].path / "README.md").read_text()
    assert "`low_quality`: the judge scored" in aquaechr
