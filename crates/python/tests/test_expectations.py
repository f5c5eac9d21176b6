"""Expected attachment, generalised expectation and covariance against the
itertools oracle (exact fractions), on float, exact and labeled graphs."""

from fractions import Fraction

import numpy as np
import pytest

import spantree
from oracle import Brute, pad, random_scores

ROOTINGS = ["single", "multi"]
# As in test_quantities: one small LU against an exact enumeration.
TOL = dict(rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("rooting", ROOTINGS)
@pytest.mark.parametrize("labels", [None, 2])
def test_expected_attachment_and_its_gradient(rooting, labels):
    rng = np.random.default_rng(31)
    for n in (1, 2, 3):
        s = random_scores(rng, n, labels=labels, forbid=0.2)
        b = Brute(s, rooting)
        ref = [0] + list(range(1, n))  # a chain from the root
        ref_labels = None if labels is None else [1] * n
        d = spantree.TreeDistribution(s, rooting=rooting, labeled=labels is not None)
        f = b.attachment(ref, ref_labels)
        np.testing.assert_allclose(d.expected_attachment(ref, ref_labels), float(b.expect(f)), **TOL)
        np.testing.assert_allclose(
            d.grad_expected_attachment(ref, ref_labels), b.cov_with_arcs(f), **TOL)


def dense_features(rng, s, dim):
    f = rng.normal(size=s.shape + (dim,))
    f[rng.random(f.shape) < 0.5] = 0.0
    return f


@pytest.mark.parametrize("rooting", ROOTINGS)
@pytest.mark.parametrize("labels", [None, 2])
def test_ge_and_covariance(rooting, labels):
    rng = np.random.default_rng(32)
    for n in (2, 3):
        s = random_scores(rng, n, labels=labels, forbid=0.1)
        b = Brute(s, rooting)
        d = spantree.TreeDistribution(s, rooting=rooting, labeled=labels is not None)
        f, g = dense_features(rng, s, 3), dense_features(rng, s, 2)
        t = rng.normal(size=3)
        value, grad = b.ge(f, t)
        np.testing.assert_allclose(d.ge(f, t), value, **TOL)
        np.testing.assert_allclose(d.grad_ge(f, t), grad, **TOL)
        np.testing.assert_allclose(d.covariance(f, g), b.covariance(f, g), **TOL)
        np.testing.assert_allclose(d.covariance(f), b.covariance(f, f), **TOL)


def test_exact_backend_gives_the_fractions():
    rng = np.random.default_rng(33)
    s = random_scores(rng, 3, forbid=0.2)
    b = Brute(s, "single")
    ref = [2, 0, 2]
    f = dense_features(rng, s, 2)
    d = spantree.TreeDistribution(s, backend="exact")
    assert d.expected_attachment(ref) == b.expect(b.attachment(ref))
    F = b.additive(f)
    mean = [b.expect(lambda a, k=k: F(a)[k]) for k in range(2)]
    cov = d.covariance(f)
    for i in range(2):
        for j in range(2):
            exact = b.expect(lambda a: (F(a)[i] - mean[i]) * (F(a)[j] - mean[j]))
            assert cov[i, j] == exact
    t = [0.5, -1.0]
    assert d.ge(f, t) == sum((m - Fraction(x)) ** 2 for m, x in zip(mean, t))


def test_batches_and_one_shots():
    rng = np.random.default_rng(34)
    gs = [random_scores(rng, n, forbid=0.2) for n in (3, 1, 2)]
    s, n = pad(gs)
    s = np.where(np.isnan(s), -np.inf, s)
    heads = np.zeros((3, 3), dtype=int)
    heads[0] = [0, 1, 2]
    heads[1, 0] = 0
    heads[2, :2] = [0, 1]
    ea = spantree.expected_attachment(s, heads, n_words=n)
    for i, g in enumerate(gs):
        words = g.shape[0] - 1
        one = spantree.expected_attachment(g, heads[i, :words])
        assert ea[i] == one
    with pytest.raises(spantree.InputError) as e:
        spantree.expected_attachment(gs[0], [0, 5, 1])
    assert e.value.kind == "no_such_arc" and e.value.arc == (5, 2)
