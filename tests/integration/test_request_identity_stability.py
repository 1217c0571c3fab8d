"""Request identities do not depend on the machine (issue 16).

Every pipeline step whose requests are built from retrieval or embeddings (AQuAECHR evaluation with
BM25, dense and hybrid retrieval and the LLatrieval loop; AQuAECHR's semantic search and question
dedupe; CaseFacts' claim embeddings, screening samples and windows; CaseGen drafts of K-Means representatives;
CASE's advocates on BM25, QLM and dense) is recorded from its scripted double in a process that differs from the one
that recorded the committed fixtures (tests/request_identities.py record: the machine's own thread counts and
kernels, a random hash seed) in everything a machine can differ in here: one thread (OpenMP, OpenBLAS, MKL),
OpenBLAS' Haswell kernels, the SIMD kernels numpy dispatches to (AVX-512 switched off, as on the AVX2 machine where
CI first failed) and hash seed 1 (set iteration order). Its request identities must be the committed ones: the
replay fixtures' and, for the steps no fixture holds, tests/fixtures/replay/probe_identities.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# a hang guard, not a budget: every pipeline's identities on one thread took 172-248 s in CI (its child: 900 s)
pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(1200)]

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

import request_identities  # noqa: E402


def widest_simd_features() -> str:
    """The best SIMD feature groups numpy dispatches to on this CPU (turned off in the run the test makes)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    for group in (["X86_V4", "AVX512_ICL", "AVX512_SPR"], ["AVX512F", "AVX512_SKX", "AVX512_ICL"], ["X86_V3"],
                  ["AVX2"], ["ASIMDHP", "ASIMDDP", "SVE"]):
        present = [f for f in group if __cpu_features__.get(f) and f in __cpu_dispatch__]
        if present:
            return " ".join(present)
    return ""


OTHER_MACHINE = {
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": widest_simd_features(), "PYTHONHASHSEED": "1"}


def identities_under(env_changes: dict[str, str], out: Path, samples: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "CASEFORGE_DB")}
    env.update(env_changes, CASEFORGE_SAMPLES=str(samples), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, str(TESTS / "request_identities.py"), "identities", str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def differing_steps(a: dict, b: dict) -> list[str]:
    lines = []
    for recording in sorted(set(a) | set(b)):
        steps_a, steps_b = a.get(recording, {}), b.get(recording, {})
        for step in sorted(set(steps_a) | set(steps_b)):
            only_a = set(steps_a.get(step, [])) - set(steps_b.get(step, []))
            only_b = set(steps_b.get(step, [])) - set(steps_a.get(step, []))
            if only_a or only_b:
                lines.append(f"{recording} {step}: {len(only_a)} identities only in the first, {len(only_b)} only "
                             f"in the second")
    return lines


def test_identities_are_the_same_under_other_threads_kernels_and_hash_seeds(samples_dir, tmp_path):
    assert np.__version__  # numpy is what the kernels belong to
    found = identities_under(OTHER_MACHINE, tmp_path / "identities.json", samples_dir)
    committed = request_identities.committed_identities()
    assert sum(len(v) for steps in found.values() for v in steps.values()) > 800
    assert any(name.endswith("_probe.jsonl") for name in committed), "no probe identities committed"
    differ = differing_steps(found, committed)
    assert not differ, ("this run (first), under other threads, kernels and hash seed, vs the committed recording "
                        "(second; or stale fixtures: re-record with .venv/bin/python tests/request_identities.py "
                        "record):\n" + "\n".join(differ))
