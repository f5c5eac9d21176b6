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
