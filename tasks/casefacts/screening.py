"""Cross-case pair screening by cosine similarity without materialising all N² pairs.

One pass over the upper triangle of the similarity matrix in tiles (row block × column block):
each tile keeps only (a) the pairs inside the configured windows and (b) a seeded uniform sample of
pairs per similarity bin (bottom-k on random keys, i.e. reservoir sampling that merges across
tiles), plus a pair count per bin. Memory is one tile plus the kept pairs.

A pair's random key is a hash of the seed and the pair's two row numbers, not a draw from a
generator consumed in tile order: a pair whose similarity float noise moves across a bin edge on
another machine changes only its own membership, not every later draw. Samples come out sorted by
(left, right) row, and similarities are rounded to `SIMILARITY_DECIMALS`.
Past `ann_threshold` claims, a random-projection LSH proposes candidate pairs instead of the exhaustive
pass (pairs below the windows are then sampled by drawing random pairs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


SIMILARITY_DECIMALS = 6        # float32 cosines carry ~1e-7 of noise between BLAS kernels


def pair_keys(seed: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """A uniform key in [0, 1) per pair, a pure function of (seed, left, right) (splitmix64 mixing)."""
    with np.errstate(over="ignore"):
        x = (np.asarray(left, np.uint64) << np.uint64(32)) ^ np.asarray(right, np.uint64)
        x = x ^ np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


@dataclass(frozen=True)
class ScreeningConfig:
    bin_width: float = 0.1
    sample_from: float = 0.2          # pairs below are never sampled (nor judged)
    keep_all_from: float = 0.9        # every pair at or above is kept as a sample
    samples_per_bin: int = 1000
    row_block: int = 2048
    col_block: int = 8192
    seed: int = 13
    ann_threshold: int = 100_000      # claims; above it the LSH index proposes candidates
    lsh_tables: int = 12
    lsh_bits: int = 14


@dataclass
class PairSet:
    left: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    right: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    similarity: np.ndarray = field(default_factory=lambda: np.empty(0, np.float32))

    def __len__(self) -> int:
        return len(self.left)

    def extend(self, left, right, sim) -> None:
        self.left = np.concatenate([self.left, left.astype(np.int64)])
        self.right = np.concatenate([self.right, right.astype(np.int64)])
        self.similarity = np.concatenate([self.similarity, sim.astype(np.float32)])

    def sorted(self) -> "PairSet":
        order = np.lexsort((self.right, self.left))
        return PairSet(self.left[order], self.right[order], self.similarity[order])


@dataclass
class ScreenResult:
    windows: dict[str, PairSet]
    samples: dict[int, PairSet]             # bin index (floor(sim / width)) → sampled pairs
    bin_counts: dict[int, int]              # all cross-case pairs per bin from sample_from up
    method: str = "exhaustive"


class _BottomK:
    """Keeps the k pairs with the smallest random keys seen so far: a uniform sample without replacement."""

    def __init__(self, k: int):
        self.k = k
        self.keys = np.empty(0, np.float64)
        self.pairs = PairSet()

    def offer(self, left, right, sim, keys) -> None:
        if self.k <= 0 or len(keys) == 0:
            return
        if len(self.keys) >= self.k:
            below = keys < self.keys.max()
            left, right, sim, keys = left[below], right[below], sim[below], keys[below]
            if len(keys) == 0:
                return
        all_keys = np.concatenate([self.keys, keys])
        self.pairs.extend(left, right, sim)
        if len(all_keys) > self.k:
            keep = np.sort(np.argsort(all_keys, kind="stable")[: self.k])
            all_keys = all_keys[keep]
            self.pairs = PairSet(self.pairs.left[keep], self.pairs.right[keep], self.pairs.similarity[keep])
        self.keys = all_keys


def _bin_of(sim: np.ndarray, width: float) -> np.ndarray:
    return np.floor(np.minimum(sim, 1.0) / width + 1e-6).astype(np.int64)


class _Collector:
    def __init__(self, windows: dict[str, tuple[float, float]], config: ScreeningConfig, sample: bool):
        self.config = config
        self.windows = {name: PairSet() for name in windows}
        self.bounds = windows
        self.sample = sample
        first = int(round(config.sample_from / config.bin_width))
        last = int(round(1.0 / config.bin_width))
        self.keep_all_bin = int(round(config.keep_all_from / config.bin_width))
        self.reservoirs = {b: _BottomK(config.samples_per_bin) for b in range(first, self.keep_all_bin)}
        self.kept_all = {b: PairSet() for b in range(self.keep_all_bin, last + 1)}
        self.counts = {b: 0 for b in range(first, last + 1)}
        floors = [lo for lo, _ in windows.values()] + ([config.sample_from] if sample else [])
        self.floor = min(floors) if floors else 2.0

    def take(self, left, right, sim) -> None:
        """Candidate pairs already known to be cross-case with sim >= self.floor."""
        for name, (lo, hi) in self.bounds.items():
            inside = (sim >= lo) & (sim <= hi)
            if inside.any():
                self.windows[name].extend(left[inside], right[inside], sim[inside])
        if not self.sample:
            return
        eligible = sim >= self.config.sample_from
        left, right, sim = left[eligible], right[eligible], sim[eligible]
        bins = _bin_of(sim, self.config.bin_width)
        for b, n in zip(*np.unique(bins, return_counts=True)):
            b = int(b)
            self.counts[b] = self.counts.get(b, 0) + int(n)
            chosen = bins == b
            if b >= self.keep_all_bin:
                self.kept_all.setdefault(b, PairSet()).extend(left[chosen], right[chosen], sim[chosen])
            else:
                self.reservoirs[b].offer(left[chosen], right[chosen], sim[chosen],
                                         pair_keys(self.config.seed, left[chosen], right[chosen]))

    def result(self, method: str) -> ScreenResult:
        samples = {b: r.pairs.sorted() for b, r in self.reservoirs.items()}
        samples.update({b: pairs.sorted() for b, pairs in self.kept_all.items()})
        windows = {name: pairs.sorted() for name, pairs in self.windows.items()}
        return ScreenResult(windows, samples, self.counts, method)


def screen_pairs(embeddings: np.ndarray, groups: np.ndarray, windows: dict[str, tuple[float, float]],
                 config: ScreeningConfig = ScreeningConfig(), sample: bool = True) -> ScreenResult:
    """Screens all pairs (i < j) whose groups (cases) differ; rows of `embeddings` must be unit length."""
    emb = np.ascontiguousarray(embeddings, dtype=np.float32)
    groups = np.asarray(groups)
    if len(emb) > config.ann_threshold:
        return _screen_lsh(emb, groups, windows, config, sample)
    collector = _Collector(windows, config, sample)
    n = len(emb)
    for a in range(0, n, config.row_block):
        b = min(a + config.row_block, n)
        for c in range(a, n, config.col_block):
            d = min(c + config.col_block, n)
            tile = np.round(emb[a:b] @ emb[c:d].T, SIMILARITY_DECIMALS)
            rows, cols = np.nonzero(tile >= collector.floor)
            if len(rows) == 0:
                continue
            left, right = rows + a, cols + c
            keep = (right > left) & (groups[left] != groups[right])
            left, right = left[keep], right[keep]
            collector.take(left, right, tile[rows[keep], cols[keep]])
    return collector.result("exhaustive")


def _lsh_candidates(emb: np.ndarray, config: ScreeningConfig) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(config.seed)
    weights = 1 << np.arange(config.lsh_bits, dtype=np.int64)
    lefts, rights = [], []
    for _ in range(config.lsh_tables):
        planes = rng.standard_normal((emb.shape[1], config.lsh_bits)).astype(np.float32)
        codes = ((emb @ planes) > 0).astype(np.int64) @ weights
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for s, e in zip(starts, ends):
            if e - s < 2:
                continue
            members = np.sort(order[s:e])
            i, j = np.triu_indices(len(members), k=1)
            lefts.append(members[i])
            rights.append(members[j])
    if not lefts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = np.unique(np.stack([np.concatenate(lefts), np.concatenate(rights)], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _screen_lsh(emb, groups, windows, config, sample) -> ScreenResult:
    """Approximate: LSH buckets propose the similar pairs; the lower bins are sampled from random pairs."""
    collector = _Collector(windows, config, sample)
    left, right = _lsh_candidates(emb, config)
    keep = groups[left] != groups[right]
    left, right = left[keep], right[keep]
    sim = np.round(np.einsum("ij,ij->i", emb[left], emb[right]), SIMILARITY_DECIMALS)
    above = sim >= collector.floor
    collector.take(left[above], right[above], sim[above])
    if sample:
        # LSH candidates over-represent similar pairs: the sampled (not kept-all) bins come from random pairs.
        rng = np.random.default_rng(config.seed + 1)
        draws = config.samples_per_bin * 200
        i, j = rng.integers(0, len(emb), draws), rng.integers(0, len(emb), draws)
        i, j = np.minimum(i, j), np.maximum(i, j)
        ok = (i != j) & (groups[i] != groups[j])
        i, j = i[ok], j[ok]
        s = np.round(np.einsum("ij,ij->i", emb[i], emb[j]), SIMILARITY_DECIMALS)
        sampler = _Collector({}, config, sample=True)
        low = s < config.keep_all_from
        sampler.take(i[low], j[low], s[low])
        total_pairs = len(emb) * (len(emb) - 1) / 2
        for b, reservoir in sampler.reservoirs.items():
            collector.reservoirs[b] = reservoir
            collector.counts[b] = int(round(sampler.counts.get(b, 0) / max(len(i), 1) * total_pairs))
    return collector.result("lsh")
