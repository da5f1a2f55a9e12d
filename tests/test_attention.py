"""Factored self-attention: equivalence with the Potts pseudo-likelihood, gradients, consistency."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replica_mlm as rm
from replica_mlm.learners.attention import reconstruction_error, zero_sum_gauge
from replica_mlm.learners.attention_fit import FactoredAttentionProblem
from replica_mlm.learners.plm import FullCouplingPotts, FullCouplingProblem


# ---------------------------------------------------------------------- equivalence
@settings(max_examples=30, deadline=None)
@given(
    L=st.integers(2, 8),
    q=st.integers(2, 6),
    beta=st.floats(0.01, 5.0),
    seed=st.integers(0, 2**16),
)
def test_mlm_loss_is_neg_pseudo_loglikelihood(L, q, beta, seed):
    """A = beta J, V = U: the MLM loss and per-site predictions equal the Potts ones."""
    pm = rm.PottsModel.random(L=L, q=q, seed=seed, beta=beta)
    fa = rm.FactoredAttention(attention=beta * pm.couplings, value=pm.colours)
    s = np.random.default_rng(seed).integers(0, q, size=(13, L))
    npll = pm.neg_pseudo_loglikelihood(s)
    assert abs(fa.mlm_loss(s) - npll) <= 1e-13 * max(1.0, abs(npll))
    np.testing.assert_allclose(fa.conditionals(s), pm.conditionals(s), rtol=1e-12, atol=1e-15)
    for i in range(L):
        np.testing.assert_allclose(fa.conditional(s, i), pm.conditional(s, i), rtol=1e-12,
                                   atol=1e-15)
    np.testing.assert_allclose(fa.couplings(), pm.coupling_tensor(), rtol=1e-15, atol=1e-15)


def test_couplings_gauge_invariance_of_scale():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 5))
    np.fill_diagonal(A, 0)
    V = rng.standard_normal((3, 3))
    s = rng.integers(0, 3, size=(9, 5))
    fa, fb = rm.FactoredAttention(A, V), rm.FactoredAttention(2.5 * A, V / 2.5)
    np.testing.assert_allclose(fa.couplings(), fb.couplings(), atol=1e-14)
    assert fa.mlm_loss(s) == pytest.approx(fb.mlm_loss(s), rel=1e-13)
    assert fa.couplings().shape == (5, 5, 3, 3)


def test_zero_sum_gauge_removes_conditional_gauge():
    """Shifts W_ij[a,b] += c_ij[b] and += f_ij[a] (sum_j f_ij = 0) leave conditionals and error."""
    rng = np.random.default_rng(1)
    L, q = 5, 3
    W = rng.standard_normal((L, L, q, q))
    W[np.arange(L), np.arange(L)] = 0
    c = rng.standard_normal((L, L, 1, q))
    f = rng.standard_normal((L, L, q, 1))
    f -= (f.sum(axis=1, keepdims=True) - f[np.arange(L), np.arange(L)][:, None]) / (L - 1)
    f[np.arange(L), np.arange(L)] = 0
    W2 = W + c + f
    W2[np.arange(L), np.arange(L)] = 0
    s = rng.integers(0, q, size=(11, L))
    m1, m2 = FullCouplingPotts(W), FullCouplingPotts(W2)
    np.testing.assert_allclose(m1.conditionals(s), m2.conditionals(s), atol=1e-12)
    np.testing.assert_allclose(zero_sum_gauge(W), zero_sum_gauge(W2), atol=1e-12)
    assert reconstruction_error(W2, W) < 1e-12


# ---------------------------------------------------------------------- gradients
@pytest.mark.parametrize("variant", ["linear", "softmax"])
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_gradient_matches_finite_differences(variant, lam):
    """Every coordinate, central differences with step 1e-6: relative error below 1e-6."""
    rng = np.random.default_rng(2)
    s = rng.integers(0, 4, size=(25, 5))
    prob = FactoredAttentionProblem(s, 4, lam, variant)
    x = prob.init(rng, 0.7)
    _, g = prob.loss_grad(x)
    h = 1e-6
    fd = np.empty_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        fd[k] = (prob.loss_grad(x + e)[0] - prob.loss_grad(x - e)[0]) / (2 * h)
    assert np.max(np.abs(fd - g)) <= 1e-6 * np.max(np.abs(g))
    # a mini-batch gradient is the gradient of the mini-batch objective
    idx = np.array([0, 3, 7, 11])
    _, gb = prob.loss_grad(x, idx)
    e = rng.standard_normal(x.size)
    fdb = (prob.loss_grad(x + h * e, idx)[0] - prob.loss_grad(x - h * e, idx)[0]) / (2 * h)
    assert fdb == pytest.approx(gb @ e, rel=1e-6)


def test_full_coupling_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 3, size=(20, 4))
    prob = FullCouplingProblem(s, 3, 0.2)
    x = rng.standard_normal((4, 3, 4, 3))
    x[np.arange(4), :, np.arange(4), :] = 0.0  # the diagonal blocks W_ii are not parameters
    x = x.ravel()
    _, g = prob.loss_grad(x)
    h = 1e-6
    fd = np.array([(prob.loss_grad(x + h * e)[0] - prob.loss_grad(x - h * e)[0]) / (2 * h)
                   for e in np.eye(x.size)])
    assert np.max(np.abs(fd - g)) <= 1e-6 * np.max(np.abs(g))



def test_pseudo_likelihood_kernel_sparse_products_equal_the_dense_ones():
    from replica_mlm.learners.plm_objective import PseudoLikelihood

    rng = np.random.default_rng(4)
    s = rng.integers(0, 5, size=(40, 6))
    s[1] = s[0]  # a duplicate (merged)
    w = rng.uniform(0.5, 2.0, 40)
    dense, sparse = PseudoLikelihood(s, w, 5), PseudoLikelihood(s, w, 5, sparse=True)
    Mt, h = rng.standard_normal((30, 30)), rng.standard_normal((6, 5))
    for a, b in zip(dense.value_grad(Mt, h), sparse.value_grad(Mt, h), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_full_coupling_fit_records_its_stationarity():
    # the recorded |grad F| is the objective's gradient at the returned couplings, recomputed here
    rng = np.random.default_rng(5)
    s = rng.integers(0, 3, size=(60, 4))
    for max_iter, stopped in ((2, True), (2000, False)):
        model = FullCouplingPotts.fit(s, q=3, lam=0.05, max_iter=max_iter)
        x = model.couplings().transpose(0, 2, 1, 3).ravel()
        _, g = FullCouplingProblem(s, 3, 0.05).loss_grad(x)
        info = model.fit_info
        assert info.gradient_norm == pytest.approx(np.linalg.norm(g), rel=1e-12, abs=1e-300)
        assert info.stationarity == pytest.approx(
            np.linalg.norm(g) * max(np.linalg.norm(x), 1.0), rel=1e-12, abs=1e-300)
        assert (info.stationarity > 1e-4) == stopped


# ---------------------------------------------------------------------- training
@pytest.fixture(scope="module")
def small_data():
    pm = rm.PottsModel.random(L=6, q=4, seed=4, beta=1.5)
    d = pm.gibbs_diagnostics(rng=0)
    train = pm.sample(4000, rng=1, sweeps_between=d.sweeps_between, burn_in=d.burn_in)
    test = pm.sample(4000, rng=2, sweeps_between=d.sweeps_between, burn_in=d.burn_in)
    return pm, train, test


def test_reconstruction_error_falls_with_M(small_data):
    """Consistency: the gauge-invariant error falls with M, log-log slope near -1/2."""
    pm, train, _ = small_data
    Ms = [250, 1000, 4000]
    errs = []
    for M in Ms:
        fa = rm.FactoredAttention.fit(train[:M], q=4, lam=1e-3, rng=0)
        assert fa.fit_info.converged, fa.fit_info.message
        errs.append(reconstruction_error(fa.couplings(), pm.coupling_tensor()))
    assert errs[0] > errs[1] > errs[2]
    slope = np.polyfit(np.log(Ms), np.log(errs), 1)[0]
    # one data set per M: the slope is a noisy estimate of -1/2; band [-0.8, -0.3]
    assert -0.8 < slope < -0.3, (errs, slope)


def test_test_loss_approaches_conditional_entropy(small_data):
    pm, train, test = small_data
    H = pm.neg_pseudo_loglikelihood(test)  # estimate of sum_i H(s_i | s_-i)
    lin = rm.FactoredAttention.fit(train, q=4, lam=1e-3, rng=0)
    full = FullCouplingPotts.fit(train, q=4, lam=1e-3)
    gap_lin = lin.mlm_loss(test) - H
    gap_full = full.mlm_loss(test) - H
    # paired excess on the same test set; asymptotically ~ (#parameters) / (2 M) per sequence
    assert 0 < gap_lin < 30 * (30 + 16) / (2 * 4000)
    assert gap_lin < gap_full < 30 * (30 * 16) / (2 * 4000)
    assert full.n_parameters == 6 * 5 * 16


def test_softmax_variant_attention_is_row_stochastic(small_data):
    _, train, test = small_data
    fa = rm.FactoredAttention.fit(train[:1000], q=4, lam=1e-3, variant="softmax", rng=0,
                                  max_iter=300)
    A = fa.attention
    assert np.all(np.diag(A) == 0)
    assert np.all(A[~np.eye(6, dtype=bool)] > 0)
    np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        A, np.exp(fa.fit_info.logits - fa.fit_info.logits.max(axis=1, keepdims=True))
        * ~np.eye(6, dtype=bool)
        / (np.exp(fa.fit_info.logits - fa.fit_info.logits.max(axis=1, keepdims=True))
           * ~np.eye(6, dtype=bool)).sum(axis=1, keepdims=True),
        atol=1e-14,
    )
    # J has couplings of both signs: the positive, normalised attention cannot reach the optimum
    lin = rm.FactoredAttention.fit(train[:1000], q=4, lam=1e-3, rng=0)
    assert fa.mlm_loss(test) > lin.mlm_loss(test)


def test_sgd_with_cosine_schedule_trains(small_data):
    _, train, test = small_data
    fa = rm.FactoredAttention.fit(train[:1000], q=4, lam=1e-3, rng=0, method="sgd", epochs=30,
                                  batch_size=50, lr=0.05, monitor=test[:500])
    hist = fa.fit_info.history
    assert hist.shape == (30,) and fa.fit_info.monitor_history.shape == (30,)
    assert hist[-1] < 0.9 * hist[0]
    lb = rm.FactoredAttention.fit(train[:1000], q=4, lam=1e-3, rng=0)
    # SGD gets close to the L-BFGS optimum of the same objective
    assert fa.mlm_loss(test) - lb.mlm_loss(test) < 0.05 * (lb.mlm_loss(test))


def test_fit_records_monitor_history(small_data):
    _, train, test = small_data
    fa = rm.FactoredAttention.fit(train[:300], q=4, lam=1e-2, rng=1, monitor=test[:100])
    info = fa.fit_info
    assert info.history.size == info.n_iter == info.monitor_history.size
    assert info.train_loss == pytest.approx(fa.mlm_loss(train[:300]), rel=1e-12)


# ---------------------------------------------------------------------- bad input
def test_bad_attention_input():
    A = np.zeros((4, 4))
    V = np.eye(3)
    with pytest.raises(ValueError, match="zero diagonal"):
        rm.FactoredAttention(attention=np.eye(4), value=V)
    with pytest.raises(ValueError, match="square"):
        rm.FactoredAttention(attention=np.zeros((4, 3)), value=V)
    with pytest.raises(ValueError, match="NaN"):
        rm.FactoredAttention(attention=np.full((4, 4), np.nan), value=V)
    with pytest.raises(ValueError, match="NaN"):
        rm.FactoredAttention(attention=A, value=np.full((3, 3), np.inf))
    fa = rm.FactoredAttention(attention=A, value=V)
    with pytest.raises(ValueError, match=r"out of range.*\[0, 3\)"):
        fa.mlm_loss(np.array([[0, 1, 3, 0]]))
    with pytest.raises(ValueError, match="shape"):
        fa.mlm_loss(np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="NaN"):
        fa.conditionals(np.array([[0, 1, np.nan, 0]]))
    with pytest.raises(ValueError, match="site index"):
        fa.conditional(np.zeros((1, 4), int), -1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"variant": "relu"}, "variant must be one of"),
        ({"method": "adam"}, "method must be one of"),
        ({"lam": -1.0}, "lam must be >= 0"),
        ({"lam": float("nan")}, "finite"),
        ({"q": 1}, "q must be >= 2"),
        ({"q": 2}, "out of range"),
        ({"rng": -3}, "rng"),
        ({"monitor": np.zeros((2, 5), int)}, "monitor must have shape"),
    ],
)
def test_bad_fit_input(kwargs, match):
    s = np.array([[0, 1, 2, 0], [2, 1, 0, 1]])
    args = {"q": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        rm.FactoredAttention.fit(s, **args)


def test_bad_fit_shapes():
    with pytest.raises(ValueError, match="shape"):
        rm.FactoredAttention.fit(np.array([0, 1, 2]), q=3)
    with pytest.raises(ValueError, match="L >= 2"):
        rm.FactoredAttention.fit(np.zeros((5, 1), int), q=3)
    with pytest.raises(ValueError, match="same shape"):
        reconstruction_error(np.zeros((3, 3, 2, 2)), np.zeros((4, 4, 2, 2)))


def test_fit_warns_about_colours_the_data_never_show():
    s = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 0, 2]])
    with pytest.warns(UserWarning, match=r"colours \[4, 5, 6, 7\] of q = 8 never occur in seqs"):
        rm.FactoredAttention.fit(s, q=8, max_iter=3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rm.FactoredAttention.fit(s, q=4, max_iter=3)


def test_fit_checks_every_option_whichever_method():
    s = np.array([[0, 1, 2, 0], [2, 1, 0, 1]])
    with pytest.raises(TypeError, match="epochs must be an integer"):
        rm.FactoredAttention.fit(s, q=3, method="lbfgs", epochs="10")
    with pytest.raises(ValueError, match="lr must be > 0"):
        rm.FactoredAttention.fit(s, q=3, method="lbfgs", lr=-1.0)
    with pytest.raises(TypeError, match="variant must be one of"):
        rm.FactoredAttention.fit(s, q=3, variant=None)
    with pytest.raises(TypeError, match="fit_info must be a FitInfo"):
        rm.FactoredAttention(attention=np.zeros((2, 2)), value=np.eye(2), fit_info="info")
