import numpy as np
import pytest

from caseforge.tasks.casefacts.calibration import calibrate_window
from caseforge.tasks.casefacts.screening import ScreeningConfig, screen_pairs


def _clustered(n=600, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))
    emb = centres[rng.integers(0, 40, n)] + rng.standard_normal((n, dim)) * rng.uniform(0.3, 1.5, (n, 1))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    groups = np.arange(n) // 3                      # three claims per case
    return emb.astype(np.float32), groups


def _brute(emb, groups):
    sim = emb @ emb.T
    i, j = np.triu_indices(len(emb), k=1)
    keep = groups[i] != groups[j]
    return i[keep], j[keep], sim[i[keep], j[keep]]


def test_windows_match_brute_force_with_small_tiles():
    emb, groups = _clustered()
    config = ScreeningConfig(row_block=64, col_block=100, samples_per_bin=50)
    result = screen_pairs(emb, groups, {"contradiction": (0.7, 0.95), "overlap": (0.8, 0.97)}, config)
    i, j, s = _brute(emb, groups)
    for name, (lo, hi) in {"contradiction": (0.7, 0.95), "overlap": (0.8, 0.97)}.items():
        expected = {(a, b) for a, b, v in zip(i, j, s) if lo <= v <= hi}
        got = set(zip(result.windows[name].left.tolist(), result.windows[name].right.tolist()))
        assert got == expected and len(expected) > 0
    assert (result.windows["overlap"].left < result.windows["overlap"].right).all()
    assert (groups[result.windows["overlap"].left] != groups[result.windows["overlap"].right]).all()


def test_bin_counts_and_stratified_samples():
    emb, groups = _clustered()
    config = ScreeningConfig(row_block=128, col_block=128, samples_per_bin=30, seed=5)
    result = screen_pairs(emb, groups, {}, config)
    i, j, s = _brute(emb, groups)
    bins = np.floor(np.minimum(s, 1.0) / 0.1 + 1e-6).astype(int)
    for b in range(2, 11):
        assert result.bin_counts.get(b, 0) == int((bins == b).sum())
        pairs = result.samples.get(b)
        if b >= 9:
            assert len(pairs) == int((bins == b).sum())          # every pair kept at 0.9–1.0
        else:
            assert len(pairs) == min(30, int((bins == b).sum()))
        if len(pairs):
            assert (np.floor(pairs.similarity / 0.1 + 1e-6) == b).all()
            assert len(set(zip(pairs.left.tolist(), pairs.right.tolist()))) == len(pairs)
    assert 0 not in result.samples and 1 not in result.samples   # below 0.2 is skipped
    again = screen_pairs(emb, groups, {}, config)
    assert np.array_equal(again.samples[5].left, result.samples[5].left)   # seeded


def test_reservoir_sample_is_roughly_uniform_across_tiles():
    emb, groups = _clustered(n=400)
    i, j, s = _brute(emb, groups)
    target = int(np.argmax(np.bincount(np.floor(s[s >= 0.2] / 0.1 + 1e-6).astype(int))))
    members = {(a, b) for a, b, v in zip(i, j, s) if int(np.floor(v / 0.1 + 1e-6)) == target}
    hits = {}
    for seed in range(40):
        res = screen_pairs(emb, groups, {}, ScreeningConfig(row_block=50, col_block=70, samples_per_bin=20, seed=seed))
        for pair in zip(res.samples[target].left.tolist(), res.samples[target].right.tolist()):
            hits[pair] = hits.get(pair, 0) + 1
    first_rows = sum(v for (a, _), v in hits.items() if a < 200)
    expected_share = sum(1 for a, _ in members if a < 200) / len(members)
    assert abs(first_rows / sum(hits.values()) - expected_share) < 0.08


def test_above_the_threshold_faiss_finds_the_window_pairs_with_exact_similarities():
    emb, groups = _clustered(n=1500)
    config = ScreeningConfig(ann_threshold=1000, samples_per_bin=20)
    windows = {"contradiction": (0.7, 0.95), "overlap": (0.8, 0.97)}
    result = screen_pairs(emb, groups, windows, config, sample=False)
    assert result.method == "faiss"
    exact = screen_pairs(emb, groups, windows, ScreeningConfig(samples_per_bin=20), sample=False)
    assert exact.method == "exhaustive"          # below the threshold the exact tiled pass is kept
    i, j, s = _brute(emb.astype(np.float64), groups)
    s = np.round(s, 6)
    for name, (lo, hi) in windows.items():
        inside = (s >= lo) & (s <= hi)
        expected = dict(zip(zip(i[inside].tolist(), j[inside].tolist()), s[inside].tolist()))
        got = dict(zip(zip(result.windows[name].left.tolist(), result.windows[name].right.tolist()),
                       result.windows[name].similarity.astype(np.float64).tolist()))
        assert set(got) <= set(expected) and len(got) >= 0.95 * len(expected) and len(expected) > 100
        # similarities recomputed in float64, not faiss's float32 distances
        assert all(abs(got[pair] - expected[pair]) < 1e-7 for pair in got)
        assert (groups[result.windows[name].left] != groups[result.windows[name].right]).all()
        assert (result.windows[name].left < result.windows[name].right).all()


def test_faiss_path_keeps_every_high_pair_and_samples_lower_bins_from_seeded_random_pairs():
    emb, groups = _clustered(n=1500)
    config = ScreeningConfig(ann_threshold=1000, samples_per_bin=25, seed=7)
    result = screen_pairs(emb, groups, {}, config)
    i, j, s = _brute(emb, groups)
    bins = np.floor(np.minimum(np.round(s, 6), 1.0) / 0.1 + 1e-6).astype(int)
    for b in (9, 10):                                        # kept whole at 0.9–1.0, as the exact path does
        assert len(result.samples[b]) >= 0.95 * int((bins == b).sum())
    for b in range(2, 9):
        pairs = result.samples[b]
        assert len(pairs) == min(25, int((bins == b).sum()))
        assert (np.floor(pairs.similarity / 0.1 + 1e-6) == b).all()
        assert len(set(zip(pairs.left.tolist(), pairs.right.tolist()))) == len(pairs)
        # counts below the search radius are estimated from the random pairs: the right order of magnitude
        assert 0.5 * (bins == b).sum() <= result.bin_counts[b] <= 2 * (bins == b).sum() or (bins == b).sum() < 50
    again = screen_pairs(emb, groups, {}, config)
    for b in range(2, 11):
        assert np.array_equal(again.samples[b].left, result.samples[b].left)
        assert np.array_equal(again.samples[b].right, result.samples[b].right)


def test_window_calibration_recovers_planted_interval():
    rng = np.random.default_rng(1)
    sims = np.concatenate([rng.uniform(0.2, 1.0, 4000)])
    positive = (sims >= 0.70) & (sims <= 0.95) & (rng.random(4000) < 0.3)
    window = calibrate_window(sims, positive, coverage=0.95)
    assert 0.69 <= window.low <= 0.72 and 0.93 <= window.high <= 0.96
    assert window.positives == int(positive.sum())
    with pytest.raises(ValueError, match="cannot calibrate"):
        calibrate_window(sims, np.zeros(4000, bool))


def test_faiss_path_gives_the_same_pairs_on_one_thread_and_on_two():
    import faiss

    emb, groups = _clustered(n=1500)
    config = ScreeningConfig(ann_threshold=1000, samples_per_bin=25)
    windows = {"overlap": (0.8, 0.97)}
    before = faiss.omp_get_max_threads()
    try:
        results = []
        for threads in (1, 2):
            faiss.omp_set_num_threads(threads)
            results.append(screen_pairs(emb, groups, windows, config))
    finally:
        faiss.omp_set_num_threads(before)
    one, two = results
    assert np.array_equal(one.windows["overlap"].left, two.windows["overlap"].left)
    assert np.array_equal(one.windows["overlap"].right, two.windows["overlap"].right)
    for b in one.samples:
        assert np.array_equal(one.samples[b].left, two.samples[b].left)
    assert one.bin_counts == two.bin_counts
