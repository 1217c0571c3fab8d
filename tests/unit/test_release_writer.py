"""The release writer: Parquet + JSONL + card + manifest, byte-identical when nothing changed."""
import datetime as dt
import json
import math

import pandas as pd
import pyarrow.parquet as pq
import pytest

from caseforge.release import LICENCES, MANIFEST, read_manifest, verify_release, write_release


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


CARD = {"title": "toy", "description": "three cases", "sources": ["oyez", "nowhere"],
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
    assert "| nowhere | UNKNOWN: add it to caseforge.release.LICENCES |" in card
    assert "| generate | qwen-x | t/gen.j2 | abc |" in card
    assert "2 upstream payloads" in card
    assert (release.path / "provenance/source_payloads.tsv").read_text().splitlines() == [
        "source\tkey\tsha256", "oyez\t1972/70-18\tbb", "oyez\t2015/14-1\taa"]

    manifest = read_manifest(release.path)
    assert set(manifest) == {"README.md", "data/cases.jsonl", "data/cases.parquet", "provenance/source_payloads.tsv"}
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
