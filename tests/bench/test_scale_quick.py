"""bench/scale.py runs in CI in its quick mode, so it cannot rot unseen: it completes on the samples and prints
its table and its ratios for every source (no timing is asserted: the figures are for people)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.samples

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scale.py"


def test_the_scale_bench_completes_and_prints_its_figures(samples_dir, tmp_path):
    env = {**os.environ, "CASEFORGE_SAMPLES": str(samples_dir)}
    out = subprocess.run([sys.executable, str(BENCH), "--quick", "--work", str(tmp_path / "work")],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    steps = [line for line in lines if line.startswith("| ") and " | " in line and "CPU s" not in line
             and not line.startswith("| ---") and "no-op / first" not in line]
    table = {tuple(cell.strip() for cell in line.split("|")[1:3]) for line in steps}
    for source in ("oyez", "hudoc", "cn"):
        for step in ("first", "no-op", "inc→full", "inc→empty"):
            assert (source, step) in table, (source, step, out.stdout)
    ratios = [line for line in steps if line.split("|")[2].strip().endswith("%")]
    assert sorted(line.split("|")[1].strip() for line in ratios) == ["cn", "hudoc", "oyez"], out.stdout
    assert all(line.count("×") == 3 for line in ratios), ratios
    assert "| succeeded |" in out.stdout and "failed" not in out.stdout.replace("succeeded", ""), out.stdout
