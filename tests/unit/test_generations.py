"""One store mechanism (issue 40 item 4): the published mirror and releases on a store keep generations the same
way (caseforge.generations: one pointer, current.json, in one format, written last; pruning; foreign prefixes
refused), and what an earlier caseforge wrote stays readable: a mirror's CURRENT.json with whole-number
generations, a release's four-field current.json. Folder stores on this machine: no server (the S3 side of both
is tests/integration/test_mirror_publish.py and tests/integration/test_release_store.py)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from caseforge import generations
from caseforge.generations import POINTER, NotAPointer, Pointer
from caseforge.release.stored import StoredRelease, read_current, upload_release
from caseforge.settings import load_settings
from caseforge.store import StoreError, open_store
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import MIRROR_MANIFEST, export_curated_parquet
from caseforge.warehouse.published import find_published, publish_mirror


def test_the_pointer_is_one_format_for_every_kind_and_reads_back_as_written(tmp_path):
    store = open_store(tmp_path / "prefix")
    written = Pointer("release", "v1", "v1/MANIFEST.sha256", "v0", {"dataset": "scotus"})
    generations.write_pointer(store, written)
    assert json.loads(store.get(POINTER)) == {"kind": "release", "generation": "v1", "manifest": "v1/MANIFEST.sha256",
                                              "previous": "v0", "dataset": "scotus"}
    assert generations.read_pointer(store, "release") == written
    with pytest.raises(NotAPointer, match="points to a caseforge release, not a mirror"):
        generations.read_pointer(store, "mirror")
    store.put(POINTER, b"{not json")
    with pytest.raises(NotAPointer, match="not one caseforge wrote"):
        generations.read_pointer(store, "release")


def test_pruning_keeps_the_kept_generations_the_pointer_and_what_they_list(tmp_path):
    store = open_store(tmp_path / "prefix")
    names = ["current.json", ".caseforge-check-0123", "gens/1.json", "gens/2.json", "gens/3.json", "data/a", "data/b",
             "data/c"]
    for name in names:
        store.put(name, b"x")
    gone = generations.prune(store, names, keep={"2", "3"},
                             generation_of=lambda n: n[5:-5] if n.startswith("gens/") else None,
                             listed={"data/b"}, shared=lambda n: n.startswith("data/"))
    assert gone == ["data/a", "data/c", "gens/1.json"]
    assert sorted(store.list()) == ["current.json", "data/b", "gens/2.json", "gens/3.json"]


# --- the published mirror ---

def _mirror(tmp_path: Path, version: str):
    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    con.execute("INSERT OR REPLACE INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, ?, 'x')", [version])
    export_curated_parquet(con, settings.parquet_dir)
    con.close()
    return settings.parquet_dir


def _as_an_earlier_caseforge_left_it(store) -> None:
    """The pointer as caseforge wrote it before issue 40: CURRENT.json, generations as whole numbers."""
    pointer = json.loads(store.get(POINTER))
    store.put("CURRENT.json", json.dumps({**{k: v for k, v in pointer.items() if k != "kind"},
                                          "generation": int(pointer["generation"]), "previous": None}).encode())
    store.delete(POINTER)


def test_a_mirror_an_earlier_caseforge_published_is_read_and_the_next_publish_moves_its_pointer(tmp_path):
    store = open_store(tmp_path / "published")
    assert publish_mirror(_mirror(tmp_path, "v1"), store).generation == 1
    _as_an_earlier_caseforge_left_it(store)
    assert sorted(n for n in store.list() if not n.startswith("data/")) == ["CURRENT.json",
                                                                           "generations/00000001.json"]

    old = find_published(store)
    assert old.generation == 1 and "curated.scotus_legacy" in old.files

    report = publish_mirror(_mirror(tmp_path, "v2"), store)
    assert report.generation == 2 and not report.unchanged
    names = store.list()
    assert POINTER in names and "CURRENT.json" not in names     # an earlier caseforge's reader now finds none
    pointer = json.loads(store.get(POINTER))
    assert (pointer["kind"], pointer["generation"], pointer["previous"]) == ("mirror", "00000002", "00000001")
    assert pointer["manifest"] == "generations/00000002.json" and pointer["source"]["generation"]
    assert find_published(store).generation == 2
    assert "generations/00000001.json" in names                  # the one before: a reader may still read it


def test_a_mirror_publish_refuses_a_prefix_that_holds_a_release(tmp_path):
    store = open_store(tmp_path / "published")
    generations.write_pointer(store, Pointer("release", "v1", "v1/MANIFEST.sha256", None, {"dataset": "scotus"}))
    with pytest.raises(StoreError, match="not a published caseforge mirror: its current.json points to a caseforge "
                                         "release, not a mirror"):
        publish_mirror(_mirror(tmp_path, "v1"), store)
    assert store.list() == [POINTER]


# --- releases on a store ---

def _staged_release(folder: Path, version: str) -> Path:
    (folder / "data").mkdir(parents=True)
    (folder / "release.json").write_text(json.dumps({"dataset": "scotus", "version": version}))
    (folder / "data" / "rows.jsonl").write_text(f'{{"version": "{version}"}}\n')
    lines = [f"{hashlib.sha256((folder / rel).read_bytes()).hexdigest()}  {rel}" for rel in
             ("data/rows.jsonl", "release.json")]
    (folder / "MANIFEST.sha256").write_text("\n".join(lines) + "\n")
    return folder


def test_a_release_pointer_an_earlier_caseforge_wrote_is_read_and_replaced_by_the_next_release(tmp_path):
    store = open_store(tmp_path / "releases")
    first = _staged_release(tmp_path / "first", "1")
    for path in first.rglob("*"):
        if path.is_file():
            store.put(f"v1/{path.relative_to(first).as_posix()}", path.read_bytes())
    sha = hashlib.sha256((first / "MANIFEST.sha256").read_bytes()).hexdigest()
    store.put(POINTER, json.dumps({"dataset": "scotus", "version": "1", "folder": "v1", "manifest_sha256": sha},
                                  indent=2).encode())                  # current.json as written before issue 40

    old = read_current(store)
    assert (old["folder"], old["generation"], old["manifest"], old["previous"]) == ("v1", "v1", "v1/MANIFEST.sha256",
                                                                                    None)
    upload_release(StoredRelease(store, "scotus", old), _staged_release(tmp_path / "second", "2"))
    new = json.loads(store.get(POINTER))
    assert new == {"kind": "release", "generation": "v2", "manifest": "v2/MANIFEST.sha256", "previous": "v1",
                   "dataset": "scotus", "version": "2", "folder": "v2",
                   "manifest_sha256": hashlib.sha256((tmp_path / "second" / "MANIFEST.sha256").read_bytes()
                                                     ).hexdigest()}
    assert {n.split("/", 1)[0] for n in store.list()} == {POINTER, "v1", "v2"}     # the previous release kept

    upload_release(StoredRelease(store, "scotus", read_current(store)), _staged_release(tmp_path / "third", "3"))
    assert {n.split("/", 1)[0] for n in store.list()} == {POINTER, "v2", "v3"}     # older ones pruned
    assert read_current(store)["previous"] == "v2"
