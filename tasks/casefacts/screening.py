"""Cross-case pair screening by cosine similarity without materialising all N² pairs.

One pass over the upper triangle of the similarity matrix in tiles (row block × column block):
each tile keeps only (a) the pairs inside the configured windows and (b) a seeded uniform sample of
pairs per similarity bin (bottom-k on random keys, i.e. reservoir sampling that merges across
tiles), plus a pair count per bin. Memory is one tile plus the kept pairs.

A pair's random key is a hash of the seed and the pair's two row numbers, not a draw from a
generator consumed in tile order: a pair whose similarity float noise moves across a bin edge on
another machine changes only its own membership, not every later draw. Samples come out sorted by
(left, right) row, and similarities are rounded to `SIMILARITY_DECIMALS`.

Past `ann_threshold` claims the exact pass costs N² dot products, so a faiss inverted-file index
(IndexIVFFlat, inner product, k-means lists trained with the config's seed) range-searches every claim
for the pairs at or above the search radius — the lowest window bound, and the keep-all bin when sampling.
It is approximate: a pair whose two claims fall in lists the probe does not visit is missed
(bench/pair_screening.py measures the recall against the exact pass). Every pair it proposes has its
similarity recomputed here in float64 and rounded, so values do not depend on faiss's kernels. Bins below
the radius are sampled from seeded uniformly random cross-case pairs, drawn in fixed batches until each
bin holds its sample or the draw budget is spent; their pair counts are estimated from those draws.
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
    ann_threshold: int = 100_000      # claims; above it a faiss IVF index proposes the pairs above the radius
    ann_lists: int | None = None      # inverted lists (default 4·√N, at least 39 training points per list)
    ann_nprobe: int = 16              # lists visited per query (recall 0.99 of the window pairs in bench/pair_screening.py)
    ann_train_iterations: int = 10    # k-means iterations training the lists
    ann_batch: int = 8192             # queries per range search
    ann_draw_batch: int = 1_000_000   # random pairs drawn at a time for the bins below the radius
    ann_max_draws: int = 50_000_000   # and at most this many in all


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
    method: str = "exhaustive"             # exhaustive | faiss
    estimated_bins: tuple[int, ...] = ()    # bins whose count is estimated from random pairs (faiss path)


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
        unique = np.unique(all_keys, return_index=True)[1]     # a pair drawn twice (random draws) counts once
        if len(unique) < len(all_keys):
            unique = np.sort(unique)
            all_keys = all_keys[unique]
            self.pairs = PairSet(self.pairs.left[unique], self.pairs.right[unique], self.pairs.similarity[unique])
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

    def result(self, method: str, estimated_bins: tuple[int, ...] = ()) -> ScreenResult:
        samples = {b: r.pairs.sorted() for b, r in self.reservoirs.items()}
        samples.update({b: pairs.sorted() for b, pairs in self.kept_all.items()})
        windows = {name: pairs.sorted() for name, pairs in self.windows.items()}
        return ScreenResult(windows, samples, self.counts, method, estimated_bins)


def screen_pairs(embeddings: np.ndarray, groups: np.ndarray, windows: dict[str, tuple[float, float]],
                 config: ScreeningConfig = ScreeningConfig(), sample: bool = True) -> ScreenResult:
    """Screens all pairs (i < j) whose groups (cases) differ; rows of `embeddings` must be unit length."""
    emb = np.ascontiguousarray(embeddings, dtype=np.float32)
    groups = np.asarray(groups)
    if len(emb) > config.ann_threshold:
        return _screen_faiss(emb, groups, windows, config, sample)
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


def exact_similarity(emb: np.ndarray, left: np.ndarray, right: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """Cosine of each (left, right) pair in float64, rounded to SIMILARITY_DECIMALS."""
    out = np.empty(len(left), np.float64)
    for start in range(0, len(left), chunk):
        a = emb[left[start:start + chunk]].astype(np.float64)
        b = emb[right[start:start + chunk]].astype(np.float64)
        out[start:start + chunk] = np.einsum("ij,ij->i", a, b)
    return np.round(out, SIMILARITY_DECIMALS)


def _faiss_index(emb: np.ndarray, config: ScreeningConfig):
    import faiss

    n, dim = emb.shape
    lists = config.ann_lists or int(4 * np.sqrt(n))
    lists = max(1, min(lists, n // 39))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = config.seed
    index.cp.niter = config.ann_train_iterations
    index.train(emb)
    index.add(emb)
    index.nprobe = min(config.ann_nprobe, lists)
    return index


def _range_pairs(emb: np.ndarray, groups: np.ndarray, radius: float, config: ScreeningConfig):
    """Cross-case pairs (i < j) that the index finds at inner product >= radius, with exact similarities."""
    index = _faiss_index(emb, config)
    lefts, rights = [], []
    for start in range(0, len(emb), config.ann_batch):
        lims, _distances, found = index.range_search(emb[start:start + config.ann_batch], radius - 1e-4)
        left = np.repeat(np.arange(start, start + len(lims) - 1, dtype=np.int64), np.diff(lims).astype(np.int64))
        right = found.astype(np.int64)
        keep = (right > left) & (groups[left] != groups[right])
        lefts.append(left[keep])
        rights.append(right[keep])
    left, right = np.concatenate(lefts), np.concatenate(rights)
    order = np.lexsort((right, left))
    left, right = left[order], right[order]
    sim = exact_similarity(emb, left, right)
    above = sim >= radius
    return left[above], right[above], sim[above]


def _cross_pairs_total(groups: np.ndarray) -> int:
    n = len(groups)
    _, sizes = np.unique(groups, return_counts=True)
    return n * (n - 1) // 2 - int((sizes * (sizes - 1) // 2).sum())


def _sample_low_bins(emb, groups, config: ScreeningConfig, bins: range) -> tuple[dict, dict]:
    """Reservoirs and estimated pair counts for `bins`, from seeded random cross-case pairs drawn in fixed
    batches until every bin holds `samples_per_bin` pairs or `ann_max_draws` pairs were drawn."""
    sampler = _Collector({}, config, sample=True)
    rng = np.random.default_rng(config.seed + 1)
    n, drawn = len(emb), 0
    while drawn < config.ann_max_draws:
        i = rng.integers(0, n, config.ann_draw_batch)
        j = rng.integers(0, n, config.ann_draw_batch)
        i, j = np.minimum(i, j), np.maximum(i, j)
        ok = (i != j) & (groups[i] != groups[j])
        drawn += int(ok.sum())
        i, j = i[ok], j[ok]
        s = exact_similarity(emb, i, j)
        low = (s >= config.sample_from) & (s < (bins.stop * config.bin_width))
        sampler.take(i[low], j[low], s[low])
        if all(len(sampler.reservoirs[b].keys) >= config.samples_per_bin for b in bins):
            break
    total = _cross_pairs_total(groups)
    counts = {b: int(round(sampler.counts.get(b, 0) / max(drawn, 1) * total)) for b in bins}
    return {b: sampler.reservoirs[b] for b in bins}, counts


def _screen_faiss(emb, groups, windows, config, sample) -> ScreenResult:
    """Approximate: faiss range search for the pairs at or above the radius, random pairs for the bins below."""
    lows = [lo for lo, _ in windows.values()] + ([config.keep_all_from] if sample else [])
    if not lows:
        return _Collector(windows, config, sample).result("faiss")
    radius = min(lows)
    collector = _Collector(windows, config, sample)
    collector.take(*_range_pairs(emb, groups, radius, config))
    estimated: tuple[int, ...] = ()
    if sample:
        first = int(round(config.sample_from / config.bin_width))
        covered = int(np.ceil(radius / config.bin_width - 1e-9))    # bins wholly at or above the radius
        bins = range(first, min(covered, collector.keep_all_bin))
        if len(bins):
            reservoirs, counts = _sample_low_bins(emb, groups, config, bins)
            collector.reservoirs.update(reservoirs)
            collector.counts.update(counts)
            estimated = tuple(bins)
    return collector.result("faiss", estimated)
