"""Differentiable spanning-tree ops for PyTorch (CPU).

Each op is a ``torch.library.custom_op`` with ``register_autograd`` and a
fake (meta) implementation, so it works under ``torch.compile`` and passes
``torch.library.opcheck``:

* ``log_partition``: ``ln Z``; its backward is the marginals, and the
  marginals' backward (the double backward of ``ln Z``: Hessian-vector
  products) is spantree's ``marginals_vjp``, ``O(n^3)``;
* ``marginals``: backward ``marginals_vjp``;
* ``entropy``: backward the hand-written ``grad_entropy``, ``O(n^3)``;
  double backward the Hessian-vector product ``grad_entropy_jvp``;
* ``kl``: ``KL(p || q)``, backward ``grad_kl`` for both arguments, double
  backward ``grad_kl_jvp``.

The Hessian-vector products of ``entropy`` and ``kl`` are complex-step
derivatives of the hand-written gradients (``Im grad(theta + i h v) / h``,
no cancellation, ``O(n^3)``) computed on complex partial-pivoting LU
whatever the backend: the library has a forward-mode route through its
cancellation-free elimination for ``ln Z`` only. So their accuracy is the
dense LU's, not the chosen backend's. Measured against 256-bit central
differences (``crates/python/bench/hvp_accuracy.py``; error relative to the
largest entry), n = 36: 2e-15 for scores ~ N(0, 1) (Laplacian condition
~1e1), 6e-15 for N(0, 4^2) (~4e4), 7e-14 for N(0, 6^2) (~5e6), 2e-13 for
N(0, 10^2) (~3e11). Where the LU's own error estimate says it cannot be
trusted (one graph in three at N(0, 10^2)), the double backward raises
``spantree.NumericalError`` rather than return a wrong number, even on the
accurate backend, whose first-order answers succeed there. Arcs scoring
more than ~745 below the best into their word weigh 0 in the complex LU.
Their own derivatives (third order) are not provided: differentiating them
raises.

Scores are ``[B, N+1, N+1]`` (``[B, N+1, N+1, L]`` labeled; one graph
``[N+1, N+1]`` also works) in spantree's layout, with optional ``n_words``.
float32 is accepted and computed in float64; results come back in the
input's dtype.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from . import TreeDistribution

__all__ = ["log_partition", "marginals", "entropy", "kl"]


def _dist(scores: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str):
    return TreeDistribution(
        scores.detach().cpu().to(torch.float64).numpy(),
        n_words.detach().cpu().numpy(),
        rooting=rooting,
        backend=backend,
        labeled=scores.dim() == 4,
        # Each op asks one question: no factors to keep.
        keep_factors=False,
    )


def _dists(p, q, n_words, rooting, backend):
    return _dist(p, n_words, rooting, backend), _dist(q, n_words, rooting, backend)


def _tensor(values, like: torch.Tensor) -> torch.Tensor:
    # The exact backend answers Fractions: a tensor holds their nearest floats.
    return torch.from_numpy(np.asarray(values, dtype=np.float64)).to(like.device)


def _per_item(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return grad.reshape(grad.shape[0], *([1] * (like.dim() - 1)))


# ---- ln Z -------------------------------------------------------------------


@torch.library.custom_op("spantree::log_partition", mutates_args=())
def _log_partition(
    scores: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    return _tensor(_dist(scores, n_words, rooting, backend).log_partition(), scores)


@_log_partition.register_fake
def _(scores, n_words, rooting, backend):
    return scores.new_empty(scores.shape[:1])


@torch.library.custom_op("spantree::marginals", mutates_args=())
def _marginals(
    scores: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    return _tensor(_dist(scores, n_words, rooting, backend).marginals(), scores)


@_marginals.register_fake
def _(scores, n_words, rooting, backend):
    return torch.empty_like(scores)


@torch.library.custom_op("spantree::marginals_vjp", mutates_args=())
def _marginals_vjp(
    scores: torch.Tensor, n_words: torch.Tensor, seed: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    d = _dist(scores, n_words, rooting, backend)
    return _tensor(d.marginals_vjp(seed.detach().cpu().to(torch.float64).numpy()), scores)


@_marginals_vjp.register_fake
def _(scores, n_words, seed, rooting, backend):
    return torch.empty_like(scores)


def _save(ctx, inputs, output):
    scores, n_words, rooting, backend = inputs
    ctx.save_for_backward(scores, n_words)
    ctx.rooting, ctx.backend = rooting, backend


def _log_partition_backward(ctx, grad):
    scores, n_words = ctx.saved_tensors
    mu = _marginals(scores, n_words, ctx.rooting, ctx.backend)
    return _per_item(grad, scores) * mu, None, None, None


def _marginals_backward(ctx, grad):
    scores, n_words = ctx.saved_tensors
    return _marginals_vjp(scores, n_words, grad, ctx.rooting, ctx.backend), None, None, None


_log_partition.register_autograd(_log_partition_backward, setup_context=_save)
_marginals.register_autograd(_marginals_backward, setup_context=_save)


# ---- entropy ----------------------------------------------------------------


@torch.library.custom_op("spantree::entropy", mutates_args=())
def _entropy(
    scores: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    return _tensor(_dist(scores, n_words, rooting, backend).entropy(), scores)


@_entropy.register_fake
def _(scores, n_words, rooting, backend):
    return scores.new_empty(scores.shape[:1])


@torch.library.custom_op("spantree::grad_entropy", mutates_args=())
def _grad_entropy(
    scores: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    return _tensor(_dist(scores, n_words, rooting, backend).grad_entropy(), scores)


@_grad_entropy.register_fake
def _(scores, n_words, rooting, backend):
    return torch.empty_like(scores)


@torch.library.custom_op("spantree::grad_entropy_jvp", mutates_args=())
def _grad_entropy_jvp(
    scores: torch.Tensor, n_words: torch.Tensor, v: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    d = _dist(scores, n_words, rooting, backend)
    return _tensor(d.grad_entropy_jvp(v.detach().cpu().to(torch.float64).numpy()), scores)


@_grad_entropy_jvp.register_fake
def _(scores, n_words, v, rooting, backend):
    return torch.empty_like(scores)


def _grad_entropy_backward(ctx, grad):
    # The Hessian is symmetric: the vector-Hessian product is the HVP.
    scores, n_words = ctx.saved_tensors
    return _grad_entropy_jvp(scores, n_words, grad, ctx.rooting, ctx.backend), None, None, None


_grad_entropy.register_autograd(_grad_entropy_backward, setup_context=_save)


def _entropy_backward(ctx, grad):
    scores, n_words = ctx.saved_tensors
    g = _grad_entropy(scores, n_words, ctx.rooting, ctx.backend)
    return _per_item(grad, scores) * g, None, None, None


_entropy.register_autograd(_entropy_backward, setup_context=_save)


# ---- KL ---------------------------------------------------------------------


@torch.library.custom_op("spantree::kl", mutates_args=())
def _kl(
    p: torch.Tensor, q: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    dp, dq = _dists(p, q, n_words, rooting, backend)
    return _tensor(dp.kl(dq), p)


@_kl.register_fake
def _(p, q, n_words, rooting, backend):
    return p.new_empty(p.shape[:1])


@torch.library.custom_op("spantree::grad_kl", mutates_args=())
def _grad_kl(
    p: torch.Tensor, q: torch.Tensor, n_words: torch.Tensor, rooting: str, backend: str
) -> torch.Tensor:
    dp, dq = _dists(p, q, n_words, rooting, backend)
    wrt_p, wrt_q = dp.grad_kl(dq)
    return _tensor(np.stack([wrt_p, wrt_q]), p)


@_grad_kl.register_fake
def _(p, q, n_words, rooting, backend):
    return p.new_empty((2, *p.shape))


@torch.library.custom_op("spantree::grad_kl_jvp", mutates_args=())
def _grad_kl_jvp(
    p: torch.Tensor, q: torch.Tensor, n_words: torch.Tensor, v: torch.Tensor, rooting: str,
    backend: str,
) -> torch.Tensor:
    dp, dq = _dists(p, q, n_words, rooting, backend)
    v = v.detach().cpu().to(torch.float64).numpy()
    wrt_p, wrt_q = dp.grad_kl_jvp(dq, v[0], v[1])
    return _tensor(np.stack([wrt_p, wrt_q]), p)


@_grad_kl_jvp.register_fake
def _(p, q, n_words, v, rooting, backend):
    return p.new_empty((2, *p.shape))


def _grad_kl_backward(ctx, grad):
    # grad is [2, ...] for (d/dp, d/dq); the joint Hessian is symmetric.
    p, q, n_words = ctx.saved_tensors
    g = _grad_kl_jvp(p, q, n_words, grad, ctx.rooting, ctx.backend)
    return g[0], g[1], None, None, None


def _save_kl(ctx, inputs, output):
    p, q, n_words, rooting, backend = inputs
    ctx.save_for_backward(p, q, n_words)
    ctx.rooting, ctx.backend = rooting, backend


def _kl_backward(ctx, grad):
    p, q, n_words = ctx.saved_tensors
    g = _grad_kl(p, q, n_words, ctx.rooting, ctx.backend)
    w = _per_item(grad, p)
    return w * g[0], w * g[1], None, None, None


_kl.register_autograd(_kl_backward, setup_context=_save_kl)
_grad_kl.register_autograd(_grad_kl_backward, setup_context=_save_kl)


# ---- public wrappers --------------------------------------------------------


def _prepare(scores: torch.Tensor, n_words: Optional[torch.Tensor], labeled: bool):
    single = scores.dim() == (3 if labeled else 2)
    x = scores.unsqueeze(0) if single else scores
    if x.dim() != (4 if labeled else 3):
        raise ValueError(f"scores must be [B, N+1, N+1] (or one [N+1, N+1]), got {tuple(scores.shape)}")
    x = x.to(torch.float64)
    if n_words is None:
        n_words = torch.full((x.shape[0],), x.shape[1] - 1, dtype=torch.int64)
    else:
        n_words = torch.as_tensor(n_words, dtype=torch.int64).reshape(-1)
    return x, n_words, single


def _finish(out: torch.Tensor, like: torch.Tensor, single: bool) -> torch.Tensor:
    out = out.to(like.dtype)
    return out[0] if single else out


def log_partition(scores, n_words=None, *, rooting="single", backend="accurate", labeled=None):
    """``ln Z`` per graph, differentiable twice (backward: marginals; double
    backward: ``marginals_vjp``)."""
    labeled = scores.dim() == 4 if labeled is None else labeled
    x, n, single = _prepare(scores, n_words, labeled)
    return _finish(_log_partition(x, n, rooting, backend), scores, single)


def marginals(scores, n_words=None, *, rooting="single", backend="accurate", labeled=None):
    """Arc marginals in the scores' layout, differentiable (``marginals_vjp``)."""
    labeled = scores.dim() == 4 if labeled is None else labeled
    x, n, single = _prepare(scores, n_words, labeled)
    return _finish(_marginals(x, n, rooting, backend), scores, single)


def entropy(scores, n_words=None, *, rooting="single", backend="accurate", labeled=None):
    """Shannon entropy per graph (nats), differentiable twice (backward:
    ``grad_entropy``; double backward: ``grad_entropy_jvp``)."""
    labeled = scores.dim() == 4 if labeled is None else labeled
    x, n, single = _prepare(scores, n_words, labeled)
    return _finish(_entropy(x, n, rooting, backend), scores, single)


def kl(p_scores, q_scores, n_words=None, *, rooting="single", backend="accurate", labeled=None):
    """``KL(p || q)`` per graph, differentiable twice in both arguments
    (``grad_kl``, then ``grad_kl_jvp``)."""
    labeled = p_scores.dim() == 4 if labeled is None else labeled
    p, n, single = _prepare(p_scores, n_words, labeled)
    q, _, _ = _prepare(q_scores, n_words, labeled)
    return _finish(_kl(p, q, n, rooting, backend), p_scores, single)
