"""The PyTorch ops: values against the oracle, gradcheck, gradgradcheck,
opcheck. PyTorch is a test requirement (make test installs it)."""

import numpy as np
import pytest
import torch

import spantree
import spantree.torch as st
from oracle import Brute, pad, random_scores


def scores_batch(seed=11, sizes=(3, 2, 4)):
    rng = np.random.default_rng(seed)
    gs = [random_scores(rng, n, forbid=0.2) for n in sizes]
    s, n = pad(gs)
    s = np.where(np.isnan(s), -np.inf, s)
    return gs, torch.tensor(s, dtype=torch.float64, requires_grad=True), torch.tensor(n)


@pytest.mark.parametrize("rooting", ["single", "multi"])
def test_values_and_gradients_against_the_oracle(rooting):
    gs, s, n = scores_batch()
    lz = st.log_partition(s, n, rooting=rooting)
    h = st.entropy(s, n, rooting=rooting)
    for i, g in enumerate(gs):
        b = Brute(g, rooting)
        np.testing.assert_allclose(lz[i].item(), b.log_z(), rtol=1e-10)
        np.testing.assert_allclose(h[i].item(), b.entropy(), rtol=1e-10)
    (grad_lz,) = torch.autograd.grad(lz.sum(), s)
    (grad_h,) = torch.autograd.grad(h.sum(), s)
    for i, g in enumerate(gs):
        k = g.shape[0]
        b = Brute(g, rooting)
        np.testing.assert_allclose(grad_lz[i, :k, :k].numpy(), b.marginals(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grad_h[i, :k, :k].numpy(), b.grad_entropy(), rtol=1e-10, atol=1e-12)
        assert not grad_lz[i, k:].any() and not grad_lz[i, :, k:].any()


def kl_on_common_arcs(s, q, n, rooting):
    """KL as a function of the scores of the arcs both p and q allow (the
    variables of gradcheck), and those scores."""
    mask = torch.isfinite(s.detach()) & torch.isfinite(q.detach())
    base_p = torch.where(mask, s.detach(), torch.tensor(-np.inf, dtype=torch.float64))
    base_q = torch.where(mask, q.detach(), torch.tensor(-np.inf, dtype=torch.float64))

    def kl(a, b):
        return st.kl(base_p.masked_scatter(mask, a), base_q.masked_scatter(mask, b), n, rooting=rooting)

    xa = s.detach()[mask].clone().requires_grad_(True)
    xb = q.detach()[mask].clone().requires_grad_(True)
    return kl, xa, xb


def finite_only(f, s):
    """f of the finite entries of s (gradcheck perturbs every input entry;
    -inf entries are structure, not variables)."""
    mask = torch.isfinite(s.detach())
    base = s.detach().clone()

    def g(x):
        return f(base.masked_scatter(mask, x))

    return g, s.detach()[mask].clone().requires_grad_(True)


@pytest.mark.parametrize("rooting", ["single", "multi"])
def test_gradcheck_and_gradgradcheck(rooting):
    _, s, n = scores_batch(seed=12)
    f, x = finite_only(lambda t: st.log_partition(t, n, rooting=rooting), s)
    assert torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradgradcheck(f, (x,))
    f, x = finite_only(lambda t: st.marginals(t, n, rooting=rooting), s)
    assert torch.autograd.gradcheck(f, (x,))
    f, x = finite_only(lambda t: st.entropy(t, n, rooting=rooting), s)
    assert torch.autograd.gradcheck(f, (x,))
    kl, xa, xb = kl_on_common_arcs(s, scores_batch(seed=13)[1], n, rooting)
    assert torch.autograd.gradcheck(kl, (xa, xb))


def test_double_backward_is_the_hessian_vector_product():
    gs, s, n = scores_batch(seed=14, sizes=(3,))
    lz = st.log_partition(s, n, rooting="multi")
    (g,) = torch.autograd.grad(lz.sum(), s, create_graph=True)
    v = torch.where(torch.isfinite(s.detach()), torch.randn_like(s), torch.zeros_like(s))
    (hv,) = torch.autograd.grad((g * v).sum(), s)
    expected = Brute(gs[0], "multi").marginals_vjp(v[0].detach().numpy())
    np.testing.assert_allclose(hv[0].numpy(), expected, rtol=1e-9, atol=1e-12)


def test_opcheck():
    _, s, n = scores_batch(seed=15)
    noise = torch.randn(s.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(16))
    q = (s.detach() + 0.3 * noise).requires_grad_(True)  # q allows exactly p's arcs
    for op, args in [
        (torch.ops.spantree.log_partition.default, (s, n, "single", "accurate")),
        (torch.ops.spantree.marginals.default, (s, n, "multi", "accurate")),
        (torch.ops.spantree.entropy.default, (s, n, "single", "log")),
        (torch.ops.spantree.kl.default, (s, q, n, "single", "accurate")),
        (torch.ops.spantree.grad_entropy.default, (s, n, "multi", "accurate")),
        (torch.ops.spantree.grad_kl.default, (s, q, n, "single", "accurate")),
    ]:
        torch.library.opcheck(op, args)


def test_float32_is_computed_in_float64():
    gs, s, n = scores_batch(seed=17, sizes=(3,))
    s32 = s.detach().to(torch.float32).requires_grad_(True)
    lz = st.log_partition(s32, n)
    assert lz.dtype == torch.float32
    lz.sum().backward()
    assert s32.grad.dtype == torch.float32
    b = Brute(s32.detach()[0].double().numpy(), "single")
    np.testing.assert_allclose(lz[0].item(), b.log_z(), rtol=1e-6)


def test_one_graph_and_labeled():
    rng = np.random.default_rng(18)
    g = random_scores(rng, 2, labels=2)
    t = torch.tensor(g[None], requires_grad=True)
    lz = st.log_partition(t)
    lz.sum().backward()
    b = Brute(g, "single")
    np.testing.assert_allclose(t.grad[0].numpy(), b.marginals(), rtol=1e-10, atol=1e-12)
    one = torch.tensor(random_scores(rng, 3))
    assert st.entropy(one).dim() == 0


@pytest.mark.parametrize("rooting", ["single", "multi"])
def test_second_derivatives_of_entropy_and_kl(rooting):
    # gradgradcheck compares the double backward (complex-step HVPs) with
    # finite differences of the backward; the oracle checks the values.
    _, s, n = scores_batch(seed=19)
    f, x = finite_only(lambda t: st.entropy(t, n, rooting=rooting), s)
    assert torch.autograd.gradgradcheck(f, (x,))
    kl, xa, xb = kl_on_common_arcs(s, scores_batch(seed=20)[1], n, rooting)
    assert torch.autograd.gradgradcheck(kl, (xa, xb))


@pytest.mark.parametrize("labels", [None, 2])
def test_entropy_and_kl_hessian_vector_products_against_the_oracle(labels):
    rng = np.random.default_rng(25)
    for n in (2, 3):
        p = random_scores(rng, n, labels=labels, forbid=0.0)
        q = random_scores(rng, n, labels=labels, forbid=0.0)
        bp, bq = Brute(p, "single"), Brute(q, "single")
        tp = torch.tensor(p, requires_grad=True)
        tq = torch.tensor(q, requires_grad=True)
        fin = torch.isfinite(tp.detach())
        vp = torch.where(fin, torch.randn(tp.shape, dtype=torch.float64), 0.0)
        vq = torch.where(fin, torch.randn(tp.shape, dtype=torch.float64), 0.0)
        labeled = labels is not None
        (g,) = torch.autograd.grad(st.entropy(tp, labeled=labeled), tp, create_graph=True)
        (hv,) = torch.autograd.grad((g * vp).sum(), tp)
        # 1e-9: complex-step is exact to rounding; a few small LUs.
        np.testing.assert_allclose(hv.numpy(), bp.grad_entropy_jvp(vp.numpy()), rtol=1e-9, atol=1e-11)
        gp, gq = torch.autograd.grad(st.kl(tp, tq, labeled=labeled), (tp, tq), create_graph=True)
        hp, hq = torch.autograd.grad((gp * vp).sum() + (gq * vq).sum(), (tp, tq))
        ep, eq = bp.grad_kl_jvp(bq, vp.numpy(), vq.numpy())
        np.testing.assert_allclose(hp.numpy(), ep, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(hq.numpy(), eq, rtol=1e-9, atol=1e-11)
