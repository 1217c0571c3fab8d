"""bench/disk_full_nightly.py's report judges each point as the issue asks (every night failed naming the disk, none
recorded succeeded), and counts apart only the points that judge nothing: a night that ended before its moment, and
one that went on after the fill and ended 0 with its own tables and releases equal to the undisturbed night's (it
needed no more space). One that ended 0 with other results is a failure. `--summarize` reads several sweeps."""
from __future__ import annotations

import importlib.util
import json
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
                       "needed_no_space_after_the_fill": 1}


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
