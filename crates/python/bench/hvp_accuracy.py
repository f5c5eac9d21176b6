"""How accurate is the double backward of the entropy?

``TreeDistribution.grad_entropy_jvp`` (the double backward of
``spantree.torch.entropy``) is a complex-step derivative of the
hand-written gradient on complex partial-pivoting LU, whatever the backend.
This script measures its error against an independent oracle: central
differences of the gradient computed by the 256-bit backend
(``backend="high"``), extrapolated (Richardson), on inputs chosen so that
the perturbed scores are exact in float64 (scores on a grid of 2^-10,
integer directions, steps 2^-20 and 2^-19): the oracle's error is
``O(h^4)`` ~ 1e-24 relative, far below what is measured.

Needs the package built with its ``exact`` feature (the default):

    python crates/python/bench/hvp_accuracy.py

Prints, per family of graphs, the largest error relative to the largest
entry of the oracle, the largest condition number of the Laplacian minor,
and how many graphs the complex LU refuses (``NumericalError``: its own
estimate says it cannot be trusted there).
"""

from fractions import Fraction

import numpy as np

import spantree


def dyadic(x, bits=10):
    return np.round(x * 2.0**bits) / 2.0**bits


def graph(n, sigma, seed):
    rng = np.random.default_rng(seed)
    s = dyadic(rng.normal(scale=sigma, size=(n + 1, n + 1)))
    s[:, 0] = -np.inf
    s[np.arange(n + 1), np.arange(n + 1)] = -np.inf
    return s


def high_grad(s):
    g = spantree.grad_entropy(s, backend="high")
    return np.vectorize(lambda x: Fraction(x.text) if hasattr(x, "text") else Fraction(x),
                        otypes=[object])(g)


def oracle(s, v, h=2.0**-20):
    def d(step):
        return (high_grad(s + step * v) - high_grad(s - step * v)) / (2 * Fraction(step))

    return (4 * d(h) - d(2 * h)) / 3


def condition(s):
    """The 2-norm condition number of the single-root Laplacian minor."""
    w = np.exp(np.where(np.isfinite(s), s, -np.inf))
    n = s.shape[0] - 1
    lap = np.diag(w[1:, 1:].sum(0) + 0.0) - w[1:, 1:]
    lap[0, :] = w[0, 1:]  # Koo et al.: the first row holds the root weights
    return np.linalg.cond(lap), n


def main():
    print(f"{'graphs':36s} {'cond(L)':>9s} {'max |err| / max |H v|':>22s}")
    for n, sigma in [(5, 1.0), (36, 1.0), (36, 4.0), (36, 6.0), (36, 10.0), (60, 4.0)]:
        errors, conds, refused = [], [], 0
        for seed in range(3):
            s = graph(n, sigma, seed)
            rng = np.random.default_rng(100 + seed)
            v = rng.integers(-3, 4, size=s.shape).astype(float)
            v[~np.isfinite(s)] = 0.0
            conds.append(condition(s)[0])
            try:
                got = spantree.TreeDistribution(s).grad_entropy_jvp(v)
            except spantree.NumericalError:
                refused += 1
                continue
            exact = oracle(s, v)
            scale = max(abs(x) for x in exact.ravel())
            err = max(abs(Fraction(float(a)) - b) for a, b in zip(got.ravel(), exact.ravel()))
            errors.append(float(err / scale))
        worst = f"{max(errors):22.1e}" if errors else f"{'-':>22s}"
        note = f"   ({refused} of 3 raise NumericalError)" if refused else ""
        print(f"n = {n:2d}, scores ~ N(0, {sigma:4.1f}^2), 3 seeds  {max(conds):9.1e} {worst}{note}")


if __name__ == "__main__":
    main()
