"""The release format every benchmark writes (caseforge.release): Parquet + JSONL + card + Croissant + manifest,
byte-identical when nothing changed. The four benchmarks' own writers: test_benchmark_releases.py."""
import datetime as dt
import functools
import json
import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from caseforge import release as release_module
from caseforge.release import LICENCES, MANIFEST, read_manifest, validate_croissant, verify_release

COLUMNS = {"case_id": "Oyez id", "name": "case name", "decided_date": "decision date", "votes": "votes",
           "citations": "U.S. Reports citations"}
# the toy tables' meanings and date column; fresh cutoff and window fixed, so no settings file is read
write_release = functools.partial(release_module.write_release, columns=COLUMNS, date_column="decided_date",
                                  fresh_after="", fresh_months=12)


def cases_frame():
    return pd.DataFrame({
        "case_id": [3, 1, 2],
        "name": ["C v. D", "Roe v. Wade", "A | B"],
        "decided_date": [dt.date(2016, 6, 27), dt.date(1973, 1, 22), None],
        "votes": [7.0, math.nan, 5.5],
        "citations": [["1 U.S. 1", "2 U.S. 2"], [], None],
    })


def payloads_frame():
    return pd.DataFrame({"source": ["oyez", "oyez"], "key": ["1972/70-18", "2015/14-1"], "sha256": ["bb", "aa"]})


CARD = {"title": "toy", "description": "three cases", "sources": ["oyez", "nowhere"], "licence": "oyez",
        "language": ["en"], "task_categories": ["text-classification"], "tags": ["legal"],
        "citation": "@misc{oyez, title = {Oyez}}", "intended_use": "Trying the writer.", "limitations": "Three rows.",
        "distributions": {"label": {"SUPPORTS": 2, "REFUTES": 1}},
        "quality": [{"table_name": "cases", "suite": "cases", "success": True, "rows_checked": 3,
                     "rows_failed": 0, "batch_rejected": False}],
        "stages": [{"stage": "generate", "model": "qwen-x", "template_id": "t/gen.j2", "template_sha": "abc"}]}


def tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_writing_twice_gives_identical_bytes_whatever_the_row_order(tmp_path):
    first = write_release(tmp_path / "a" / "toy", "toy", {"cases": cases_frame()}, CARD,
                          source_payloads=payloads_frame())
    shuffled = cases_frame().iloc[[2, 0, 1]]
    second = write_release(tmp_path / "b" / "toy", "toy", {"cases": shuffled}, CARD,
                           source_payloads=payloads_frame()[::-1])
    assert tree_bytes(first.path) == tree_bytes(second.path)
    assert first.manifest_sha256 == second.manifest_sha256
    # rewriting in place replaces the old release and keeps the same bytes
    before = tree_bytes(first.path)
    again = write_release(tmp_path / "a" / "toy", "toy", {"cases": cases_frame()}, CARD,
                          source_payloads=payloads_frame())
    assert tree_bytes(again.path) == before
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["toy"]  # no temp folders left behind


def test_a_changed_row_changes_the_data_files_and_the_manifest(tmp_path):
    base = write_release(tmp_path / "a" / "toy", "toy", {"cases": cases_frame()}, CARD)
    changed = cases_frame()
    changed.loc[0, "name"] = "C v. E"
    other = write_release(tmp_path / "b" / "toy", "toy", {"cases": changed}, CARD)
    assert base.files["data/cases.parquet"] != other.files["data/cases.parquet"]
    assert base.files["data/cases.jsonl"] != other.files["data/cases.jsonl"]
    assert base.manifest_sha256 != other.manifest_sha256


def test_contents_card_and_manifest(tmp_path):
    release = write_release(tmp_path / "toy", "toy", {"cases": cases_frame()}, CARD, source_payloads=payloads_frame())
    assert release.path == (tmp_path / "toy").resolve()    # the folder given, not a subfolder of it
    rows = [json.loads(line) for line in (release.path / "data/cases.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in rows] == [1, 2, 3]
    assert rows[0] == {"case_id": 1, "name": "Roe v. Wade", "decided_date": "1973-01-22", "votes": None,
                       "citations": []}
    table = pq.read_table(release.path / "data/cases.parquet")
    assert table.num_rows == 3 and table.schema.metadata is None
    assert table.column("case_id").to_pylist() == [1, 2, 3]

    card = (release.path / "README.md").read_text()
    assert "| cases | 3 |" in card
    assert "| SUPPORTS | 2 | 66.7% |" in card
    assert "| oyez | " + LICENCES["oyez"] + " |" in card
    assert "| decided_date | date32[day] | decision date |" in card
    assert "@misc{oyez, title = {Oyez}}" in card and "Trying the writer." in card and "Three rows." in card
    assert "| nowhere | UNKNOWN: add it to caseforge.release.LICENCES |" in card
    assert "| generate | qwen-x | t/gen.j2 | abc |" in card
    assert "2 upstream payloads" in card
    assert (release.path / "provenance/source_payloads.tsv").read_text().splitlines() == [
        "source\tkey\tsha256", "oyez\t1972/70-18\tbb", "oyez\t2015/14-1\taa"]

    manifest = read_manifest(release.path)
    assert set(manifest) == {"README.md", "croissant.json", "release.json", "data/cases.jsonl", "data/cases.parquet",
                             "data/fresh.jsonl", "data/fresh.parquet", "provenance/source_payloads.tsv"}
    assert verify_release(release.path) == []
    (release.path / "data/cases.jsonl").write_text("tampered\n")
    assert verify_release(release.path) == ["data/cases.jsonl: sha256 differs from the manifest"]


def test_bad_dataset_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="bad dataset name"):
        write_release(tmp_path, "../escape", {"cases": cases_frame()}, CARD)


def test_every_shared_source_has_a_licence():
    for source in ("oyez", "hudoc", "echr_guides", "cn", "casefacts", "aquaechr", "casegen", "barexam"):
        assert LICENCES[source]
    assert MANIFEST == "MANIFEST.sha256"


def test_the_card_opens_with_hugging_face_front_matter(tmp_path):
    release = write_release(tmp_path / "toy", "toy", {"cases": cases_frame()}, CARD)
    card = (release.path / "README.md").read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta == {"license": "cc-by-nc-4.0", "language": ["en"], "task_categories": ["text-classification"],
                    "size_categories": ["n<1K"], "pretty_name": "toy", "tags": ["legal"],
                    "configs": [{"config_name": "default", "data_files": [
                        {"split": "cases", "path": "data/cases.parquet"},
                        {"split": "fresh", "path": "data/fresh.parquet"}]}]}
    # dated by its data, versioned by its rows: no clock
    assert "data date 2016-06-27" in card
    assert json.loads((release.path / "release.json").read_text())["version"].startswith("2016.6.27+")


def test_a_column_without_a_meaning_is_refused(tmp_path):
    frame = cases_frame().assign(secret=[1, 2, 3])
    with pytest.raises(ValueError, match="no meaning for released column.*secret"):
        write_release(tmp_path / "toy", "toy", {"cases": frame}, CARD)
    assert not (tmp_path / "toy").exists()


def test_croissant_passes_mlcroissant_and_a_broken_one_fails(tmp_path):
    release = write_release(tmp_path / "toy", "toy", {"cases": cases_frame()}, CARD, source_payloads=payloads_frame())
    assert validate_croissant(release.path) == []
    doc = json.loads((release.path / "croissant.json").read_text())
    assert [d["contentUrl"] for d in doc["distribution"]] == [
        "data/cases.jsonl", "data/cases.parquet", "data/fresh.jsonl", "data/fresh.parquet",
        "provenance/source_payloads.tsv"]
    fields = {f["name"]: f for f in doc["recordSet"][0]["field"]}
    assert fields["decided_date"]["dataType"] == "sc:Date" and fields["citations"]["isArray"] is True
    assert fields["case_id"]["source"] == {"fileObject": {"@id": "data/cases.parquet"}, "extract": {"column": "case_id"}}

    def broken(change):
        copy = json.loads(json.dumps(doc))
        change(copy)
        (release.path / "croissant.json").write_text(json.dumps(copy))
        return validate_croissant(release.path)

    assert broken(lambda d: d["recordSet"][0]["field"][0]["source"].update(fileObject={"@id": "data/nowhere.parquet"}))
    assert broken(lambda d: d["recordSet"][0]["field"][0]["source"]["extract"].update(column="no_such_column"))
    assert broken(lambda d: d["recordSet"][0]["field"][0].update(dataType="sc:NoSuchType"))
    assert broken(lambda d: d.pop("@type"))
    (release.path / "croissant.json").write_text("{ not json")
    assert validate_croissant(release.path)


def test_the_fresh_cutoff_comes_from_the_setting_the_previous_release_or_the_newest_months(tmp_path):
    first = write_release(tmp_path / "toy", "toy", {"cases": cases_frame()}, CARD)
    meta = json.loads((first.path / "release.json").read_text())
    assert meta["fresh"] == {"cutoff": "2015-06-27", "rule": "newest_months", "rows": 1, "reason": meta["fresh"]["reason"]}
    # a setting wins
    fixed = write_release(tmp_path / "toy", "toy", {"cases": cases_frame()}, CARD, fresh_after="1970-01-01")
    assert [json.loads(line)["case_id"] for line in (fixed.path / "data/fresh.jsonl").read_text().splitlines()] == [1, 3]
    card = (fixed.path / "README.md").read_text()
    assert "after 1970-01-01: cutoff 1970-01-01 set by `[release] fresh_after`" in card
    # new rows after a previous release: fresh is what is newer than that release's newest date
    newer = pd.concat([cases_frame(), pd.DataFrame({"case_id": [4], "name": ["E v. F"], "decided_date": [dt.date(2020, 1, 2)],
                                                   "votes": [9.0], "citations": [[]]})], ignore_index=True)
    second = write_release(tmp_path / "toy", "toy", {"cases": newer}, CARD)
    meta = json.loads((second.path / "release.json").read_text())
    assert (meta["fresh"]["cutoff"], meta["fresh"]["rule"], meta["fresh"]["rows"]) == ("2016-06-27", "previous_release", 1)
    # no dated row: nothing is fresh, and the card says why (the column, null in every row, typed by the caller)
    undated = cases_frame().assign(decided_date=None)
    empty = write_release(tmp_path / "undated", "toy", {"cases": undated}, CARD, types={"decided_date": pa.date32()})
    assert (empty.path / "data/fresh.jsonl").read_text() == ""
    assert pq.read_schema(empty.path / "data/fresh.parquet").names == list(COLUMNS)
    assert "The fresh split is empty: no row has a source-document date." in (empty.path / "README.md").read_text()


def test_the_bytes_do_not_depend_on_thread_count_or_dict_order(tmp_path):
    before = pa.cpu_count()
    try:
        pa.set_cpu_count(1)
        one = write_release(tmp_path / "a" / "toy", "toy", {"cases": cases_frame()}, CARD)
        pa.set_cpu_count(4)
        reordered = dict(reversed(list(CARD.items())))
        many = release_module.write_release(tmp_path / "b" / "toy", "toy", {"cases": cases_frame()}, reordered,
                                            columns=dict(reversed(list(COLUMNS.items()))), date_column="decided_date",
                                            fresh_after="", fresh_months=12)
    finally:
        pa.set_cpu_count(before)
    assert tree_bytes(one.path) == tree_bytes(many.path)


def test_without_arguments_the_cutoff_comes_from_the_settings_release_table(tmp_path, monkeypatch):
    from caseforge.settings import overriding

    monkeypatch.chdir(tmp_path)                     # no ./caseforge.toml here
    monkeypatch.delenv("CASEFORGE_CONFIG", raising=False)
    monkeypatch.delenv("CASEFORGE_LLM_CONFIG", raising=False)
    plain = functools.partial(release_module.write_release, columns=COLUMNS, date_column="decided_date")
    default = plain(tmp_path / "default", "toy", {"cases": cases_frame()}, CARD)
    assert json.loads((default.path / "release.json").read_text())["fresh"]["cutoff"] == "2015-06-27"
    with overriding({"release": {"fresh_after": "1972-12-31", "fresh_months": 3}}):
        chosen = plain(tmp_path / "chosen", "toy", {"cases": cases_frame()}, CARD)
    assert json.loads((chosen.path / "release.json").read_text())["fresh"]["cutoff"] == "1972-12-31"
    with overriding({"release": {"fresh_months": 3}}):
        window = plain(tmp_path / "window", "toy", {"cases": cases_frame()}, CARD)
    assert json.loads((window.path / "release.json").read_text())["fresh"]["cutoff"] == "2016-03-27"


def test_jsonl_holds_json_nulls_and_iso_dates_and_every_column_is_typed(tmp_path):
    """The defect (issue 28): a missing integer was written "<NA>" and a missing date "NaT" (pandas' placeholders),
    a date as a midnight timestamp, and a column null in every row as type null."""
    frame = pd.DataFrame({"case_id": [1, 2], "name": ["A v. B", "C v. D"],
                          "decided_date": [dt.date(1973, 1, 22), None],
                          "votes": pd.array([7, None], dtype="Int32"),
                          "citations": [[], []]})
    with pytest.raises(ValueError, match=r"no type for column\(s\) citations \(list<item: null>\)"):
        write_release(tmp_path / "toy", "toy", {"cases": frame}, CARD)
    release = write_release(tmp_path / "toy", "toy", {"cases": frame}, CARD,
                            types={"citations": pa.list_(pa.string()), "decided_date": pa.date32()})
    lines = (release.path / "data" / "cases.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"case_id": 1, "name": "A v. B", "decided_date": "1973-01-22", "votes": 7, "citations": []},
        {"case_id": 2, "name": "C v. D", "decided_date": None, "votes": None, "citations": []}]
    schema = pq.read_schema(release.path / "data" / "cases.parquet")
    assert (str(schema.field("decided_date").type), str(schema.field("citations").type)) == (
        "date32[day]", "list<element: string>")


def test_a_member_its_type_lacks_is_refused_not_dropped(tmp_path):
    frame = cases_frame().assign(citations=[[{"volume": 1, "page": 2}], [], None])
    with pytest.raises(ValueError, match=r"citations\[\]\.page has no place in the type of citations"):
        write_release(tmp_path / "toy", "toy", {"cases": frame}, CARD,
                      types={"citations": pa.list_(pa.struct([("volume", pa.int64())]))})
