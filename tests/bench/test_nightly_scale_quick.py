"""bench/nightly_scale.py runs in CI in its quick mode, so it cannot rot unseen: the four nights as `caseforge run
nightly` commands and the figures it prints (no timing is asserted: the figures are for people). Quick mode answers
the nights from the test double itself (its record pass, which makes the replay file the real sizes use, runs in
bench/disk_full_nightly.py's quick mode: tests/bench/test_disk_full_nightly_quick.py). Four whole nightly commands:
minutes, not seconds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.nightly_bench, pytest.mark.timeout(1800)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "nightly_scale.py"
NIGHTS = ("first", "unchanged", "1% → full", "1% → empty")


def table_rows(stdout: str, header: str) -> dict[str, list[str]]:
    """The rows of the markdown table whose header line starts with `header`, by their first cell."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_the_nightly_scale_bench_completes_and_prints_its_figures(samples_dir, tmp_path):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    env = {**os.environ, "CASEFORGE_SAMPLES": str(samples_dir)}
    figures = tmp_path / "figures.json"
    out = subprocess.run([sys.executable, str(BENCH), "--quick", "--work", str(tmp_path / "work"),
                          "--json", str(figures)], cwd=workdir, capture_output=True, text=True, env=env, timeout=1700)
    assert out.returncode == 0, out.stderr[-4000:]

    nights = table_rows(out.stdout, "| night | exit | wall s")
    assert list(nights) == list(NIGHTS), out.stdout
    for night, cells in nights.items():
        assert cells[1] in ("0", "1"), cells                       # the night's own exit status, not a crash
        assert float(cells[3]) > 0 and float(cells[5]) > 0, cells  # CPU of the nightly and of the server measured
    locks = table_rows(out.stdout, "| night | writer held the file s")
    assert list(locks) == list(NIGHTS) and all(float(cells[1]) > 0 for cells in locks.values()), out.stdout
    ratios = table_rows(out.stdout, "| ratio | measured")
    assert {"unchanged / first, CPU (all processes)", "1% → full / 1% → empty, CPU (all processes)",
            "1% → full / 1% → empty, nightly peak memory"} <= set(ratios), out.stdout
    assert any(name.startswith("moonshot") for name in ratios), out.stdout

    data = json.loads(figures.read_text())
    spoiled = data["spoiled"]
    assert all(len(spoiled[source]) == 1 for source in ("oyez", "hudoc", "cn")), spoiled
    first = data["nights"]["first"]
    # every bad record put into the corpus is quarantined by the first night, one row each
    assert sum(first["quarantined"][source] for source in ("oyez", "hudoc", "cn")) == 3, first["quarantined"]
    assert first["llm_calls"] > 0 and data["recorded"]["double_calls"] > 0  # the builders asked, the double answered
    assert not any("ReplayMiss" in stage["message"] for night in data["nights"].values() for stage in night["stages"])
    assert data["nights"]["unchanged"]["llm_calls"] == 0
    # the bench leaves nothing behind: its work folder, and no local Prefect server
    assert not (tmp_path / "work").exists()
    assert list(workdir.iterdir()) == []
