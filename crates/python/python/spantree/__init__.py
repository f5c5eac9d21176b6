"""spantree: inference over distributions of spanning trees (non-projective
dependency trees) from Python.

Scores are float64 arrays ``[B, N+1, N+1]`` indexed ``[head, dependent]``,
node 0 the root, ``-inf`` for forbidden arcs; the diagonal and column 0 are
not arcs and must hold ``-inf``. ``n_words`` (``int[B]``) gives each
sentence's length for ragged batches: entries beyond ``n_words[b] + 1`` are
ignored, and outputs are padded there with exact zeros. A single graph
``[n+1, n+1]`` is accepted too (results without the batch axis), and labeled
graphs are ``[B, N+1, N+1, L]`` (or ``[n+1, n+1, L]`` with
``labeled=True``).

>>> import numpy as np, spantree
>>> w = np.array([[0, 1, 2], [0, 0, 3], [0, 4, 0]], dtype=float)  # 0 forbids an arc
>>> s = np.log(w, where=w > 0, out=np.full(w.shape, -np.inf))
>>> round(float(np.exp(spantree.log_partition(s, rooting="multi"))), 9)
13.0

``TreeDistribution`` factorises once and answers many questions; the
functions of the same names are one-shot wrappers with the same keywords.
``spantree.torch`` (needs PyTorch) has the differentiable ops.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple, Optional

import numpy as np

from ._errors import (
    DivergenceError,
    InputError,
    NoTreeError,
    NumericalError,
    SpantreeError,
    UsageError,
    error_of,
)
from ._adapters import from_supar, from_torch_struct, to_supar, to_torch_struct
from ._spantree import Batch as _Batch
from ._spantree import backends as _backends

__all__ = [
    "TreeDistribution",
    "log_partition",
    "partition",
    "marginals",
    "entropy",
    "grad_entropy",
    "renyi",
    "lp_norm",
    "cross_entropy",
    "kl",
    "grad_kl",
    "marginals_vjp",
    "best_tree",
    "mbr_tree",
    "sample",
    "kbest",
    "expected_attachment",
    "grad_expected_attachment",
    "ge",
    "grad_ge",
    "covariance",
    "Trees",
    "Samples",
    "PreciseFloat",
    "backends",
    "from_torch_struct",
    "to_torch_struct",
    "from_supar",
    "to_supar",
    "SpantreeError",
    "InputError",
    "NoTreeError",
    "DivergenceError",
    "NumericalError",
    "UsageError",
]


class Trees(NamedTuple):
    """Decoded trees: ``heads[..., m - 1]`` is the head of word ``m`` (0 the
    root), ``-1`` beyond a sentence's words (and for the missing entries of
    a short k-best list, whose ``score`` is ``-inf``); ``score`` one number
    per tree (see each method); ``labels`` like ``heads`` on labeled input,
    else ``None``."""

    heads: np.ndarray
    score: object
    labels: Optional[np.ndarray]


class Samples(NamedTuple):
    """Sampled trees: ``heads`` and ``labels`` as in ``Trees``, and each
    tree's ``log_prob = ln p(tree)``."""

    heads: np.ndarray
    log_prob: np.ndarray
    labels: Optional[np.ndarray]


class PreciseFloat(float):
    """A value of the high-precision backend (``backend="high"``): the
    ``float`` nearest to it, plus ``text``, its decimal expansion at full
    precision (256 bits, about 77 significant digits). ``Fraction(x.text)``
    is the 256-bit value exactly; ``mpmath.mpf(x.text)`` reads it into mpmath
    (which spantree does not need)."""

    __slots__ = ("text",)

    def __new__(cls, text: str):
        x = super().__new__(cls, float(text))
        x.text = text
        return x

    def __repr__(self) -> str:
        return f"PreciseFloat({self.text!r})"


def backends() -> dict:
    """The backends by name, with one line of help each."""
    return dict(_backends())


def _native_error(e: ValueError) -> SpantreeError:
    if len(e.args) == 2 and all(isinstance(a, str) for a in e.args):
        return error_of(e.args[0], e.args[1])
    return UsageError("usage", str(e))


class TreeDistribution:
    """A batch of spanning-tree distributions, validated once, factorised
    once, that answers many questions (each ``O(n^3)`` per sentence).

    Construction validates the graphs (``O(n^2)`` each). The first question
    factorises them graph by graph: each sentence is factorised and answers
    while its factors are in cache, then the next. ``compute`` asks several
    questions in that one pass; later questions reuse the kept factors.

    Parameters
    ----------
    scores : array ``[B, N+1, N+1]``, ``[N+1, N+1]`` (one graph) or
        ``[B, N+1, N+1, L]`` (labeled); ``[head, dependent]``, 0 the root,
        ``-inf`` forbids an arc. float64 (other real dtypes are converted).
    n_words : ``int[B]`` or None (every sentence has ``N`` words).
    rooting : ``"single"`` (one word attaches to the root) or ``"multi"``.
    backend : ``"accurate"`` (default), ``"f64"``, ``"log"``, ``"exact"`` or
        ``"high"`` (see ``spantree.backends()``). ``"exact"`` computes with
        exact rationals from the exact values of the float64 weights
        ``exp(score)`` and returns ``fractions.Fraction``; it has no
        logarithms, so the entropy-type quantities raise ``UsageError``.
        ``"high"`` computes with 256-bit binary floats (MPFR; ``exp(score)``
        rounded once to 256 bits) and returns ``PreciseFloat``: a ``float``
        with the full-precision decimal text in ``.text``. Both are slow
        beyond a few dozen words; both need the package's ``exact`` feature
        (on by default).
    threads : worker threads per call; 1 (default) computes in the calling
        thread (safe in forked data loaders), 0 uses all cores.
    labeled : whether the last axis holds labels; by default 4-D input is
        labeled and 2-D/3-D input is not.
    structure : ``"nonprojective"`` (default: every spanning tree) or
        ``"projective"`` (trees without crossing arcs, Eisner's chart in
        float64 log space, ``O(n^3)``): ``log_partition``, ``marginals``,
        ``entropy``, ``grad_entropy`` and ``best_tree`` only (the command's
        ``--structure projective``); other quantities, and the ``exact``
        backend, raise ``UsageError``.
    errors : ``"raise"`` (default): a bad item raises its exception (the
        first bad item, by index), naming the item and the arc; nothing is
        returned. ``"return"``: every method returns ``(values, errors)``,
        ``errors`` a list with ``None`` or the exception of each item, and
        failed items hold NaN (``None`` on the exact backend); good items
        are computed as if alone. A weight that overflows float64 on the
        ``"f64"`` backend is found when factorising, so it is raised (or
        returned) by the first question, not by the constructor.
    keep_factors : ``True`` (default) keeps each sentence's factors for
        later questions; ``False`` drops them after each question (less
        memory; a second question factorises again). The one-shot
        functions use ``False``.

    Raises
    ------
    InputError, NoTreeError : a bad item, with ``errors="raise"``.
    UsageError : an unknown backend or rooting, or arrays of a wrong shape.
    """

    def __init__(
        self,
        scores,
        n_words=None,
        *,
        rooting: str = "single",
        backend: str = "accurate",
        threads: int = 1,
        labeled: Optional[bool] = None,
        errors: str = "raise",
        structure: str = "nonprojective",
        keep_factors: bool = True,
    ):
        if errors not in ("raise", "return"):
            raise UsageError("usage", f'errors must be "raise" or "return", got {errors!r}')
        if threads < 0:
            raise UsageError("usage", f"threads must be >= 0 (0: all cores), got {threads}")
        scores = np.asarray(scores, dtype=np.float64)
        if labeled is None:
            labeled = scores.ndim == 4
        single = scores.ndim == (3 if labeled else 2)
        if single:
            scores = scores[None]
        if scores.ndim != (4 if labeled else 3):
            raise UsageError(
                "shape",
                "scores must be [B, N+1, N+1] or [N+1, N+1] "
                "([B, N+1, N+1, L] or [N+1, N+1, L] when labeled), "
                f"got shape {scores.shape}",
            )
        if not labeled:
            scores = scores[..., None]
        items, side = scores.shape[0], scores.shape[1]
        if n_words is None:
            n_words = [side - 1] * items
        else:
            n_words = np.atleast_1d(np.asarray(n_words))
            if n_words.ndim != 1 or len(n_words) != items:
                raise UsageError(
                    "shape", f"n_words must hold {items} lengths, got shape {n_words.shape}"
                )
            if np.any(n_words < 0):
                raise UsageError("shape", f"n_words must be >= 0, got {n_words.tolist()}")
            n_words = [int(n) for n in n_words]
        try:
            self._batch = _Batch(
                np.ascontiguousarray(scores), n_words, labeled, rooting, backend, threads,
                structure, bool(keep_factors),
            )
        except ValueError as e:
            raise _native_error(e) from None
        self._single = single
        self._errors = errors
        self._threads = threads
        self.n_words = np.asarray(n_words, dtype=np.int64)
        self.rooting = rooting
        self.backend = self._batch.backend
        self.labeled = labeled
        self.structure = structure
        self._build_errors = [_item_error(f) for f in self._batch.failures]
        if errors == "raise" and self._build_errors:
            raise self._build_errors[0]

    def __len__(self) -> int:
        return self._batch.shape[0]

    def __repr__(self) -> str:
        b, side, labels, labeled = self._batch.shape
        lab = f", {labels} labels" if labeled else ""
        return (
            f"TreeDistribution({b} graphs of up to {side - 1} words{lab}, "
            f"rooting={self.rooting!r}, backend={self.backend!r})"
        )

    def _ask(self, name, param=0.0, other=None, seed=None, **extra):
        return self._ask_many([(name, float(param))], other, seed, **extra)[0]

    def _grid(self, a):
        """An array in the layout of the scores, as [B, N+1, N+1, L]."""
        a = np.asarray(a, dtype=np.float64)
        if self._single:
            a = a[None]
        if not self.labeled:
            a = a[..., None]
        return np.ascontiguousarray(a)

    def _features(self, f):
        """Dense arc features [.., N+1, N+1(, L), F] as [B, N+1, N+1, L, F]."""
        f = np.asarray(f, dtype=np.float64)
        if self._single:
            f = f[None]
        if not self.labeled:
            f = f[..., None, :]
        b, side, labels, _ = self._batch.shape
        want = (b, side, side, labels)
        if f.ndim != 5 or f.shape[:4] != want:
            raise UsageError(
                "shape",
                f"features must be scores-shaped with a last axis of F features, got {f.shape}",
            )
        return np.ascontiguousarray(f)

    def _per_item(self, a, dtype, what):
        """A per-item row [..] (one graph) or [B, ..] as [B, width], padded."""
        a = np.asarray(a, dtype=dtype)
        if self._single:
            a = a[None]
        if a.ndim == 1 and not self._single:
            a = np.broadcast_to(a, (len(self), a.shape[0]))
        if a.ndim != 2 or a.shape[0] != len(self):
            raise UsageError("shape", f"{what} must hold one row per batch item, got {a.shape}")
        return np.ascontiguousarray(a)

    def _words(self, a, what):
        """Reference heads or labels [n] / [B, <= N] as int64 [B, N]."""
        a = self._per_item(a, np.int64, what)
        if np.any(a < 0):
            raise UsageError("shape", f"{what} must be >= 0")
        out = np.zeros((len(self), self._batch.shape[1] - 1), dtype=np.int64)
        out[:, : a.shape[1]] = a
        return out

    def _ask_many(self, asks, other=None, seed=None, **extra):
        if other is not None and not isinstance(other, TreeDistribution):
            raise UsageError("usage", "q must be a TreeDistribution (or use the one-shot function)")
        if seed is not None:
            seed = self._grid(seed)
        try:
            answers = self._batch.ask(
                asks, None if other is None else other._batch, seed, self._threads, **extra
            )
        except ValueError as e:
            raise _native_error(e) from None
        return [self._convert(name, *answer) for (name, _), answer in zip(asks, answers)]

    def _finish(self, out, errors):
        if self._errors == "raise":
            for e in errors:
                if e is not None:
                    raise e
        if self._single:
            out = out[0] if not isinstance(out, tuple) else type(out)(*(
                None if x is None else x[0] for x in out))
            if isinstance(out, np.floating):
                out = float(out)
        if self._errors == "return":
            return out, errors[0:1] if self._single else errors
        return out

    def _convert(self, name, values, item_shape, failures):
        shape = (len(self), *item_shape)
        errors = [None] * len(self)
        for f in failures:
            errors[f[0]] = _item_error(f)
        if isinstance(values, tuple):
            heads, labels, numbers = values
            heads = heads.reshape(shape)
            labels = None if labels is None else labels.reshape(shape)
            numbers = numbers.reshape(shape[:2])
            if name in ("best_tree", "mbr_tree"):
                heads, numbers = heads[:, 0], numbers[:, 0]
                labels = None if labels is None else labels[:, 0]
            if name == "samples":
                out = Samples(heads, numbers, labels)
            else:
                out = Trees(heads, numbers, labels)
            out = self._finish(out, errors)
            if self._single and name in ("best_tree", "mbr_tree"):
                tree = out[0] if self._errors == "return" else out
                tree = tree._replace(score=float(tree.score))
                out = (tree, out[1]) if self._errors == "return" else tree
            return out
        if self._batch.precise:
            out = _objects(values, PreciseFloat, shape, errors)
        elif self._batch.exact and name == "log_partition":
            # ln Z is a float on every backend (its text is the f64's repr).
            out = np.array([float(v) for v in values]).reshape(shape)
        elif self._batch.exact:
            out = _objects(values, Fraction, shape, errors)
        else:
            out = np.asarray(values).reshape(shape)
        return self._finish(out, errors)

    def compute(self, *quantities):
        """Several quantities in one pass over the batch, graph by graph:
        each sentence is factorised (unless its factors were kept from an
        earlier question) and answers all of them while its factors are in
        cache, then the next sentence. ``quantities``
        are names of the methods without arguments (``"log_partition"``,
        ``"marginals"``, ``"entropy"``, ``"grad_entropy"``, ``"partition"``)
        or ``("renyi", alpha)``/``("lp_norm", k)``; returns a dict by name.

        >>> import numpy as np, spantree
        >>> w = np.array([[0, 1, 2], [0, 0, 3], [0, 4, 0]], dtype=float)  # 0 forbids an arc
        >>> s = np.log(w, where=w > 0, out=np.full(w.shape, -np.inf))
        >>> r = spantree.TreeDistribution(s, rooting="multi").compute("entropy", "marginals")
        >>> sorted(r), r["marginals"].shape
        (['entropy', 'marginals'], (3, 3))
        """
        asks = []
        for q in quantities:
            name, param = (q, 0.0) if isinstance(q, str) else (q[0], float(q[1]))
            if name not in ("log_partition", "partition", "marginals", "entropy",
                            "grad_entropy", "renyi", "lp_norm"):
                raise UsageError("unknown_quantity", f"compute() cannot give {name!r}")
            asks.append((name, param))
        values = self._ask_many(asks)
        return {name: v for (name, _), v in zip(asks, values)}

    def log_partition(self):
        """``ln Z``, ``Z = sum over trees d of prod_{arcs e in d} exp(score_e)``
        (matrix-tree theorem, Koo et al. 2007). A float on every backend."""
        return self._ask("log_partition")

    def partition(self):
        """``Z`` itself: ``fractions.Fraction`` on the exact backend, a float
        (which may overflow to ``inf``) elsewhere."""
        return self._ask("partition")

    def marginals(self):
        """``P(h -> m in the tree)`` in the input layout (per label on labeled
        input), 0 on non-arcs: the gradient of ``ln Z``."""
        return self._ask("marginals")

    def entropy(self):
        """Shannon entropy ``H(p) = -sum_d p(d) ln p(d)`` in nats."""
        return self._ask("entropy")

    def grad_entropy(self):
        """``dH/dscores``, hand-written reverse mode, ``O(n^3)``."""
        return self._ask("grad_entropy")

    def renyi(self, alpha: float):
        """Renyi entropy ``ln(sum_d p(d)^alpha) / (1 - alpha)``, ``alpha >= 0``."""
        return self._ask("renyi", float(alpha))

    def lp_norm(self, k: float):
        """``(sum_d p(d)^k)^(1/k)``, ``k > 0``."""
        return self._ask("lp_norm", float(k))

    def cross_entropy(self, q: "TreeDistribution"):
        """``H(p, q) = -sum_d p(d) ln q(d)``; ``+inf`` where ``p`` uses an arc
        ``q`` forbids. ``q`` has the same shape, rooting and backend."""
        return self._ask("cross_entropy", other=q)

    def kl(self, q: "TreeDistribution"):
        """``KL(p || q) = sum_d p(d) ln(p(d) / q(d))``; ``+inf`` where ``p``
        uses an arc ``q`` forbids."""
        return self._ask("kl", other=q)

    def grad_kl(self, q: "TreeDistribution"):
        """``(dKL/dscores_p, dKL/dscores_q)``; ``DivergenceError`` where
        ``KL = +inf``."""
        out = self._ask("grad_kl", other=q)
        if self._errors == "return":
            values, errors = out
            return _split(values, self._single), errors
        return _split(out, self._single)

    def marginals_vjp(self, seed):
        """``v_f = sum_e seed_e d(marginal_e)/d(score_f)``: a Hessian-vector
        product of ``ln Z`` (``seed`` in the layout of the scores),
        ``O(n^3)``."""
        return self._ask("marginals_vjp", seed=seed)

    def grad_entropy_jvp(self, v):
        """``(d^2 H / d scores^2) v``, ``v`` in the layout of the scores: the
        Hessian-vector product of the entropy by complex-step
        differentiation of its hand-written gradient (no cancellation,
        ``O(n^3)`` in complex partial-pivoting LU whatever the backend;
        float64 values). Its accuracy is the dense LU's: about ``1e-15``
        relative for well-conditioned Laplacians, growing with the
        condition number (``2e-13`` at ``1e11``); ``NumericalError`` where
        the LU's own error estimate fails (see ``spantree.torch``)."""
        return self._ask("grad_entropy_jvp", seed=v)

    def grad_kl_jvp(self, q: "TreeDistribution", v_p, v_q):
        """The Hessian-vector product of ``KL(p || q)`` with respect to the
        scores of ``p`` and ``q`` along ``(v_p, v_q)``: a pair like
        ``grad_kl``, as for ``grad_entropy_jvp``."""
        out = self._ask("grad_kl_jvp", other=q, seed=v_p, seed_q=self._grid(v_q))
        if self._errors == "return":
            values, errors = out
            return _split(values, self._single), errors
        return _split(out, self._single)

    # ---- decoding and sampling ------------------------------------------

    def best_tree(self) -> Trees:
        """The mode: the highest-scoring tree of the rooting (maximum spanning
        arborescence, Chu-Liu-Edmonds with the single-root constraint
        enforced exactly), ``O(L n^2)``; ``score`` is its score, the sum of
        its arcs' scores. On labeled input each arc takes its best label.
        Ties go to the lowest head (then label) index."""
        return self._ask("best_tree")

    def mbr_tree(self) -> Trees:
        """The minimum-Bayes-risk tree: the tree with the highest expected
        attachment score, the maximum spanning arborescence under the
        marginals (label marginals on labeled input), ``O(n^3)``; ``score``
        is its expected number of correct attachments ``sum_m P(h_m -> m)``."""
        return self._ask("mbr_tree")

    def sample(self, k: int, seed: int = 0) -> Samples:
        """``k`` trees drawn exactly from each distribution, with their
        ``log_prob``: heads ``[B, k, N]``. Reproducible from ``(seed, item)``:
        batch item ``i`` draws from the stream of the command's line
        ``i + 1`` (``spantree infer --seed SEED -q samples:K``), whatever
        ``threads``. ``O(n^3 + k n^2)``-ish per item (the sampler is chosen
        by its cost)."""
        return self._ask("samples", int(k), sample_seed=int(seed))

    def kbest(self, k: int) -> Trees:
        """The ``k`` highest-scoring trees of the rooting, best first
        (Camerini et al. 1980 partitioning, with the single-root constraint),
        heads ``[B, k, N]`` and ``score`` ``[B, k]`` (``-inf`` and heads
        ``-1`` beyond the number of trees a graph has)."""
        return self._ask("kbest", int(k))

    # ---- expectations of additive functions ------------------------------

    def expected_attachment(self, heads, labels=None):
        """``(1/n) sum_m P(heads[m-1] -> m)``, the expected attachment score
        against a reference tree (``heads`` ``[n]`` or ``[B, N]``, 0 the root;
        with ``labels`` the labeled score), ``O(n^3)``."""
        extra = dict(heads=self._words(heads, "heads"))
        if labels is not None:
            extra["labels"] = self._words(labels, "labels")
        return self._ask("expected_attachment", **extra)

    def grad_expected_attachment(self, heads, labels=None):
        """The gradient of ``expected_attachment`` with respect to the
        scores, reverse mode, ``O(n^3)``."""
        extra = dict(heads=self._words(heads, "heads"))
        if labels is not None:
            extra["labels"] = self._words(labels, "labels")
        return self._ask("grad_expected_attachment", **extra)

    def ge(self, features, targets):
        """The generalised-expectation objective ``||E[f] - t||^2`` (Druck et
        al. 2009) for dense arc features ``f`` (the scores' shape plus a last
        axis of ``F`` features; 0 where an arc has none) and targets ``t``
        (``[F]`` or ``[B, F]``), ``O(n^3 + nnz(f))``."""
        f = self._features(features)
        t = self._per_item(targets, np.float64, "targets")
        return self._ask("ge", features=f, targets=t)

    def grad_ge(self, features, targets):
        """The gradient of ``ge`` with respect to the scores, one reverse
        pass, ``O(n^3 + nnz(f))``."""
        f = self._features(features)
        t = self._per_item(targets, np.float64, "targets")
        return self._ask("grad_ge", features=f, targets=t)

    def covariance(self, features, features_s=None):
        """``Cov[f, g] = E[f g^T] - E[f] E[g]^T``, an ``R x S`` matrix per item,
        for dense arc features ``f`` and ``g`` (``g = f`` by default; shapes
        as for ``ge``): second order, one reverse pass per feature,
        ``O(R n^3)``."""
        extra = dict(features=self._features(features))
        if features_s is not None:
            extra["features_s"] = self._features(features_s)
        return self._ask("covariance", **extra)


def _objects(texts, convert, shape, errors):
    """An object array of convert(text), None for the failed items."""
    out = np.empty(len(texts), dtype=object)
    out[:] = [convert(v) for v in texts]
    out = out.reshape(shape)
    for i, e in enumerate(errors):
        if e is not None:
            out[i] = None
    return out


def _item_error(failure):
    item, kind, message, arc = failure
    return error_of(kind, message, item, arc)


def _split(values, single):
    axis = 0 if single else 1
    return np.take(values, 0, axis=axis), np.take(values, 1, axis=axis)


def _one_shot(name, doc):
    def f(scores, n_words=None, *, rooting="single", backend="accurate", threads=1,
          labeled=None, errors="raise", structure="nonprojective"):
        d = TreeDistribution(scores, n_words, rooting=rooting, backend=backend,
                             threads=threads, labeled=labeled, errors=errors,
                             structure=structure, keep_factors=False)
        return getattr(d, name)()

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"{doc}\n\nOne-shot form of ``TreeDistribution(scores, n_words, ...).{name}()``; "
        "keywords as ``TreeDistribution``."
    )
    return f


def _two_shot(name, doc):
    def f(p_scores, q_scores, n_words=None, *, rooting="single", backend="accurate",
          threads=1, labeled=None, errors="raise"):
        kw = dict(rooting=rooting, backend=backend, threads=threads, labeled=labeled,
                  errors=errors, keep_factors=False)
        p = TreeDistribution(p_scores, n_words, **kw)
        q = TreeDistribution(q_scores, n_words, **kw)
        return getattr(p, name)(q)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"{doc}\n\nOne-shot form of ``TreeDistribution(p_scores, ...).{name}("
        "TreeDistribution(q_scores, ...))``."
    )
    return f


log_partition = _one_shot("log_partition", TreeDistribution.log_partition.__doc__)
partition = _one_shot("partition", TreeDistribution.partition.__doc__)
marginals = _one_shot("marginals", TreeDistribution.marginals.__doc__)
entropy = _one_shot("entropy", TreeDistribution.entropy.__doc__)
grad_entropy = _one_shot("grad_entropy", TreeDistribution.grad_entropy.__doc__)


def renyi(scores, alpha, n_words=None, *, rooting="single", backend="accurate", threads=1,
          labeled=None, errors="raise"):
    """One-shot form of ``TreeDistribution(scores, n_words, ...).renyi(alpha)``."""
    d = TreeDistribution(scores, n_words, rooting=rooting, backend=backend, threads=threads,
                         labeled=labeled, errors=errors, keep_factors=False)
    return d.renyi(alpha)


def lp_norm(scores, k, n_words=None, *, rooting="single", backend="accurate", threads=1,
            labeled=None, errors="raise"):
    """One-shot form of ``TreeDistribution(scores, n_words, ...).lp_norm(k)``."""
    d = TreeDistribution(scores, n_words, rooting=rooting, backend=backend, threads=threads,
                         labeled=labeled, errors=errors, keep_factors=False)
    return d.lp_norm(k)

cross_entropy = _two_shot("cross_entropy", TreeDistribution.cross_entropy.__doc__)
kl = _two_shot("kl", TreeDistribution.kl.__doc__)
grad_kl = _two_shot("grad_kl", TreeDistribution.grad_kl.__doc__)


def marginals_vjp(scores, seed, n_words=None, *, rooting="single", backend="accurate",
                  threads=1, labeled=None, errors="raise"):
    """One-shot form of ``TreeDistribution(scores, ...).marginals_vjp(seed)``."""
    d = TreeDistribution(scores, n_words, rooting=rooting, backend=backend, threads=threads,
                         labeled=labeled, errors=errors, keep_factors=False)
    return d.marginals_vjp(seed)


best_tree = _one_shot("best_tree", TreeDistribution.best_tree.__doc__)
mbr_tree = _one_shot("mbr_tree", TreeDistribution.mbr_tree.__doc__)


def _with_args(name, doc, params):
    def f(scores, *args, n_words=None, rooting="single", backend="accurate", threads=1,
          labeled=None, errors="raise", **kwargs):
        d = TreeDistribution(scores, n_words, rooting=rooting, backend=backend,
                             threads=threads, labeled=labeled, errors=errors,
                             keep_factors=False)
        return getattr(d, name)(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"{doc}\n\nOne-shot form of ``TreeDistribution(scores, n_words=..., ...).{name}"
        f"({params})``; ``n_words`` and the other keywords as ``TreeDistribution``."
    )
    return f


sample = _with_args("sample", TreeDistribution.sample.__doc__, "k, seed=0")
kbest = _with_args("kbest", TreeDistribution.kbest.__doc__, "k")
expected_attachment = _with_args(
    "expected_attachment", TreeDistribution.expected_attachment.__doc__, "heads, labels=None")
grad_expected_attachment = _with_args(
    "grad_expected_attachment", TreeDistribution.grad_expected_attachment.__doc__,
    "heads, labels=None")
ge = _with_args("ge", TreeDistribution.ge.__doc__, "features, targets")
grad_ge = _with_args("grad_ge", TreeDistribution.grad_ge.__doc__, "features, targets")
covariance = _with_args(
    "covariance", TreeDistribution.covariance.__doc__, "features, features_s=None")
