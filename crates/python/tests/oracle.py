"""The independent oracle of the tests: every tree enumerated with
itertools (n <= 5), weights as exact fractions of the float64 weights
math.exp(score) (the weights every backend starts from). Nothing here calls
spantree."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np


def trees(n, rooting):
    """Every head vector (heads[m - 1] = head of word m) of a tree over
    words 1..n rooted at 0; single rooting: exactly one word on the root."""
    for heads in itertools.product(range(n + 1), repeat=n):
        if any(h == m + 1 for m, h in enumerate(heads)):
            continue
        if rooting == "single" and sum(h == 0 for h in heads) != 1:
            continue
        ok = True
        for m in range(1, n + 1):
            seen, x = set(), m
            while x != 0:
                if x in seen:
                    ok = False
                    break
                seen.add(x)
                x = heads[x - 1]
            if not ok:
                break
        if ok:
            yield heads


def weight(score):
    return Fraction(0) if score == -math.inf else Fraction(math.exp(score))


class Brute:
    """The distribution of one graph (scores [n+1, n+1] or [n+1, n+1, L]),
    enumerated: a list of (arcs, exact weight) with arcs ((h, m, l), ...)."""

    def __init__(self, scores, rooting="single"):
        scores = np.asarray(scores, dtype=float)
        self.labeled = scores.ndim == 3
        s = scores if self.labeled else scores[..., None]
        self.shape = s.shape
        n, labels = s.shape[0] - 1, s.shape[2]
        self.items = []
        for heads in trees(n, rooting):
            for labs in itertools.product(range(labels), repeat=n):
                arcs = tuple((h, m + 1, l) for m, (h, l) in enumerate(zip(heads, labs)))
                w = Fraction(1)
                for h, m, l in arcs:
                    w *= weight(s[h, m, l])
                if w:
                    self.items.append((arcs, w))
        self.z = sum(w for _, w in self.items)
        self.p = [(arcs, w / self.z) for arcs, w in self.items]

    def _array(self, f):
        """An array in the scores' layout with f(h, m, l) in every cell."""
        out = np.zeros(self.shape)
        for idx in np.ndindex(*self.shape):
            out[idx] = f(*idx)
        return out if self.labeled else out[..., 0]

    def marginal_fractions(self):
        mu = {}
        for arcs, p in self.p:
            for a in arcs:
                mu[a] = mu.get(a, 0) + p
        return mu

    def marginals(self):
        mu = self.marginal_fractions()
        return self._array(lambda h, m, l: float(mu.get((h, m, l), 0)))

    def log_z(self):
        return math.log(self.z)

    def entropy(self):
        return -math.fsum(float(p) * math.log(p) for _, p in self.p)

    def grad_entropy(self):
        # dH/dθ_e = -Σ_d p_d (1[e ∈ d] − μ_e) ln p_d
        mu = self.marginal_fractions()

        def g(h, m, l):
            e = (h, m, l)
            return -math.fsum(
                float(p) * ((e in arcs) - float(mu.get(e, 0))) * math.log(p) for arcs, p in self.p
            )

        return self._array(g)

    def renyi(self, alpha):
        return math.log(math.fsum(float(p) ** alpha for _, p in self.p)) / (1 - alpha)

    def lp_norm(self, k):
        return math.fsum(float(p) ** k for _, p in self.p) ** (1 / k)

    def prob(self, arcs):
        return dict(self.p).get(arcs, Fraction(0))

    def kl(self, q):
        qp = dict(q.p)
        total = 0.0
        for arcs, p in self.p:
            if arcs not in qp:
                return math.inf
            total += float(p) * (math.log(p) - math.log(qp[arcs]))
        return total

    def grad_kl(self, q):
        qp = dict(q.p)
        mu = self.marginal_fractions()
        mq = q.marginal_fractions()

        def gp(h, m, l):
            e = (h, m, l)
            return math.fsum(
                float(p) * ((e in arcs) - float(mu.get(e, 0))) * (math.log(p) - math.log(qp[arcs]))
                for arcs, p in self.p
            )

        def gq(h, m, l):
            e = (h, m, l)
            return -(float(mu.get(e, 0)) - float(mq.get(e, 0)))

        return self._array(gp), self._array(gq)

    def marginals_vjp(self, seed):
        # Σ_e seed_e Cov(1_e, 1_f): the Hessian of ln Z times the seed.
        seed = np.asarray(seed, dtype=float)
        seed = seed if self.labeled else seed[..., None]
        mu = self.marginal_fractions()
        e_seed = math.fsum(
            float(p) * sum(seed[a] for a in arcs) for arcs, p in self.p
        )

        def v(h, m, l):
            f = (h, m, l)
            both = math.fsum(float(p) * sum(seed[a] for a in arcs) for arcs, p in self.p if f in arcs)
            return both - float(mu.get(f, 0)) * e_seed

        return self._array(v)


def random_scores(rng, n, labels=None, forbid=0.0, scale=1.0):
    """Scores [n+1, n+1] (or [n+1, n+1, labels]) with -inf on non-arcs and
    on a fraction `forbid` of the arcs (never all of the root's)."""
    shape = (n + 1, n + 1) if labels is None else (n + 1, n + 1, labels)
    s = rng.normal(scale=scale, size=shape)
    mask = rng.random((n + 1, n + 1)) < forbid
    mask[0, 1] = False  # keep one root arc and a chain, so that a tree exists
    for m in range(1, n):
        mask[m, m + 1] = False
    mask[:, 0] = True
    np.fill_diagonal(mask, True)
    s[mask] = -np.inf
    return s


def pad(graphs, labels=None):
    """A ragged list of graphs padded to one [B, N+1, N+1(, L)] array with
    junk (NaN) beyond each graph, and n_words."""
    side = max(g.shape[0] for g in graphs)
    shape = (len(graphs), side, side) + (() if labels is None else (labels,))
    out = np.full(shape, np.nan)
    for i, g in enumerate(graphs):
        out[i, : g.shape[0], : g.shape[0]] = g
    return out, np.array([g.shape[0] - 1 for g in graphs])
