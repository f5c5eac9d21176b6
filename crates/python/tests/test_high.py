"""The high-precision backend ("high", 256-bit MPFR floats): PreciseFloat
values against a 90-digit decimal enumeration of the trees."""

import decimal
from fractions import Fraction

import numpy as np
import pytest

import spantree
from oracle import Brute, random_scores

# 256 bits: relative rounding 2^-256 per operation; a 4-word LU and its
# inverse lose a few bits, so 1e-70 relative (2^-232) leaves 24 bits to spare.
REL = Fraction(1, 10**70)


def close(x: "spantree.PreciseFloat", exact) -> bool:
    exact = Fraction(exact)
    return abs(Fraction(x.text) - exact) <= REL * max(abs(exact), Fraction(1))


@pytest.mark.parametrize("rooting", ["single", "multi"])
def test_values_at_full_precision(rooting):
    # The backend takes w = e^score rounded once to 256 bits (not the f64
    # exp), so the oracle enumerates the trees (itertools) and sums e^(sum of
    # scores) in 90-digit decimal arithmetic.
    rng = np.random.default_rng(41)
    with decimal.localcontext() as ctx:
        ctx.prec = 90
        for n in (1, 2, 3, 4):
            s = random_scores(rng, n, forbid=0.2)
            b = Brute(s, rooting)
            w = [(arcs, sum(decimal.Decimal(s[h, m]) for h, m, _ in arcs).exp())
                 for arcs, _ in b.items]
            z = sum(x for _, x in w)
            d = spantree.TreeDistribution(s, rooting=rooting, backend="high")
            got = d.partition()
            assert isinstance(got, spantree.PreciseFloat) and isinstance(got, float)
            assert len(got.text.replace("-", "").split("e")[0]) > 70  # ~77 digits
            assert close(got, Fraction(z))
            assert float(got) == float(z)  # the nearest float
            mu = d.marginals()
            for h in range(n + 1):
                for m in range(n + 1):
                    exact = sum(x for arcs, x in w if (h, m, 0) in arcs) / z
                    assert close(mu[h, m], Fraction(exact))
            assert close(d.log_partition(), Fraction(z.ln()))
            h = -sum((x / z) * (x / z).ln() for _, x in w)
            assert close(d.entropy(), Fraction(h))


def test_high_is_listed_and_exact_without_logs_still_refuses():
    assert "high" in spantree.backends()
    s = random_scores(np.random.default_rng(42), 2)
    with pytest.raises(spantree.UsageError) as e:
        spantree.entropy(s, backend="exact")
    assert e.value.kind == "unsupported"
    # Trees are the same on every backend.
    assert list(spantree.best_tree(s, backend="high").heads) == list(spantree.best_tree(s).heads)


def test_double_backward_of_the_entropy_against_256_bit_differences():
    # grad_entropy_jvp is a complex-step derivative on complex dense LU
    # whatever the backend; this checks that route's accuracy on a graph with
    # a Laplacian condition ~1e4 (scores ~N(0, 4^2)) against central
    # differences of the 256-bit gradient, Richardson-extrapolated. Scores on
    # a 2^-10 grid, integer directions and steps 2^-20, 2^-19 keep every
    # perturbed score exact in float64: the oracle's error is O(h^4) ~ 1e-24.
    # (That gradient itself is checked against enumeration elsewhere.)
    rng = np.random.default_rng(43)
    n = 8
    s = np.round(rng.normal(scale=4.0, size=(n + 1, n + 1)) * 2**10) / 2**10
    s[:, 0] = -np.inf
    s[np.arange(n + 1), np.arange(n + 1)] = -np.inf
    v = rng.integers(-3, 4, size=s.shape).astype(float)
    v[~np.isfinite(s)] = 0.0

    def grad(x):
        g = spantree.grad_entropy(x, backend="high")
        return np.vectorize(lambda y: Fraction(y.text), otypes=[object])(g)

    def diff(h):
        return (grad(s + h * v) - grad(s - h * v)) / (2 * Fraction(h))

    exact = (4 * diff(2.0**-20) - diff(2.0**-19)) / 3
    got = spantree.TreeDistribution(s).grad_entropy_jvp(v)
    scale = max(abs(x) for x in exact.ravel())
    err = max(abs(Fraction(float(a)) - b) for a, b in zip(got.ravel(), exact.ravel()))
    # rel 1e-13 of the largest entry: dense LU with condition < 1e5 loses at
    # most ~5 digits (measured 6e-15 at n = 36; bench/hvp_accuracy.py).
    assert err <= Fraction(1, 10**13) * scale
