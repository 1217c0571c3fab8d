"""bench/disk_full_nightly.py's report judges each point as the issue asks (every night failed naming the disk, none
recorded succeeded), and counts apart only the points that judge nothing: a night that ended before its moment, and
one that went on after the fill and ended 0 with its own tables and releases equal to the undisturbed night's (it
needed no more space). One that ended 0 with other results is a failure. `--summarize` reads several sweeps."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "disk_full_nightly.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("caseforge_bench_disk_full", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def point(number: int, disk: str, **changes) -> dict:
    failed = {"exit": 1, "said": [f"ingest cn: the disk is full (no space left on {disk}, 0 free) writing x"],
              "filled_bytes": 123}
    base = {"point": number, "share": 0.5, "fill_at_s": 30.0, "failed": failed, "failed_s": 31.0, "next_s": 40.0,
            "after_failure": {"opens": "yes", "nightly": ["failed"], "partial": []},
            "after_next": {"opens": "yes", "nightly": ["failed", "succeeded"], "partial": []},
            "next": {"exit": 0}, "differs": [], "card_gate_differs": []}
    return {**base, **changes}


def summary_of(printed: str) -> dict:
    return json.loads(printed.strip().splitlines()[-1])


def test_a_night_that_ended_0_after_the_fill_counts_apart_only_with_the_undisturbed_results(capsys):
    bench = load_bench()
    succeeded = {"exit": 0, "said": [], "filled_bytes": 123}
    earned = point(2, "/d", failed=succeeded, own_differs=[],
                   after_failure={"opens": "yes", "nightly": ["succeeded"], "partial": []})
    unearned = point(3, "/d", failed=succeeded, own_differs=["curated.hudoc_judgments"],
                     after_failure={"opens": "yes", "nightly": ["succeeded"], "partial": []})
    before = point(4, "/d", failed={"exit": 0, "said": [], "filled_bytes": None})
    bench.report([point(1, "/d"), earned, unearned, before], [0], Path("/d"), 60)
    summary = summary_of(capsys.readouterr().out)
    assert summary == {"points": 2, "failed_naming_the_disk": 1, "nightly_recorded_succeeded": 1,
                       "warehouse_opens": 2, "partial_visible": 0, "next_night_identical": 2,
                       "card_quality_gate_differs": 0, "night_ended_before_the_fill": 1,
                       "needed_no_space_after_the_fill": 1, "fit_in_the_bytes_left": 0}


def test_a_night_that_fit_in_the_bytes_left_counts_apart_only_with_the_undisturbed_results(capsys):
    # seen in a 100-point sweep by bytes (drawn before used_bytes counted as du): 101,858,789 bytes free, more than
    # the 99.8 MB the undisturbed night left, were enough for a whole night, which ended 0 with its tables and
    # releases; a report that compares such a night's own results must not count it a full disk, nor crash
    bench = load_bench()
    succeeded = {"exit": 0, "said": [], "filled_bytes": None}
    by_bytes = {"free_bytes": 101_858_789}
    fit = {**point(2, "/d", failed=succeeded, own_differs=[],
                   after_failure={"opens": "yes", "nightly": ["succeeded"], "partial": []}), **by_bytes}
    unearned = {**point(3, "/d", failed=succeeded, own_differs=["eval.casegen_scores"],
                        after_failure={"opens": "yes", "nightly": ["succeeded"], "partial": []}), **by_bytes}
    unjudged = {**point(4, "/d", failed=succeeded,             # a sweep from before its own results were compared
                        after_failure={"opens": "yes", "nightly": ["succeeded"], "partial": []}), **by_bytes}
    for each in (fit, unearned, unjudged):
        del each["share"], each["fill_at_s"]
    bench.report([{**point(1, "/d"), **by_bytes}, fit, unearned, unjudged], [0], Path("/d"), 60)
    printed = capsys.readouterr().out
    summary = summary_of(printed)
    assert summary["points"] == 3 and summary["fit_in_the_bytes_left"] == 1
    assert summary["failed_naming_the_disk"] == 1 and summary["nightly_recorded_succeeded"] == 2
    assert "| 2 | 101,858,789 bytes free | 0 | the night fit in the bytes left" in printed
    assert "| 3 | 101,858,789 bytes free | 0 |" in printed and "| 4 | 101,858,789 bytes free | 0 |" in printed


def test_what_a_night_left_counts_the_mirrors_generation_once(tmp_path):
    # the published mirror is a link to its generation's folder: counted through both, the undisturbed night seemed
    # to leave 108.4 MB (du: 99.8 MB), and points drawn up to 95% of it left room enough for a whole night
    bench = load_bench()
    generation = tmp_path / "cf-parquet.d" / "00000010"
    generation.mkdir(parents=True)
    (generation / "t.parquet").write_bytes(b"x" * 1_000_000)
    (tmp_path / "cf-parquet").symlink_to("cf-parquet.d/00000010")
    (tmp_path / "cf.duckdb").write_bytes(b"y" * 500_000)
    os.link(tmp_path / "cf.duckdb", tmp_path / "also.duckdb")          # one file under two names: its blocks once
    du = int(subprocess.run(["du", "-s", "--block-size=1", str(tmp_path)], capture_output=True, text=True,
                            check=True).stdout.split()[0])
    assert bench.used_bytes(tmp_path) == du - os.lstat(tmp_path).st_blocks * 512   # du counts the folder itself


def test_summarize_reads_several_sweeps_each_against_its_own_disk(tmp_path):
    works = []
    for number in (1, 2):
        work = tmp_path / f"sweep{number}" / "work"
        work.mkdir(parents=True)
        disk = work / "disk"
        (work / "plan.json").write_text(json.dumps({"points": [1, 2, 3], "undisturbed": {"exit": 0}}))
        (work / "points.jsonl").write_text(json.dumps(point(1, str(disk), by="bytes")) + "\n")
        works.append(work)
    done = subprocess.run([sys.executable, str(BENCH), "--summarize", *map(str, works)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("(2 sweeps: 2 of 6 points finished)")
    assert "| 1.1 |" in done.stdout and "| 2.1 |" in done.stdout
    summary = summary_of(done.stdout)
    assert summary["points"] == 2 and summary["failed_naming_the_disk"] == 2     # each named its own disk
