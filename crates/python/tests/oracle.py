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
        self.scores = s
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


    # ---- decoding, expectations and Hessian-vector products --------------

    def score(self, arcs):
        return math.fsum(self.scores[a] for a in arcs)

    def ranked(self):
        """Every tree with positive weight as (heads, labels, score), by
        exact weight, best first (ties: lexicographic heads, then labels)."""
        order = sorted(self.items, key=lambda t: (-t[1], [a[0] for a in t[0]], [a[2] for a in t[0]]))
        return [(tuple(a[0] for a in arcs), tuple(a[2] for a in arcs), self.score(arcs))
                for arcs, _ in order]

    def mbr(self):
        """The tree maximising sum_m P(h_m -> m (, l_m)), and that sum."""
        mu = self.marginal_fractions()
        best = max(self.items, key=lambda t: sum(mu.get(a, 0) for a in t[0]))
        arcs = best[0]
        return (tuple(a[0] for a in arcs), tuple(a[2] for a in arcs),
                float(sum(mu.get(a, 0) for a in arcs)))

    def expect(self, f):
        """E[f(arcs)] for a real function f of a tree, exactly."""
        return sum(p * Fraction(f(arcs)) for arcs, p in self.p)

    def cov_with_arcs(self, f):
        """Cov(f(d), 1[e in d]) for every (labeled) arc e, in the scores' layout:
        the gradient of E[f] with respect to the scores for f independent of
        them."""
        ef = self.expect(f)
        cov = {}
        for arcs, p in self.p:
            c = p * (Fraction(f(arcs)) - ef)
            for a in arcs:
                cov[a] = cov.get(a, 0) + c
        return self._array(lambda h, m, l: float(cov.get((h, m, l), 0)))

    def attachment(self, heads, labels=None):
        n = len(heads)

        def f(arcs):
            return Fraction(sum(
                1 for h, m, l in arcs
                if h == heads[m - 1] and (labels is None or l == labels[m - 1])), n)

        return f

    def additive(self, features):
        """F(d) = sum over the arcs of d of features[h, m, (l,) :]."""
        feats = np.asarray(features, dtype=float)
        feats = feats if self.labeled else feats[:, :, None, :]
        return lambda arcs: [sum(Fraction(feats[a][k]) for a in arcs) for k in range(feats.shape[-1])]

    def covariance(self, fr, fs):
        r, s = self.additive(fr), self.additive(fs)
        er = [self.expect(lambda d, k=k: r(d)[k]) for k in range(len(r(self.p[0][0])))]
        es = [self.expect(lambda d, k=k: s(d)[k]) for k in range(len(s(self.p[0][0])))]
        return np.array([[float(sum(p * (r(a)[i] - er[i]) * (s(a)[j] - es[j]) for a, p in self.p))
                          for j in range(len(es))] for i in range(len(er))])

    def ge(self, features, targets):
        F = self.additive(features)
        dim = len(targets)
        e = [self.expect(lambda d, k=k: F(d)[k]) for k in range(dim)]
        value = float(sum((x - Fraction(t)) ** 2 for x, t in zip(e, targets)))
        # dG/dθ = 2 Σ_k (E F_k − t_k) Cov(F_k, 1_e) = Cov(Σ_k 2 (E F_k − t_k) F_k, 1_e)
        coef = [2 * (x - Fraction(t)) for x, t in zip(e, targets)]
        grad = self.cov_with_arcs(lambda d: sum(c * v for c, v in zip(coef, F(d))))
        return value, grad

    def _k3(self, p_list, x, w):
        """Per arc e: E[(X − EX)(1_e − μ_e)(W − EW)] under p_list, X and W
        functions of a tree (floats), in the scores' layout."""
        ex = math.fsum(float(p) * x(a) for a, p in p_list)
        ew = math.fsum(float(p) * w(a) for a, p in p_list)
        mu = {}
        for a, p in p_list:
            for e in a:
                mu[e] = mu.get(e, 0.0) + float(p)

        def v(h, m, l):
            e = (h, m, l)
            return math.fsum(float(p) * (x(a) - ex) * ((e in a) - mu.get(e, 0.0)) * (w(a) - ew)
                             for a, p in p_list)

        return self._array(v)

    def _linear(self, v):
        v = np.asarray(v, dtype=float)
        v = v if self.labeled else v[..., None]
        return lambda arcs: math.fsum(v[a] for a in arcs)

    def grad_entropy_jvp(self, v):
        """(∇²H) v = −(Cov(1_f, V) + κ3(s, 1_f, V)), V(d) = Σ_{g ∈ d} v_g."""
        V = self._linear(v)
        cov = self.cov_with_arcs(lambda a: Fraction(V(a)))
        k3 = self._k3(self.p, self.score, V)
        return -(cov + k3)

    def grad_kl_jvp(self, q, vp, vq):
        """The Hessian of KL(p || q) in (θ_p, θ_q) times (vp, vq)."""
        Vp, Vq = self._linear(vp), self._linear(vq)
        d = lambda a: self.score(a) - q.score(a)
        cov_vp = self.cov_with_arcs(lambda a: Fraction(Vp(a)))
        cov_vq = self.cov_with_arcs(lambda a: Fraction(Vq(a)))
        k3 = self._k3(self.p, d, Vp)
        out_p = cov_vp + k3 - cov_vq
        out_q = -cov_vp + q.cov_with_arcs(lambda a: Fraction(Vq(a)))
        return out_p, out_q


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
