"""A payload this parser version already turned into curated rows is not parsed again (issue 29): a re-run on
the same files parses and gates nothing and still counts what was unchanged. A new parser version or
--reparse parses again and makes the rows again; a payload whose rows in curated are no longer the ones it left
is tried again. A payload with a quarantined row is recorded with it (issue 36): not parsed again, its record a
known problem (tests/samples/test_known_problems.py; a rejected batch is tried again there)."""
from __future__ import annotations

import json
import shutil

import pytest

from caseforge import file_digests
from caseforge.settings import load_settings
from caseforge.tasks.cn import ingest as cn
from caseforge.tasks.hudoc import ingest as hudoc
from caseforge.tasks.oyez import ingest as oyez
from caseforge.warehouse.connection import connect

pytestmark = pytest.mark.samples

CASES = ("2015.14-1382.json", "2015.14-181.json", "2015.14-232.json")


@pytest.fixture
def case_dir(samples_dir, tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in CASES:
        shutil.copy(samples_dir / "oyez" / "cases" / name, folder / name)
    return folder


@pytest.fixture
def parses(monkeypatch):
    """Every payload the Oyez parser is handed (its sha256), in order."""
    seen = []
    real = oyez.parse_case

    def counting(body, raw_sha256):
        seen.append(raw_sha256)
        return real(body, raw_sha256=raw_sha256)

    monkeypatch.setattr(oyez, "parse_case", counting)
    return seen


def _curated(settings, column: str) -> list:
    con = connect(settings.db_path)
    try:
        return con.execute(f"SELECT case_id, {column} FROM curated.scotus_cases ORDER BY case_id").fetchall()
    finally:
        con.close()


def test_a_rerun_on_the_same_files_parses_and_gates_nothing(case_dir, tmp_path, parses):
    settings = load_settings(tmp_path / "cf.duckdb")
    first = oyez.refresh(settings, from_dir=str(case_dir))
    assert (first.counts["new"], first.counts["parsed"], len(parses)) == (3, 3, 3)

    again = oyez.refresh(settings, from_dir=str(case_dir))
    assert len(parses) == 3, "the re-run parsed again"
    counts = again.counts
    assert (counts["new"], counts["changed"], counts.get("parsed", 0)) == (0, 0, 0), counts
    assert (counts["unchanged"], counts["payloads_unchanged"]) == (3, 3), counts
    con = connect(settings.db_path)
    gates = con.execute("SELECT run_id, count(*) FROM ops.quality_results GROUP BY ALL").fetchall()
    con.close()
    assert [run for run, _ in gates] == [first.run_id], "the re-run went through the gate"


def test_a_new_parser_version_or_reparse_parses_again_and_its_rows_land(case_dir, tmp_path, parses, monkeypatch):
    settings = load_settings(tmp_path / "cf.duckdb")
    oyez.refresh(settings, from_dir=str(case_dir))
    names = _curated(settings, "name")

    real = oyez.parse_case
    monkeypatch.setattr(oyez, "PARSER", oyez.PARSER + "-next")
    monkeypatch.setattr(oyez, "parse_case", lambda body, raw_sha256: {
        **real(body, raw_sha256=raw_sha256), "name": "renamed by the next parser"})
    next_version = oyez.refresh(settings, from_dir=str(case_dir))
    assert next_version.counts["remade"] == 3, next_version.counts
    assert {name for _, name in _curated(settings, "name")} == {"renamed by the next parser"}

    monkeypatch.setattr(oyez, "parse_case", real)    # the next version parses as this one did
    forced = oyez.refresh(settings, from_dir=str(case_dir), reparse=True)
    assert (forced.counts["parsed"], forced.counts["remade"]) == (3, 3), forced.counts
    assert _curated(settings, "name") == names
    assert oyez.refresh(settings, from_dir=str(case_dir)).counts.get("parsed", 0) == 0


def test_a_payload_with_a_quarantined_row_is_known_and_one_whose_rows_changed_is_tried_again(case_dir, tmp_path,
                                                                                            parses):
    settings = load_settings(tmp_path / "cf.duckdb")
    bad = case_dir / CASES[0]
    data = json.loads(bad.read_text())
    data["name"] = None                                   # the gate quarantines a case without a name
    bad.write_text(json.dumps(data))
    first = oyez.refresh(settings, from_dir=str(case_dir))
    assert (first.counts["new"], first.counts["quarantined"]) == (2, 1), first.counts

    parses.clear()
    again = oyez.refresh(settings, from_dir=str(case_dir))
    assert parses == [] and again.counts.get("quarantined", 0) == 0, (parses, again.counts)
    assert (again.counts["known_problems"], again.counts["known_problem_payloads"]) == (1, 1), again.counts

    # rows of a loaded payload replaced by something else (here by hand): that payload is parsed again
    con = connect(settings.db_path)
    con.execute("UPDATE curated.scotus_cases SET raw_sha256 = 'elsewhere', updated_at = now() "
                "WHERE case_id = (SELECT max(case_id) FROM curated.scotus_cases)")
    con.close()
    parses.clear()
    third = oyez.refresh(settings, from_dir=str(case_dir))
    assert len(parses) == 1 and third.counts["changed"] == 1, (parses, third.counts)
    assert third.counts["known_problems"] == 1, third.counts


def test_hudoc_bodies_and_metadata_are_not_parsed_again(samples_dir, tmp_path, monkeypatch):
    settings = load_settings(tmp_path / "cf.duckdb")
    parsed = []
    real = hudoc.parse_document
    monkeypatch.setattr(hudoc, "parse_document", lambda itemid, *a, **k: parsed.append(itemid) or real(itemid, *a, **k))
    first = hudoc.refresh(settings, from_dir=str(samples_dir / "hudoc"))
    assert first.counts["documents_parsed"] >= 1 and parsed
    parsed.clear()
    again = hudoc.refresh(settings, from_dir=str(samples_dir / "hudoc"))
    assert parsed == [], parsed
    counts = again.counts
    assert counts.get("documents_parsed", 0) == 0 and counts.get("judgments_loaded", 0) == 0, counts
    assert counts["paragraphs_unchanged"] == first.counts["paragraphs_loaded"], (first.counts, counts)
    assert (counts["new"], counts["changed"]) == (0, 0), counts


def test_a_rerun_on_the_same_dumps_reads_none_of_them_and_a_changed_one_is_read(samples_dir, tmp_path, monkeypatch):
    """The Chinese judgments' dump files, replayed night after night, are read and hashed only when new or changed
    (caseforge.file_digests, as HUDOC's bodies): at the real size a night read all 50 dumps (300 MB) to learn
    that 49 of them were the ones loaded before."""
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)       # the copies below were all made a moment ago
    folder = tmp_path / "cn"
    folder.mkdir()
    for name in ("cail2020_civil_fulltext.jsonl", "caseformer_criminal.jsonl"):
        shutil.copy(samples_dir / "cn" / name, folder / name)
    read = []
    real = cn.archive_file
    monkeypatch.setattr(cn, "archive_file", lambda archive, directory, path: read.append(path.name) or
                        real(archive, directory, path))
    settings = load_settings(tmp_path / "cf.duckdb")
    first = cn.refresh(settings, from_dir=str(folder))
    assert sorted(read) == ["cail2020_civil_fulltext.jsonl", "caseformer_criminal.jsonl"]
    assert first.counts["payloads_parsed"] == 2 and first.counts["files_hashed"] == 2, first.counts

    read.clear()
    again = cn.refresh(settings, from_dir=str(folder))
    assert read == [], "the re-run read dumps it had loaded before"
    assert again.counts["payloads_unchanged"] == 2 and "files_hashed" not in again.counts, again.counts

    dump = folder / "caseformer_criminal.jsonl"
    lines = dump.read_text(encoding="utf-8").splitlines(keepends=True)
    dump.write_text("".join(lines[:-1]), encoding="utf-8")          # one judgment fewer
    changed = cn.refresh(settings, from_dir=str(folder))
    assert read == ["caseformer_criminal.jsonl"]
    assert (changed.counts["payloads_parsed"], changed.counts["payloads_unchanged"]) == (1, 1), changed.counts


def test_a_rerun_on_the_same_case_files_reads_none_of_them(case_dir, tmp_path, monkeypatch):
    """Oyez's replayed case files, as CN's dumps and HUDOC's bodies: a file unchanged since it was hashed, whose
    content the archive holds under one case key that this parser loaded, is counted unchanged without being
    read. At the real size a 1% night read and hashed all 3,334 files, planned them in 34 batches and ran a task
    for each, to parse 33."""
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)
    settings = load_settings(tmp_path / "cf.duckdb")
    oyez.refresh(settings, from_dir=str(case_dir))
    read = []
    real = oyez.archive_replay_batch
    monkeypatch.setattr(oyez, "archive_replay_batch", lambda archive, paths, too_big=None: read.extend(
        p.name for p in paths) or real(archive, paths, too_big))
    again = oyez.refresh(settings, from_dir=str(case_dir))
    assert read == [], "the re-run read case files it had loaded before"
    counts = again.counts
    assert (counts["new"], counts["changed"], counts["unchanged"], counts["payloads_unchanged"]) == (0, 0, 3, 3), counts

    changed = case_dir / CASES[0]
    data = json.loads(changed.read_text(encoding="utf-8"))
    data["name"] = data["name"] + " (corrected)"
    changed.write_text(json.dumps(data), encoding="utf-8")
    third = oyez.refresh(settings, from_dir=str(case_dir))
    assert read == [CASES[0]]
    assert (third.counts["changed"], third.counts["payloads_unchanged"]) == (1, 2), third.counts
