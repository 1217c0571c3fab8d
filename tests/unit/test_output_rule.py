"""Nothing a user names as an output destroys data (issue 26): a release goes only into an empty or missing
folder, or replaces a folder holding a caseforge release of the same dataset; a replay file only replaces
a caseforge replay file, atomically; no output may be the warehouse, its WAL, its Parquet mirror or its run
folders, or lie inside them. Anything else is refused in one line, exit 2, and nothing is touched."""
from __future__ import annotations

import inspect
import json
import os
import shutil
import time

import pytest

from caseforge.cli import main
from caseforge.flows import nightly_runner
from caseforge.llm import LLMRequest, run_job
from caseforge.llm.types import Completion
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("caseforge: ") and "Traceback" not in err, err
    return lines[0]


class AnswerDouble:
    """An LLM backend double that answers every request with the same JSON."""
    name = "answer-double"
    model = "double-model"
    batch_size = 8

    def complete_batch(self, requests):
        return [Completion(text='{"value": 1}', latency_s=0.1) for _ in requests]


@pytest.fixture(scope="module")
def warehouse_template(tmp_path_factory):
    """data/cf.duckdb with one SCOTUS case, three cached LLM answers, a mirror and a run folder."""
    from pydantic import BaseModel

    class Number(BaseModel):
        value: int

    db = tmp_path_factory.mktemp("template") / "data" / "cf.duckdb"
    settings = load_settings(db)
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_cases (case_id, name, term, decided_date, raw_sha256, updated_at) "
                "VALUES (50606, 'Roe v. Wade', '1971', DATE '1973-01-22', 'ab', now())")
    requests = [LLMRequest(key=k, messages=[{"role": "user", "content": k}], template_id="t", template_sha="s")
                for k in ("a", "b", "c")]
    run_job(con, "demo/step", AnswerDouble(), requests, Number, max_attempts=1)
    export_curated_parquet(con, settings.parquet_dir)
    con.close()
    (settings.runs_dir / "nightly-1").mkdir(parents=True)
    (settings.runs_dir / "nightly-1" / "summary.md").write_text("the first night\n")
    return settings


@pytest.fixture
def warehouse(warehouse_template, tmp_path):
    """A copy of the template's data/ folder of this test's own."""
    shutil.copytree(warehouse_template.db_path.parent, tmp_path / "data", symlinks=True)
    return load_settings(tmp_path / "data" / warehouse_template.db_path.name)


def warehouse_intact(settings) -> bool:
    con = connect(settings.db_path, read_only=True)
    try:
        return con.execute("SELECT name FROM curated.scotus_cases").fetchall() == [("Roe v. Wade",)]
    finally:
        con.close()


def export(settings, out) -> int:
    return main(["export", "scotus", "--out", str(out), "--db", str(settings.db_path)])


def test_export_into_a_folder_holding_other_files_is_refused(warehouse, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious")
    assert export(warehouse, out) == 2
    line = one_line(capsys.readouterr().err)
    assert str(out) in line and "notes.txt" in line
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"] and (out / "notes.txt").read_text() == "precious"


def test_export_into_the_current_folder_is_refused(warehouse, tmp_path, capsys, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("my project")
    monkeypatch.chdir(project)
    assert export(warehouse, ".") == 2
    one_line(capsys.readouterr().err)
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]


def test_export_into_the_warehouse_folder_is_refused(warehouse, capsys):
    assert export(warehouse, warehouse.db_path.parent) == 2
    assert "warehouse" in one_line(capsys.readouterr().err)
    assert warehouse_intact(warehouse)


@pytest.mark.parametrize("where", ["mirror", "runs", "inside-mirror", "inside-runs", "warehouse-file", "archive",
                                   "inside-archive", "mirror-generations"])
def test_export_into_the_warehouses_own_folders_is_refused(warehouse, capsys, where):
    from caseforge.warehouse.mirror import mirror_generations

    (warehouse.archive_dir / "ab").mkdir(parents=True, exist_ok=True)
    (warehouse.archive_dir / "ab" / "ab12").write_bytes(b"an archived body")
    out = {"mirror": warehouse.parquet_dir, "runs": warehouse.runs_dir,
           "inside-mirror": warehouse.parquet_dir / "scotus", "inside-runs": warehouse.runs_dir / "nightly-1" / "rel",
           "warehouse-file": warehouse.db_path, "archive": warehouse.archive_dir,
           "inside-archive": warehouse.archive_dir / "scotus",
           "mirror-generations": mirror_generations(warehouse.parquet_dir)}[where]
    mirror_before = sorted(p.name for p in warehouse.parquet_dir.rglob("*"))
    assert export(warehouse, out) == 2
    one_line(capsys.readouterr().err)
    assert sorted(p.name for p in warehouse.parquet_dir.rglob("*")) == mirror_before
    assert (warehouse.runs_dir / "nightly-1" / "summary.md").read_text() == "the first night\n"
    assert not (warehouse.parquet_dir / "scotus").exists() and not (warehouse.runs_dir / "nightly-1" / "rel").exists()
    assert (warehouse.archive_dir / "ab" / "ab12").read_bytes() == b"an archived body"
    assert sorted(p.name for p in warehouse.archive_dir.iterdir()) == ["ab"]
    assert warehouse_intact(warehouse)


def test_export_to_a_symlink_is_refused_and_its_target_kept(warehouse, tmp_path, capsys):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert export(warehouse, link) == 2
    assert "symbolic link" in one_line(capsys.readouterr().err)
    assert (target / "thesis.tex").read_text() == "years of work" and link.is_symlink()


def test_export_replaces_its_own_release_and_refuses_another_datasets(warehouse, tmp_path, capsys):
    out = tmp_path / "releases" / "scotus"
    assert export(warehouse, out) == 0
    assert export(warehouse, out) == 0                  # the same dataset's release: replaced
    capsys.readouterr()
    assert json.loads((out / "release.json").read_text())["dataset"] == "scotus"
    metadata = json.loads((out / "release.json").read_text())
    (out / "release.json").write_text(json.dumps({**metadata, "dataset": "casefacts"}))
    assert export(warehouse, out) == 2                  # another dataset's release: not this command's to replace
    assert "casefacts" in one_line(capsys.readouterr().err)
    (out / "release.json").write_text(json.dumps(metadata))
    (out / "my-notes.md").write_text("added by hand")
    assert export(warehouse, out) == 2                  # a release with a file it did not write
    assert "my-notes.md" in one_line(capsys.readouterr().err)
    assert (out / "my-notes.md").read_text() == "added by hand"
    assert sorted(p.name for p in out.parent.iterdir()) == ["scotus"]


def test_staging_debris_older_than_the_process_is_removed_at_the_next_write(warehouse, tmp_path):
    releases = tmp_path / "releases"
    releases.mkdir()
    stale = [releases / f".scotus.{'a' * 32}.tmp", releases / f".scotus.{'b' * 32}.old"]
    for folder in stale:
        (folder / "data").mkdir(parents=True)
        (folder / "data" / "x.parquet").write_bytes(b"half")
        os.utime(folder, (time.time() - 86400, time.time() - 86400))
    young = releases / f".scotus.{'c' * 32}.tmp"       # a writer that started after this process: not debris
    young.mkdir()
    os.utime(young, (time.time() + 60, time.time() + 60))
    mine = releases / ".scotus.backup.tmp"              # not a name caseforge makes
    mine.mkdir()
    os.utime(mine, (time.time() - 86400, time.time() - 86400))
    assert export(warehouse, releases / "scotus") == 0
    assert sorted(p.name for p in releases.iterdir()) == sorted(["scotus", young.name, mine.name])


def test_a_release_left_aside_by_a_killed_swap_comes_back_before_the_next_write(warehouse, tmp_path):
    """A writer killed between moving the old release aside and moving the new one in left no release at all;
    the next write puts the old one back first, so its fresh cutoff carries on."""
    out = tmp_path / "releases" / "scotus"
    assert export(warehouse, out) == 0
    cutoff = json.loads((out / "release.json").read_text())["fresh"]
    aside = out.parent / f".scotus.{'d' * 32}.old"
    out.rename(aside)
    os.utime(aside, (time.time() - 3600, time.time() - 3600))
    assert export(warehouse, out) == 0
    assert json.loads((out / "release.json").read_text())["fresh"] == cutoff
    assert sorted(p.name for p in out.parent.iterdir()) == ["scotus"]


# --- the replay file ---

def export_replay(settings, out) -> int:
    return main(["llm", "export-replay", "--out", str(out), "--db", str(settings.db_path)])


def test_export_replay_onto_the_warehouse_is_refused(warehouse, capsys):
    size = warehouse.db_path.stat().st_size
    assert export_replay(warehouse, warehouse.db_path) == 2
    assert "warehouse" in one_line(capsys.readouterr().err)
    assert warehouse.db_path.stat().st_size == size and warehouse_intact(warehouse)


@pytest.mark.parametrize("where", ["wal", "mirror", "runs"])
def test_export_replay_into_the_warehouses_files_is_refused(warehouse, capsys, where):
    out = {"wal": warehouse.db_path.with_name(warehouse.db_path.name + ".wal"),
           "mirror": warehouse.parquet_dir / "replay.jsonl", "runs": warehouse.runs_dir / "nightly-1" / "r.jsonl"}[where]
    assert export_replay(warehouse, out) == 2
    one_line(capsys.readouterr().err)
    assert not out.exists()


def test_export_replay_never_overwrites_a_file_it_did_not_write(warehouse, tmp_path, capsys):
    out = tmp_path / "answers.jsonl"
    out.write_text('{"question": "mine", "answer": "42"}\n')
    assert export_replay(warehouse, out) == 2
    assert "not a caseforge replay file" in one_line(capsys.readouterr().err)
    assert out.read_text() == '{"question": "mine", "answer": "42"}\n'


def test_export_replay_replaces_its_own_file_atomically(warehouse, tmp_path, capsys, monkeypatch):
    out = tmp_path / "replay.jsonl"
    assert export_replay(warehouse, out) == 0
    before = out.read_bytes()
    assert len(before.splitlines()) == 3
    assert export_replay(warehouse, out) == 0           # its own file: replaced
    assert out.read_bytes() == before
    # a write that dies half-way leaves the earlier file whole and no temporary file behind
    from caseforge.llm.backends import replay

    calls = []

    def identity_breaks_after_one(canonical):
        calls.append(canonical)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return replay_identity(canonical)

    replay_identity = replay.identity_of
    monkeypatch.setattr(replay, "identity_of", identity_breaks_after_one)
    capsys.readouterr()
    assert export_replay(warehouse, out) == 1                # a full disk met while writing: 1, not a usage error
    said = one_line(capsys.readouterr().err)          # the full disk in one line, naming the disk of --out
    assert "llm: the disk is full (no space left on /" in said and " free)" in said, said
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "replay.jsonl"]


# --- the nightly's release folder and evaluation outputs go through the same rule ---

@pytest.mark.parametrize("where", ["mirror", "runs", "warehouse-folder-file"])
def test_the_nightly_refuses_a_release_dir_in_the_warehouses_own_files(warehouse, where):
    release_dir = {"mirror": warehouse.parquet_dir, "runs": warehouse.runs_dir,
                   "warehouse-folder-file": warehouse.db_path}[where]
    from caseforge.outputs import OutputRefused

    with pytest.raises(OutputRefused):
        nightly_runner.run_nightly(warehouse, nightly_runner.NightlyOptions(release_dir=release_dir), sources={}, builders={},
                            evaluations={}, releases={}, plots={})
    con = connect(warehouse.db_path, read_only=True)
    assert con.execute("SELECT count(*) FROM ops.runs").fetchone() == (0,)      # refused before the run began
    con.close()


@pytest.mark.parametrize("evaluation", ["casefacts", "case", "aquaechr", "casegen"])
def test_an_evaluation_refuses_an_output_folder_in_the_warehouses_own_files(warehouse, evaluation):
    from caseforge.flows import registry
    from caseforge.outputs import OutputRefused

    flow = registry.EVALUATIONS[evaluation].flow()
    required = {"casefacts": {"claims": "claims.json", "system": "bm25"}, "case": {"system": "llm-only"},
                "aquaechr": {"system": "closed-book"}, "casegen": {}}[evaluation]
    for option in ("out_dir", "index_dir"):
        if option not in inspect.signature(flow.fn).parameters:
            continue
        with pytest.raises(OutputRefused):
            flow.fn(db=str(warehouse.db_path), **required, **{option: str(warehouse.parquet_dir / "eval")})
    assert not (warehouse.parquet_dir / "eval").exists()


def test_the_llm_shard_store_may_not_be_the_warehouses_own_folder(warehouse, tmp_path):
    from pathlib import Path

    from caseforge.llm.fanout import step_store
    from caseforge.outputs import OutputRefused

    fanout = warehouse.file.fanout
    con = connect(warehouse.db_path, read_only=True)
    try:
        with pytest.raises(OutputRefused):
            step_store(con, fanout.model_copy(update={"pool": "gpu", "store": str(warehouse.parquet_dir)}),
                       "casefacts.generate")
        mine = step_store(con, fanout.model_copy(update={"pool": "gpu", "store": str(tmp_path / "shards")}),
                          "casefacts.generate")
    finally:
        con.close()
    assert Path(mine.root).is_relative_to(tmp_path / "shards")
