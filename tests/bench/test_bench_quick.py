"""Every script in bench/ runs in its quick mode (`--quick`: small sizes, seconds) and prints its figures, so no
benchmark rots unseen; the full sizes stay for people. Each runs as a user runs it, a fresh process in an empty
working folder, which it must leave empty. In quick mode a bench that needs an LLM answers from a test double,
never a model; the packaged embedding model (no download) is loaded where a bench measures it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.samples

BENCH = Path(__file__).resolve().parents[2] / "bench"
# what each bench must print in quick mode: one pattern per figure it exists to report
PRINTS = {
    "archive_store.py": [r"\s+120\s+\d+\.\d\d\s+\d+\.\d\d", r"last batch / first batch: \d+\.\d\dx"],
    "aquaechr_judge_on_released_pairs.py": [r"judge-double: \d+ of \d+ judged, \d+ kept", r"\(4, 4, 4\): \d+"],
    "cn_parse.py": [r"parse_record .*\| [\d,]+ \| [\d,]+", r"ratio \d+\.\d\dx"],
    "cn_section_accuracy.py": [r"\| judge \| text \| facts \(fact part\) \| \d+ \| \d+\.\d%"],
    "command_overhead.py": [r"bare\s+\d+\.\d\d\s+\d+\.\d\d", r'"bare_cpu_s": \d'],
    "echr_parse.py": [r"BeautifulSoup reader \(before\)\s+\d\.\d{4}", r"lxml reader \(now\)\s+\d\.\d{4}",
                      r"ratio before/now\s+\d+\.\dx", r"HUDOC DOCX paragraphs\s+[\d,]+ /s", r"guide citations\s+[\d,]+ /s"],
    "fanout_nightly.py": [r"\| the whole nightly \| \| \d+\.\d \| \d+\.\d \|", r'"ratio": \d', r'"same_llm_calls": true'],
    "fanout_store.py": [r"\| local \| \d+\.\d\d s", r"\| s3 \| \d+\.\d\d s", r'"overhead_ratio": -?\d'],
    "llm_dispatch.py": [r'overhead: \{"overhead_ms_per_call"', r'"achieved_rps": \d', r'"ratio": \d'],
    "oyez_parse.py": [r"parse: [\d,]+ cases/second", r"no-op run 1 request\(s\)"],
    "pair_screening.py": [r"N=\s*\d+: exact .* window pairs", r"N=\s*\d+: faiss .* recall \{'contradiction'"],
    "known_problems.py": [r"\| first \| \d+\.\d\d \|", r"\| again \| \d+\.\d\d \| [\d.]+ \| succeeded \| 0 \| 0 \|",
                          r"again / first CPU: \d"],
    "sql_stream.py": [r"\| csv \| 200,000 \| \d+ \|", r"\| json \| 200,000 \| \d+ \|",
                      r"csv: peak RSS at 200,000 rows / at 5,000 rows: \d+\.\d\dx",
                      r"json: peak RSS at 200,000 rows / at 5,000 rows: \d+\.\d\dx"],
    "retrieval.py": [r"bm25\s+\d+\s+[\d.]+\s+[\d.]+", r"dense\s+\d+", r"hybrid\s+\d+\s+[\d.]+\s+[\d.]+"],
    "window_check_released_pairs.py": [r"contradiction: \d+ judged-positive pairs, cosine median \d\.\d+; 95% window",
                                       r"redundancy: \d+ judged-positive pairs"],
}


# benches whose quick mode has a test of its own, which checks more than a pattern can
OWN_TEST = {"scale.py": "tests/bench/test_scale_quick.py",
            "nightly_scale.py": "tests/bench/test_nightly_scale_quick.py",
            "disk_full_nightly.py": "tests/bench/test_disk_full_nightly_quick.py"}


def test_every_bench_script_has_a_quick_mode_check():
    assert sorted(path.name for path in BENCH.glob("*.py")) == sorted([*PRINTS, *OWN_TEST])
    assert all((BENCH.parent / test).is_file() for test in OWN_TEST.values())


# benches whose quick mode runs whole nightly commands (marker nightly_bench: `make test` runs them, `make test-bench` alone)
NIGHTLY_BENCHES = {"fanout_nightly.py"}


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.nightly_bench) if s in NIGHTLY_BENCHES else s
                                    for s in sorted(PRINTS)])
def test_bench_runs_in_quick_mode_and_prints_its_figures(script, samples_dir, tmp_path):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    env = {**os.environ, "CASEFORGE_SAMPLES": str(samples_dir), "PREFECT_HOME": str(tmp_path / "prefect")}
    done = subprocess.run([sys.executable, str(BENCH / script), "--quick"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    for pattern in PRINTS[script]:
        assert re.search(pattern, done.stdout), f"{pattern!r} not in:\n{done.stdout[-3000:]}"
    assert list(workdir.iterdir()) == []
