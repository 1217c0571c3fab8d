"""Request identities do not depend on the machine (issue 16).

Every pipeline step whose requests are built from retrieval or embeddings (AQuAECHR evaluation with
BM25, dense and hybrid retrieval and the LLatrieval loop; AQuAECHR's semantic search and question
dedupe; CASE's advocates on BM25, QLM and dense; CaseFacts' claim embeddings, screening samples and
windows; CaseGen drafts of K-Means representatives) is recorded from its scripted double twice, in
separate processes that differ in everything a machine can differ in here: thread counts (OpenMP,
OpenBLAS, MKL), OpenBLAS' kernel choice, the SIMD kernels numpy dispatches to (AVX-512 switched off, as
on the AVX2 machine where CI first failed) and the string hash seed (set iteration order). Both must
produce the same request identities, and those must be the ones in the committed replay fixtures.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.samples, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

import request_identities  # noqa: E402


def widest_simd_features() -> str:
    """The best SIMD feature groups numpy dispatches to on this CPU (turned off in the second run)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    for group in (["X86_V4", "AVX512_ICL", "AVX512_SPR"], ["AVX512F", "AVX512_SKX", "AVX512_ICL"], ["X86_V3"],
                  ["AVX2"], ["ASIMDHP", "ASIMDDP", "SVE"]):
        present = [f for f in group if __cpu_features__.get(f) and f in __cpu_dispatch__]
        if present:
            return " ".join(present)
    return ""


VARIANTS = {
    "2 threads, native kernels, hash seed 0": {
        "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "PYTHONHASHSEED": "0"},
    "1 thread, Haswell BLAS, no AVX-512 in numpy, hash seed 1": {
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell",
        "NPY_DISABLE_CPU_FEATURES": widest_simd_features(), "PYTHONHASHSEED": "1"},
}


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
    with ThreadPoolExecutor(max_workers=len(VARIANTS)) as pool:
        futures = {name: pool.submit(identities_under, env, tmp_path / f"{n}.json", samples_dir)
                   for n, (name, env) in enumerate(VARIANTS.items())}
        found = {name: future.result() for name, future in futures.items()}
    (first, ids_first), (second, ids_second) = found.items()
    assert sum(len(v) for steps in ids_first.values() for v in steps.values()) > 800
    differ = differing_steps(ids_first, ids_second)
    assert not differ, f"{first} vs {second}:\n" + "\n".join(differ)
    committed = {name: request_identities.identities_by_step(request_identities.REPLAY_DIR / name)
                 for name in request_identities.RECORDINGS}
    stale = differing_steps({name: ids_first[name] for name in committed}, committed)
    assert not stale, ("replay fixtures are stale (re-record with .venv/bin/python tests/request_identities.py "
                       "record):\n" + "\n".join(stale))
