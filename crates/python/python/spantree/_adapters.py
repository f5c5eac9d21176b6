"""Layout adapters between spantree and its peers.

| layout | shape | index | root | lengths |
|---|---|---|---|---|
| spantree | ``[B, N+1, N+1]`` | ``[head, dependent]`` | node 0; column 0 and diagonal ``-inf`` | ``n_words`` |
| torch-struct (``NonProjectiveDependencyCRF``) | ``[B, N, N]`` | ``[head, dependent]``, words 0-based | ``[m, m]`` is the root score of word ``m`` | ``lengths`` |
| SuPar (``s_arc``) | ``[B, N+1, N+1]`` | ``[dependent, head]`` | position 0 (BOS) | ``lens`` (words, without BOS) |

Each ``from_*`` returns spantree scores (with ``n_words`` for SuPar); each
``to_*`` is its inverse on the entries that are arcs. They work on NumPy
arrays and on PyTorch tensors (differentiably: they only index, transpose
and mask).
"""

from __future__ import annotations

import numpy as np


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _neg_inf_like(x, shape):
    if _is_torch(x):
        import torch

        return torch.full(shape, float("-inf"), dtype=x.dtype, device=x.device)
    return np.full(shape, -np.inf, dtype=np.result_type(x, np.float64))


def _eye(x, n):
    if _is_torch(x):
        import torch

        return torch.eye(n, dtype=torch.bool, device=x.device)
    return np.eye(n, dtype=bool)


def _where(cond, a, b):
    if _is_torch(a):
        import torch

        return torch.where(cond, a, b)
    return np.where(cond, a, b)


def _diagonal(x):
    if _is_torch(x):
        return x.diagonal(0, -2, -1)
    return np.diagonal(x, 0, -2, -1)


def from_torch_struct(arc_scores):
    """torch-struct's ``[..., n, n]`` (``[head, dependent]``, root scores on
    the diagonal) to spantree's ``[..., n+1, n+1]``."""
    n = arc_scores.shape[-1]
    shape = (*arc_scores.shape[:-2], n + 1, n + 1)
    off = _where(_eye(arc_scores, n), _neg_inf_like(arc_scores, arc_scores.shape), arc_scores)
    out = _neg_inf_like(arc_scores, shape)
    if _is_torch(arc_scores):
        import torch

        root = _diagonal(arc_scores).unsqueeze(-2)  # [..., 1, n]
        top = torch.cat([_neg_inf_like(arc_scores, (*arc_scores.shape[:-2], 1, 1)), root], -1)
        body = torch.cat([_neg_inf_like(arc_scores, (*arc_scores.shape[:-2], n, 1)), off], -1)
        return torch.cat([top, body], -2)
    out[..., 0, 1:] = _diagonal(arc_scores)
    out[..., 1:, 1:] = off
    return out


def to_torch_struct(scores):
    """spantree's ``[..., n+1, n+1]`` to torch-struct's ``[..., n, n]``: the
    root arcs ``0 -> m`` go to the diagonal."""
    n = scores.shape[-1] - 1
    words = scores[..., 1:, 1:]
    root = scores[..., 0, 1:]
    if _is_torch(scores):
        import torch

        return torch.where(_eye(scores, n), torch.diag_embed(root), words)
    out = np.array(words, dtype=np.result_type(scores, np.float64), copy=True)
    idx = np.arange(n)
    out[..., idx, idx] = root
    return out


def from_supar(s_arc, lens):
    """SuPar's ``s_arc`` ``[B, N+1, N+1]`` (``[dependent, head]``, position 0
    the root) and ``lens`` (words per sentence) to ``(scores, n_words)``: the
    transpose, with column 0 and the diagonal set to ``-inf`` (SuPar leaves
    them arbitrary)."""
    if _is_torch(s_arc):
        scores = s_arc.transpose(-1, -2)
    else:
        scores = np.swapaxes(np.asarray(s_arc), -1, -2)
    side = scores.shape[-1]
    forbidden = _eye(scores, side)
    if _is_torch(scores):
        forbidden = forbidden.clone()
    else:
        forbidden = forbidden.copy()
    forbidden[:, 0] = True
    scores = _where(forbidden, _neg_inf_like(scores, scores.shape), scores)
    lens = lens.cpu().numpy() if _is_torch(lens) else np.asarray(lens)
    return scores, lens


def to_supar(scores, n_words):
    """spantree's ``(scores, n_words)`` to SuPar's ``(s_arc, lens)``."""
    if _is_torch(scores):
        return scores.transpose(-1, -2), n_words
    return np.swapaxes(np.asarray(scores), -1, -2).copy(), np.asarray(n_words)
