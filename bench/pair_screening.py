"""Pair screening cost vs one bare similarity product, on random unit vectors (dimension 384).

For each N: time to screen all pairs into the two windows (with per-bin reservoir samples), the time
of one bare N×384 @ 384×N product (full output when it fits in memory, else the same product tile by
tile with the output discarded), their ratio (target ≤ 3×), and the screening's peak traced memory
(tracemalloc, numpy buffers included) against N²×4 bytes.

    .venv/bin/python bench/pair_screening.py [--clustered] [N ...]

--clustered draws vectors around shared topics plus a common direction, so that about a fifth of all
pairs land at cosine >= 0.2 (closer to sentence embeddings of claims) and the window/sample path is
exercised, not just the matrix product.
"""
from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np

from caseforge.tasks.casefacts.screening import ScreeningConfig, screen_pairs

WINDOWS = {"contradiction": (0.70, 0.95), "overlap": (0.80, 0.97)}
FULL_PRODUCT_LIMIT_BYTES = 4 * 1024**3


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


def main(sizes: list[int], clustered: bool) -> None:
    config = ScreeningConfig()
    print(f"vectors={'clustered' if clustered else 'random'} windows={WINDOWS} tiles={config.row_block}x{config.col_block} samples/bin={config.samples_per_bin}")
    for n in sizes:
        emb = clustered_unit(n) if clustered else random_unit(n)
        groups = np.arange(n) // 3
        bare, how = bare_product_seconds(emb)
        tracemalloc.start()
        start = time.perf_counter()
        result = screen_pairs(emb, groups, WINDOWS, config)
        screen = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        kept = {k: len(v) for k, v in result.windows.items()}
        sampled = sum(len(v) for v in result.samples.values())
        print(f"N={n:>6}: screen {screen:7.2f}s  bare product {bare:7.2f}s ({how})  ratio {screen / bare:4.2f}x  "
              f"peak {peak / 2**20:8.1f} MiB vs N²×4 = {n * n * 4 / 2**20:9.1f} MiB  "
              f"window pairs {kept} samples {sampled} pairs>=0.2 {sum(result.bin_counts.values())}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(a) for a in args if a != "--clustered"] or [5_000, 20_000, 50_000], "--clustered" in args)
