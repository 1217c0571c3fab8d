"""Cross-case pair screening at scale: the exact tiled pass, the faiss approximate pass and one bare matrix
product, in one run, on vectors of dimension 384.

For each N: the time of one bare N×384 @ 384×N product (full output when it fits in 4 GiB, else tile by
tile with the output discarded); then the screening into the two windows (what the cross-case checks run)
by the exact tiled pass and by faiss (IndexIVFFlat range search, the path screen_pairs takes above
`ann_threshold` claims), each with its time, its peak resident memory above the process's baseline (sampled
from /proc, so faiss's own buffers count) and its window pairs; faiss's recall is the share of the exact
pass's window pairs it found (its pairs are always a subset). With --samples, both also draw the
calibration samples (all bins from 0.2), the other screening call.

    .venv/bin/python bench/pair_screening.py [--random] [--samples] [--no-exact] [--quick] [N ...]

--quick: N = 2,000 (CI checks that the bench still runs).

Vectors are clustered by default: shared topics plus a common direction, so that window pairs exist
(random unit vectors in 384 dimensions almost never reach cosine 0.7; --random uses them anyway).
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from caseforge.tasks.casefacts.screening import ScreeningConfig, screen_pairs

WINDOWS = {"contradiction": (0.70, 0.95), "overlap": (0.80, 0.97)}
FULL_PRODUCT_LIMIT_BYTES = 4 * 1024**3
PAGE = 4096


def random_unit(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    emb = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


def clustered_unit(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(dim).astype(np.float32)
    common /= np.linalg.norm(common)
    topics = rng.standard_normal((max(n // 10, 1), dim)).astype(np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    emb = 0.6 * common + topics[rng.integers(0, len(topics), n)] \
        + rng.standard_normal((n, dim)).astype(np.float32) * rng.uniform(0.02, 0.09, (n, 1)).astype(np.float32)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


class PeakMemory:
    """Peak resident memory while the block runs, above what was resident when it started."""

    def __enter__(self):
        self.start = resident_bytes()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, resident_bytes())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, resident_bytes())

    @property
    def above_start_mib(self) -> float:
        return (self.peak - self.start) / 2**20


def bare_product_seconds(emb: np.ndarray) -> tuple[float, str]:
    n = len(emb)
    start = time.perf_counter()
    if n * n * 4 <= FULL_PRODUCT_LIMIT_BYTES:
        _ = emb @ emb.T
        how = "full output"
    else:
        for a in range(0, n, 4096):
            _ = emb[a:a + 4096] @ emb.T
        how = "tiled, output discarded"
    return time.perf_counter() - start, how


def screen(emb, groups, config, sample):
    with PeakMemory() as memory:
        start = time.perf_counter()
        result = screen_pairs(emb, groups, WINDOWS, config, sample=sample)
        seconds = time.perf_counter() - start
    return result, seconds, memory.above_start_mib


def pair_keys(pairs) -> np.ndarray:
    return pairs.left.astype(np.int64) * (1 << 32) + pairs.right.astype(np.int64)


def main(sizes: list[int], clustered: bool, samples: bool, exact: bool) -> None:
    base = ScreeningConfig()
    print(f"vectors={'clustered' if clustered else 'random'} dim=384 windows={WINDOWS} samples={samples} "
          f"exact tiles={base.row_block}x{base.col_block} faiss IVFFlat lists=4*sqrt(N) nprobe={base.ann_nprobe} "
          f"train iterations={base.ann_train_iterations}", flush=True)
    for n in sizes:
        emb = clustered_unit(n) if clustered else random_unit(n)
        groups = np.arange(n) // 3
        bare, how = bare_product_seconds(emb)
        print(f"N={n:>7}: bare product {bare:8.2f}s ({how})", flush=True)
        approx, t_faiss, m_faiss = screen(emb, groups, replace(base, ann_threshold=0), samples)
        kept = {k: len(v) for k, v in approx.windows.items()}
        line = (f"N={n:>7}: faiss      {t_faiss:8.2f}s ({t_faiss / bare:5.2f}x bare)  peak +{m_faiss:8.1f} MiB  "
                f"window pairs {kept}")
        if exact:
            reference, t_exact, m_exact = screen(emb, groups, replace(base, ann_threshold=n + 1), samples)
            recall = {}
            for name in WINDOWS:
                want, got = pair_keys(reference.windows[name]), pair_keys(approx.windows[name])
                found = np.isin(got, want)
                assert found.all(), "faiss proposed a pair outside the exact window"
                recall[name] = round(len(got) / len(want), 4) if len(want) else None
            print(f"N={n:>7}: exact      {t_exact:8.2f}s ({t_exact / bare:5.2f}x bare)  peak +{m_exact:8.1f} MiB  "
                  f"window pairs { {k: len(v) for k, v in reference.windows.items()} }", flush=True)
            line += f"  recall {recall}"
        print(line, flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    flags = {a for a in args if a.startswith("--")}
    unknown = flags - {"--random", "--samples", "--no-exact", "--quick"}
    if unknown:
        sys.exit(f"unknown option(s): {', '.join(sorted(unknown))}")
    quick = "--quick" in flags
    main([int(a) for a in args if not a.startswith("--")] or ([2_000] if quick else [5_000, 20_000, 50_000]),
         "--random" not in flags, "--samples" in flags, "--no-exact" not in flags)
