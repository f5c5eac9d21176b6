"""The layout adapters round-trip, and agree with the oracle."""

import numpy as np

import spantree
from oracle import Brute, random_scores


def batch(seed=10, n=4, b=3):
    rng = np.random.default_rng(seed)
    return np.stack([random_scores(rng, n, forbid=0.2) for _ in range(b)])


def test_torch_struct_round_trip():
    s = batch()
    ts = spantree.to_torch_struct(s)
    assert ts.shape == (3, 4, 4)
    # Root scores on the diagonal, word-to-word arcs off it.
    np.testing.assert_array_equal(np.diagonal(ts, 0, 1, 2), s[:, 0, 1:])
    np.testing.assert_array_equal(ts[:, 0, 1], s[:, 1, 2])
    np.testing.assert_array_equal(spantree.from_torch_struct(ts), s)
    np.testing.assert_array_equal(spantree.to_torch_struct(spantree.from_torch_struct(ts)), ts)


def test_supar_round_trip_and_junk_on_non_arcs():
    s = batch()
    s_arc, lens = spantree.to_supar(s, [4, 2, 3])
    np.testing.assert_array_equal(s_arc[:, 2, 1], s[:, 1, 2])  # [dependent, head]
    junk = s_arc.copy()
    # SuPar leaves junk on the non-arcs: arcs into the root (its row 0) and self-loops.
    junk[:, 0, :] = 7.0
    junk[:, np.arange(5), np.arange(5)] = 7.0
    back, n_words = spantree.from_supar(junk, lens)
    np.testing.assert_array_equal(back, s)
    assert n_words.tolist() == [4, 2, 3]
    d = spantree.TreeDistribution(back, n_words)
    np.testing.assert_allclose(d.log_partition()[1], Brute(s[1, :3, :3]).log_z(), rtol=1e-10)


def test_torch_struct_layout_means_the_same_distribution():
    s = batch(b=1)[0]
    b = Brute(s, "multi")
    ts = spantree.to_torch_struct(s)
    np.testing.assert_allclose(
        spantree.log_partition(spantree.from_torch_struct(ts), rooting="multi"), b.log_z(), rtol=1e-10
    )
