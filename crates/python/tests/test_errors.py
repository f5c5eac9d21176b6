"""Every error kind the NumPy interface can meet is raised with its kind,
the batch item and the arc; errors="return" keeps the other items."""

import numpy as np
import pytest

import spantree
from oracle import Brute, random_scores


def batch_with(bad, item=1, size=3):
    """A batch of `size` good 3-word graphs with `bad` at `item`."""
    rng = np.random.default_rng(7)
    good = [random_scores(rng, 3) for _ in range(size)]
    good[item] = bad
    return np.stack(good)


def good():
    return random_scores(np.random.default_rng(8), 3)


def with_entry(h, m, value):
    s = good()
    s[h, m] = value
    return s


CASES = [
    # (kind, exception class, bad graph, arc)
    ("not_a_number", spantree.InputError, with_entry(1, 2, np.nan), (1, 2)),
    ("infinite", spantree.InputError, with_entry(2, 3, np.inf), (2, 3)),
    ("not_a_number", spantree.InputError, with_entry(0, 3, np.nan), (0, 3)),
]


def test_non_arc_cells_are_ignored():
    # Column 0 and the diagonal do not exist: whatever they hold, the graph is
    # the one with -inf there (the convention of SynJax and of the command).
    clean = good()
    junk = clean.copy()
    junk[2, 2] = 0.5
    junk[3, 0] = 7.0
    np.testing.assert_array_equal(
        spantree.log_partition(batch_with(junk)), spantree.log_partition(batch_with(clean))
    )


@pytest.mark.parametrize("kind,cls,bad,arc", CASES)
def test_validation_errors_name_item_and_arc(kind, cls, bad, arc):
    with pytest.raises(cls) as e:
        spantree.TreeDistribution(batch_with(bad))
    assert (e.value.kind, e.value.item, e.value.arc) == (kind, 1, arc)
    assert isinstance(e.value, ValueError)
    assert "batch item 1" in str(e.value)


def test_no_spanning_tree():
    bad = good()
    bad[:, 3] = -np.inf  # word 3 has no head
    with pytest.raises(spantree.NoTreeError) as e:
        spantree.log_partition(batch_with(bad, item=2))
    assert (e.value.kind, e.value.item, e.value.arc) == ("no_spanning_tree", 2, None)
    assert "word 3" in str(e.value)


def test_lengths_outside_the_padding():
    scores = batch_with(good())
    with pytest.raises(spantree.InputError) as e:
        spantree.log_partition(scores, [3, 4, 3])
    assert (e.value.kind, e.value.item) == ("mismatch", 1)
    with pytest.raises(spantree.InputError) as e:
        spantree.log_partition(scores, [3, 3, 0])
    assert (e.value.kind, e.value.item) == ("empty", 2)


def test_parameter_out_of_domain():
    with pytest.raises(spantree.InputError) as e:
        spantree.renyi(batch_with(good()), alpha=-1.0)
    assert (e.value.kind, e.value.item) == ("parameter", 0)


def test_overflow_on_the_f64_backend():
    # e^800 overflows f64: the f64 backend refuses, naming the arc; accurate copes.
    bad = with_entry(1, 3, 800.0)
    with pytest.raises(spantree.InputError) as e:
        spantree.log_partition(batch_with(bad), backend="f64")
    assert (e.value.kind, e.value.item, e.value.arc) == ("overflow", 1, (1, 3))
    assert np.isfinite(spantree.log_partition(batch_with(bad))).all()


def test_infinite_divergence_has_no_gradient():
    p = good()
    q = p.copy()
    q[1, 2] = -np.inf
    with pytest.raises(spantree.DivergenceError) as e:
        spantree.grad_kl(batch_with(p), batch_with(q))
    assert (e.value.kind, e.value.item, e.value.arc) == ("infinite_divergence", 1, (1, 2))


def test_labeled_errors_name_the_label():
    s = random_scores(np.random.default_rng(9), 2, labels=3)
    s[0, 2, 1] = np.nan
    with pytest.raises(spantree.InputError) as e:
        spantree.TreeDistribution(s[None])
    assert (e.value.kind, e.value.item, e.value.arc) == ("not_a_number", 0, (0, 2, 1))


def test_usage_errors():
    s = good()
    for kw, kind in [
        (dict(backend="nope"), "unknown_backend"),
        (dict(rooting="both"), "unknown_rooting"),
        (dict(errors="ignore"), "usage"),
    ]:
        with pytest.raises(spantree.UsageError) as e:
            spantree.log_partition(s, **kw)
        assert e.value.kind == kind and e.value.item is None
    with pytest.raises(spantree.UsageError) as e:
        spantree.log_partition(np.zeros((2, 3, 4)))
    assert e.value.kind == "shape"


def test_errors_return_keeps_the_good_items():
    bad = with_entry(1, 2, np.nan)
    scores = batch_with(bad, item=1)
    d = spantree.TreeDistribution(scores, rooting="multi", errors="return")
    values, errors = d.log_partition()
    assert errors[0] is None and errors[2] is None
    assert errors[1].kind == "not_a_number" and errors[1].arc == (1, 2)
    assert np.isnan(values[1])
    for i in (0, 2):
        np.testing.assert_allclose(values[i], Brute(scores[i], "multi").log_z(), rtol=1e-10)
    mu, errors = d.marginals()
    assert np.isnan(mu[1]).all() and errors[1].item == 1


@pytest.mark.parametrize("keep", [True, False])
def test_a_failure_found_when_factorising_keeps_the_other_items(keep):
    # The f64 backend meets e^800 when it factorises, at the first question
    # (construction only validates): with errors="return" that item holds NaN
    # in every answer of one pass and the others are the enumeration's.
    scores = batch_with(with_entry(1, 3, 800.0))
    d = spantree.TreeDistribution(scores, backend="f64", errors="return", keep_factors=keep)
    r, errors = d.compute("log_partition", "marginals")["marginals"]
    for _ in range(2):  # a second question meets the same failure
        lz, errors = d.log_partition()
        assert errors[0] is None and errors[2] is None
        assert (errors[1].kind, errors[1].item, errors[1].arc) == ("overflow", 1, (1, 3))
        assert np.isnan(lz[1])
    assert np.isnan(r[1]).all()
    for i in (0, 2):
        b = Brute(scores[i])
        # rel 1e-10: one LU of 4 nodes, scores ~N(0, 1), against 16 trees.
        np.testing.assert_allclose(lz[i], b.log_z(), rtol=1e-10)
        np.testing.assert_allclose(r[i], b.marginals(), rtol=1e-10, atol=1e-12)
