"""Decoding and sampling against the itertools oracle: the mode, the MBR
tree, the k-best list and sample frequencies (chi-squared)."""

import math

import numpy as np
import pytest

import spantree
from oracle import Brute, pad, random_scores

ROOTINGS = ["single", "multi"]


def graphs(seed, sizes=(1, 2, 3, 4), labels=None):
    rng = np.random.default_rng(seed)
    return [random_scores(rng, n, labels=labels, forbid=0.2) for n in sizes]


@pytest.mark.parametrize("rooting", ROOTINGS)
@pytest.mark.parametrize("labels", [None, 2])
def test_best_tree_kbest_and_mbr_are_the_enumerated_ones(rooting, labels):
    for s in graphs(21, labels=labels, sizes=(1, 2, 3, 4) if labels is None else (1, 2, 3)):
        b = Brute(s, rooting)
        ranked = b.ranked()
        d = spantree.TreeDistribution(s, rooting=rooting, labeled=labels is not None)
        best = d.best_tree()
        assert tuple(best.heads) == ranked[0][0]
        assert math.isclose(best.score, ranked[0][2], rel_tol=1e-12, abs_tol=1e-12)
        assert (best.labels is None) == (labels is None)
        if labels is not None:
            assert tuple(best.labels) == ranked[0][1]
        # k-best: the enumerated list, best first, padded beyond the trees there are.
        k = len(ranked) + 2
        kb = d.kbest(k)
        assert kb.heads.shape == (k, s.shape[0] - 1)
        got = [tuple(h) for h in kb.heads[: len(ranked)]]
        assert got == [r[0] for r in ranked]
        np.testing.assert_allclose(kb.score[: len(ranked)], [r[2] for r in ranked], rtol=1e-12)
        assert np.all(kb.score[len(ranked):] == -np.inf) and np.all(kb.heads[len(ranked):] == -1)
        # MBR: the tree of the highest expected attachment count.
        heads, labs, value = b.mbr()
        mbr = d.mbr_tree()
        assert math.isclose(mbr.score, value, rel_tol=1e-10)
        assert math.isclose(b.expect(b.attachment(list(mbr.heads), None if labels is None else
                                                  list(mbr.labels))) * len(heads), value,
                            rel_tol=1e-10)


def test_ragged_batches_decode_like_one_by_one():
    gs = graphs(22, sizes=(3, 1, 4))
    s, n = pad(gs)
    d = spantree.TreeDistribution(s, n, rooting="single")
    best, kb = d.best_tree(), d.kbest(3)
    for i, g in enumerate(gs):
        one = spantree.best_tree(g)
        words = g.shape[0] - 1
        assert list(best.heads[i, :words]) == list(one.heads)
        assert np.all(best.heads[i, words:] == -1)
        assert best.score[i] == one.score
        np.testing.assert_array_equal(kb.heads[i, :, :words], spantree.kbest(g, 3).heads)


@pytest.mark.parametrize("rooting", ROOTINGS)
def test_sample_frequencies_match_the_distribution(rooting):
    rng = np.random.default_rng(23)
    s = random_scores(rng, 3, forbid=0.0, scale=0.7)
    b = Brute(s, rooting)
    probs = {tuple(a[0] for a in arcs): float(p) for arcs, p in b.p}
    k = 4000
    draw = spantree.sample(s, k, seed=5, rooting=rooting)
    assert draw.heads.shape == (k, 3) and draw.labels is None
    counts = {}
    for heads, lp in zip(draw.heads, draw.log_prob):
        t = tuple(heads)
        assert t in probs  # only trees of the rooting
        assert math.isclose(lp, math.log(probs[t]), rel_tol=1e-10, abs_tol=1e-12)
        counts[t] = counts.get(t, 0) + 1
    chi2 = sum((counts.get(t, 0) - k * p) ** 2 / (k * p) for t, p in probs.items())
    df = len(probs) - 1
    # The chi-squared bound: mean df plus 6 standard deviations sqrt(2 df), a
    # tail probability below 1e-5 for these df (Wilson-Hilferty); the draw is
    # seeded, so the test is deterministic.
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)


def test_samples_are_reproducible_per_item_and_seed():
    gs = graphs(24, sizes=(3, 4, 2))
    s, n = pad(gs)
    a = spantree.TreeDistribution(s, n).sample(20, seed=9)
    b = spantree.TreeDistribution(s, n, threads=2).sample(20, seed=9)
    np.testing.assert_array_equal(a.heads, b.heads)
    # The same (seed, item) always repeats; another seed draws other trees.
    c = spantree.TreeDistribution(s, n).sample(20, seed=9)
    np.testing.assert_array_equal(a.heads, c.heads)
    d = spantree.TreeDistribution(s, n).sample(20, seed=10)
    assert not np.array_equal(a.heads, d.heads)


def test_samples_are_the_commands_trees():
    """Batch item i draws the trees of line i + 1 of `spantree infer --seed`."""
    import json
    import subprocess

    from test_dask import json_scores, spantree_command

    gs = graphs(25, sizes=(3, 2, 4))
    lines = "".join(json.dumps({"id": i, "scores": json_scores(g)}) + "\n"
                    for i, g in enumerate(gs))
    run = subprocess.run(
        spantree_command() + ["infer", "--quantities", "samples:6,kbest:2", "--seed", "4"],
        input=lines, capture_output=True, text=True, check=True)
    records = [json.loads(r) for r in run.stdout.splitlines()]
    s, n = pad(gs)
    d = spantree.TreeDistribution(s, n)
    draw, top = d.sample(6, seed=4), d.kbest(2)
    for i, (g, rec) in enumerate(zip(gs, records)):
        words = g.shape[0] - 1
        assert [list(h[:words]) for h in draw.heads[i]] == [t["heads"] for t in rec["samples"]]
        np.testing.assert_allclose(draw.log_prob[i], [t["log_prob"] for t in rec["samples"]],
                                   rtol=1e-12)
        assert [list(h[:words]) for h in top.heads[i]] == [t["heads"] for t in rec["kbest"]]


def projective(heads):
    """Whether no two arcs cross (the root 0 at the left of every word)."""
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, 1)]
    return not any(a < c < b < d for a, b in arcs for c, d in arcs)


@pytest.mark.parametrize("rooting", ROOTINGS)
def test_projective_structure(rooting):
    rng = np.random.default_rng(26)
    for n in (2, 3, 4):
        s = random_scores(rng, n, forbid=0.1)
        b = Brute(s, rooting)
        # The projective distribution: the enumerated trees without crossings.
        items = [(arcs, w) for arcs, w in b.items if projective([a[0] for a in arcs])]
        z = sum(w for _, w in items)
        d = spantree.TreeDistribution(s, rooting=rooting, structure="projective")
        np.testing.assert_allclose(d.log_partition(), math.log(z), rtol=1e-10)
        mu = np.zeros(s.shape)
        for arcs, w in items:
            for h, m, _ in arcs:
                mu[h, m] += float(w / z)
        np.testing.assert_allclose(d.marginals(), mu, rtol=1e-9, atol=1e-12)
        h = -math.fsum(float(w / z) * math.log(w / z) for _, w in items)
        np.testing.assert_allclose(d.entropy(), h, rtol=1e-9)
        best = max(items, key=lambda t: t[1])[0]
        assert tuple(d.best_tree().heads) == tuple(a[0] for a in best)
        # MBR: the projective tree of most expected correct attachments.
        gain = max(sum(mu[h, m] for h, m, _ in arcs) for arcs, _ in items)
        mbr = d.mbr_tree()
        assert projective(list(mbr.heads))
        np.testing.assert_allclose(mbr.score, gain, rtol=1e-9)
        np.testing.assert_allclose(sum(mu[h, m] for m, h in enumerate(mbr.heads, 1)), gain,
                                   rtol=1e-9)
    with pytest.raises(spantree.UsageError):
        d.kbest(2)  # not defined over projective trees
    with pytest.raises(spantree.UsageError):
        spantree.TreeDistribution(s, structure="projective", backend="exact")
