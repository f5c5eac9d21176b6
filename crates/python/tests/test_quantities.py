"""Every quantity of the NumPy interface against the brute-force oracle."""

from fractions import Fraction

import numpy as np
import pytest

import spantree
from oracle import Brute, pad, random_scores

FLOAT_BACKENDS = ["accurate", "f64", "log"]
ROOTINGS = ["single", "multi"]
# rel 1e-10: one LU of a graph of <= 6 nodes with scores ~N(0, 1), condition
# number well below 1e3, against a sum of <= 6^4 positive terms.
TOL = dict(rtol=1e-10, atol=1e-12)


def graphs(seed, sizes=(1, 2, 3, 4), forbid=0.25):
    rng = np.random.default_rng(seed)
    return [random_scores(rng, n, forbid=forbid) for n in sizes]


@pytest.mark.parametrize("backend", FLOAT_BACKENDS)
@pytest.mark.parametrize("rooting", ROOTINGS)
def test_first_order_quantities(backend, rooting):
    for s in graphs(1):
        b = Brute(s, rooting)
        d = spantree.TreeDistribution(s, rooting=rooting, backend=backend)
        np.testing.assert_allclose(d.log_partition(), b.log_z(), **TOL)
        np.testing.assert_allclose(d.marginals(), b.marginals(), **TOL)
        np.testing.assert_allclose(d.entropy(), b.entropy(), **TOL)
        np.testing.assert_allclose(d.grad_entropy(), b.grad_entropy(), **TOL)
        np.testing.assert_allclose(d.renyi(2.0), b.renyi(2.0), **TOL)
        np.testing.assert_allclose(d.lp_norm(3.0), b.lp_norm(3.0), **TOL)
        kw = dict(rooting=rooting, backend=backend)
        np.testing.assert_allclose(spantree.renyi(s, 0.5, **kw), b.renyi(0.5), **TOL)
        np.testing.assert_allclose(spantree.lp_norm(s, 0.5, **kw), b.lp_norm(0.5), **TOL)
        np.testing.assert_allclose(spantree.entropy(s, **kw), b.entropy(), **TOL)
        np.testing.assert_allclose(spantree.partition(s, **kw), float(b.z), rtol=1e-10)


@pytest.mark.parametrize("rooting", ROOTINGS)
def test_divergences_and_hessian_vector_products(rooting):
    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 4):
        p = random_scores(rng, n, forbid=0.0)
        q = random_scores(rng, n, forbid=0.0)
        bp, bq = Brute(p, rooting), Brute(q, rooting)
        dp = spantree.TreeDistribution(p, rooting=rooting)
        dq = spantree.TreeDistribution(q, rooting=rooting)
        np.testing.assert_allclose(dp.kl(dq), bp.kl(bq), **TOL)
        np.testing.assert_allclose(spantree.kl(p, q, rooting=rooting), bp.kl(bq), **TOL)
        gp, gq = dp.grad_kl(dq)
        ep, eq = bp.grad_kl(bq)
        np.testing.assert_allclose(gp, ep, **TOL)
        np.testing.assert_allclose(gq, eq, **TOL)
        seed = np.where(np.isfinite(p), rng.normal(size=p.shape), 0.0)
        np.testing.assert_allclose(dp.marginals_vjp(seed), bp.marginals_vjp(seed), **TOL)


def test_kl_is_infinite_where_q_forbids_an_arc_p_uses():
    with np.errstate(divide="ignore"):
        p = np.log(np.array([[0, 1, 2], [0, 0, 3], [0, 4, 0.0]]))
    q = p.copy()
    q[2, 1] = -np.inf  # p's tree {0→2, 2→1} has no weight under q
    assert spantree.kl(p, q, rooting="multi") == np.inf
    assert spantree.cross_entropy(p, q, rooting="multi") == np.inf


@pytest.mark.parametrize("rooting", ROOTINGS)
def test_labeled_graphs(rooting):
    rng = np.random.default_rng(3)
    for n in (1, 2, 3):
        s = random_scores(rng, n, labels=2, forbid=0.2)
        s[1, min(2, n), 0] = -np.inf if n > 1 else s[1, min(2, n), 0]  # one forbidden label
        b = Brute(s, rooting)
        d = spantree.TreeDistribution(s, rooting=rooting, labeled=True)
        np.testing.assert_allclose(d.log_partition(), b.log_z(), **TOL)
        np.testing.assert_allclose(d.marginals(), b.marginals(), **TOL)
        np.testing.assert_allclose(d.entropy(), b.entropy(), **TOL)
        np.testing.assert_allclose(d.grad_entropy(), b.grad_entropy(), **TOL)


@pytest.mark.parametrize("rooting", ROOTINGS)
def test_exact_backend_gives_fractions_equal_to_enumeration(rooting):
    # Weights w with scores ln w: the oracle and the backend both start from
    # the float64 exp(ln w), exactly; Z and the marginals are then exact.
    w = np.array([[0, 1, 2, 1], [0, 0, 3, 5], [0, 4, 0, 1], [0, 2, 7, 0]], dtype=float)
    with np.errstate(divide="ignore"):
        s = np.log(w)
    b = Brute(s, rooting)
    d = spantree.TreeDistribution(s, rooting=rooting, backend="exact")
    z = d.partition()
    assert isinstance(z, Fraction) and z == b.z
    mu = d.marginals()
    assert mu.dtype == object
    exact = b.marginal_fractions()
    for h in range(4):
        for m in range(4):
            assert mu[h, m] == exact.get((h, m, 0), 0)
    np.testing.assert_allclose(d.log_partition(), b.log_z(), rtol=1e-15)


def test_exact_backend_refuses_logarithms():
    with pytest.raises(spantree.UsageError) as e:
        spantree.entropy(random_scores(np.random.default_rng(0), 2), backend="exact")
    assert e.value.kind == "unsupported"


@pytest.mark.parametrize("threads", [1, 2, 0])
def test_ragged_batch_equals_one_by_one(threads):
    gs = graphs(4, sizes=(3, 1, 5, 2, 4))
    scores, n_words = pad(gs)
    d = spantree.TreeDistribution(scores, n_words, rooting="multi", threads=threads)
    lz, mu, h, gh = d.log_partition(), d.marginals(), d.entropy(), d.grad_entropy()
    side = scores.shape[1]
    for i, g in enumerate(gs):
        one = spantree.TreeDistribution(g, rooting="multi")
        k = g.shape[0]
        assert lz[i] == one.log_partition()
        assert h[i] == one.entropy()
        np.testing.assert_array_equal(mu[i, :k, :k], one.marginals())
        np.testing.assert_array_equal(gh[i, :k, :k], one.grad_entropy())
        # Padding is exact zeros.
        assert not mu[i, k:, :].any() and not mu[i, :, k:].any() and k <= side
        assert not gh[i, k:, :].any() and not gh[i, :, k:].any()


def test_single_graph_returns_scalars_and_matrices():
    s = random_scores(np.random.default_rng(5), 3)
    assert isinstance(spantree.log_partition(s), float)
    assert spantree.marginals(s).shape == (4, 4)
    assert spantree.log_partition(s[None]).shape == (1,)


def test_marginals_of_each_word_sum_to_one_at_n_36():
    # The identity Σ_h μ(h → m) = 1 for every word m, on the size of the bench.
    s = random_scores(np.random.default_rng(6), 36, forbid=0.3)
    mu = spantree.marginals(np.stack([s, s]), threads=2)
    np.testing.assert_allclose(mu[:, :, 1:].sum(axis=1), 1.0, rtol=1e-12)


def test_compute_equals_the_methods():
    gs = graphs(21, sizes=(3, 2, 4))
    from oracle import pad

    scores, n_words = pad(gs)
    d = spantree.TreeDistribution(scores, n_words)
    r = d.compute("log_partition", "entropy", "grad_entropy", ("renyi", 2.0))
    np.testing.assert_array_equal(r["entropy"], d.entropy())
    np.testing.assert_array_equal(r["grad_entropy"], d.grad_entropy())
    for i, g in enumerate(gs):
        b = Brute(g)
        np.testing.assert_allclose(r["log_partition"][i], b.log_z(), **TOL)
        np.testing.assert_allclose(r["renyi"][i], b.renyi(2.0), **TOL)


@pytest.mark.parametrize("keep", [True, False])
def test_one_pass_and_later_questions_against_enumeration(keep):
    # compute() factorises each item and answers all its questions in one
    # pass; later questions reuse the kept factors (keep_factors=True) or
    # factorise again (False): every answer is the enumeration's either way.
    gs = graphs(22, sizes=(4, 1, 3, 2))
    scores, n_words = pad(gs)
    d = spantree.TreeDistribution(scores, n_words, keep_factors=keep)
    r = d.compute("log_partition", "marginals", "entropy", "grad_entropy")
    again = d.marginals(), d.entropy()
    for i, g in enumerate(gs):
        b, k = Brute(g), g.shape[0]
        np.testing.assert_allclose(r["log_partition"][i], b.log_z(), **TOL)
        np.testing.assert_allclose(r["entropy"][i], b.entropy(), **TOL)
        np.testing.assert_allclose(again[1][i], b.entropy(), **TOL)
        for mu in (r["marginals"], again[0]):
            np.testing.assert_allclose(mu[i, :k, :k], b.marginals(), **TOL)
            assert not mu[i, k:, :].any() and not mu[i, :, k:].any()
        np.testing.assert_allclose(r["grad_entropy"][i, :k, :k], b.grad_entropy(), **TOL)
