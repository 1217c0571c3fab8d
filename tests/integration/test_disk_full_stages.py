"""A full disk at each stage loses nothing (issue 43, item 3): parse (the archive), gate and load, the Parquet
mirror, its publishing, a release, the LLM cache. Each stage's command meets a real full disk, a small tmpfs mounted
in a private namespace (tests/small_disks.py; the scenarios and how each disk is filled are in
tests/disk_full_scenarios.py), and must end failed with one line naming the disk and the stage, its run recorded
failed with that line (never succeeded), the warehouse still opening, no partial mirror generation, published
mirror or release visible; and once the space is freed, the same command ends as an undisturbed run does, with the
same tables or files."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from disk_full_scenarios import MOUNTS
from small_disks import in_small_disks, namespaces_refused

pytestmark = [pytest.mark.slow, pytest.mark.samples, pytest.mark.timeout(1200)]

DRIVER = Path(__file__).resolve().parent.parent / "disk_full_scenarios.py"
# what each stage's one line names: the command's stage, the disk (under the test's folder), what was written
EXPECTED = {
    "parse": ("ingest hudoc: the disk is full (no space left on {work}/disk/cf-archive, ", "writing the archive ("),
    "load": ("ingest hudoc: the disk is full (no space left on {work}/disk, ", "writing the warehouse ("),
    "mirror": ("ingest hudoc: the Parquet mirror: the disk is full (no space left on {work}/disk/cf-parquet.d, ",
               "writing the Parquet mirror ("),
    "publish": ("publish {work}/published: the disk is full (no space left on {work}/published, ", ""),
    "release": ("export scotus: the disk is full (no space left on {work}/releases, ", ""),
    "llm cache": ("eval casegen: the disk is full (no space left on {work}/disk, ", "writing the warehouse ("),
}


@pytest.fixture(scope="module")
def small_disks(tmp_path_factory):
    refused = namespaces_refused(tmp_path_factory.mktemp("probe") / "disk")
    if refused:
        pytest.skip(refused)


@pytest.mark.parametrize("stage", list(MOUNTS))
def test_a_full_disk_fails_the_stage_in_one_line_and_the_next_run_is_as_undisturbed(
        stage, small_disks, samples_dir, shared_server_cli_env, tmp_path):
    work = tmp_path / "work"
    done = in_small_disks([(work / folder, size) for folder, size in MOUNTS[stage]],
                          [sys.executable, str(DRIVER), stage, str(work), str(samples_dir)], env=shared_server_cli_env)
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.splitlines()[-1])

    failed = seen["failed"]
    start, writing = (text.format(work=work) for text in EXPECTED[stage])
    assert failed["exit"] == 1, failed
    assert len(failed["said"]) == 1, failed                      # one line
    line = failed["said"][0].removeprefix("caseforge: ")
    assert line.startswith(start) and writing in line, failed
    if "opens" in seen:
        assert seen["opens"] == "yes"
    recorded = seen.get("status")
    if recorded is not None:                                     # commands with a run record (not export)
        kind = {"publish": "publish", "llm cache": "eval"}.get(stage, "ingest")   # (publishing is a run of its own)
        runs = [r for r in recorded if r["kind"] == kind]
        assert runs and all(r["status"] != "succeeded" for r in runs), recorded
        assert any(r["status"] == "failed" and line in (r["message"] or "") for r in runs), (line, recorded)
    if stage == "mirror":
        assert seen["mirror"] == {"generation": None}            # no generation was swapped in
    if stage == "publish":
        assert "CURRENT.json" not in seen["published"], seen["published"]
    if stage == "release":
        assert seen["release_seen"] == [], seen["release_seen"]   # neither the release nor a staging folder

    again, reference = seen["again"], seen["reference"]
    assert again["exit"] == reference["exit"] == 0, (again, reference)
    if "tables" in seen:
        recovered, undisturbed = seen["tables"]
        assert recovered == undisturbed
        assert any(rows for rows, _ in recovered.values())
    if "files" in seen:
        recovered, undisturbed = seen["files"]
        assert recovered == undisturbed and recovered
    if "status_after" in seen:
        assert seen["status_after"][0]["status"] == "succeeded"
