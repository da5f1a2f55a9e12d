"""Training internals of factored attention: Hessian, trust-region step, Newton polish, starts."""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.attention import FactoredAttention
from replica_mlm.learners.attention_fit import FactoredAttentionProblem, _trust_region_step


def _problem(M=60, L=5, q=4, lam=0.3, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, q, size=(M, L))
    prob = FactoredAttentionProblem(s, q, lam, "linear")
    return prob, prob.init(rng, 0.7), rng


def test_hessian_vector_product_is_the_derivative_of_the_gradient():
    prob, x, rng = _problem()
    h = 1e-6
    for _ in range(3):
        d = rng.standard_normal(x.size)
        fd = (prob.loss_grad(x + h * d)[1] - prob.loss_grad(x - h * d)[1]) / (2 * h)
        hv = prob.hessp(x, d)
        assert np.max(np.abs(fd - hv)) <= 1e-6 * np.max(np.abs(hv))


@pytest.mark.parametrize(("M", "L", "q"), [(60, 5, 4), (200, 7, 3), (40, 3, 6)])
def test_dense_hessian_equals_the_hessian_vector_products(M, L, q):
    prob, x, _ = _problem(M, L, q, seed=M)
    H = prob.hessian(x)
    cols = np.array([prob.hessp(x, e) for e in np.eye(x.size)]).T
    assert H.shape == (L * (L - 1) + q * q,) * 2
    assert np.max(np.abs(H - cols)) <= 1e-12 * np.max(np.abs(cols))
    assert np.max(np.abs(H - H.T)) <= 1e-13 * np.max(np.abs(H))


def test_second_order_models_are_for_the_linear_variant_only():
    rng = np.random.default_rng(0)
    prob = FactoredAttentionProblem(rng.integers(0, 3, size=(10, 4)), 3, 0.1, "softmax")
    x = prob.init(rng, 0.5)
    with pytest.raises(ValueError, match="linear variant"):
        prob.hessp(x, x)
    with pytest.raises(ValueError, match="linear variant"):
        prob.hessian(x)


def test_centring_and_balancing_keep_the_data_term_and_lower_the_penalty():
    prob, x, _ = _problem(lam=2.0)
    x = np.concatenate([3.0 * x[: prob.n_att], x[prob.n_att:] + 0.5])  # unbalanced, shifted columns
    for y in (prob.centre_columns(x), prob.balance(x)):
        assert prob.train_loss(y) == pytest.approx(prob.train_loss(x), rel=1e-13)
        assert prob.loss_grad(y)[0] < prob.loss_grad(x)[0]
    _, V, _ = prob.unpack(prob.centre_columns(x))
    np.testing.assert_allclose(V.sum(axis=0), 0.0, atol=1e-13)
    b = prob.balance(x)
    assert np.linalg.norm(b[: prob.n_att]) == pytest.approx(np.linalg.norm(b[prob.n_att:]), rel=1e-13)
    # at the balanced point the gradient has no component along the scale move (c A, V / c)
    g = prob.loss_grad(b)[1]
    scale = np.concatenate([b[: prob.n_att], -b[prob.n_att:]])
    assert abs(g @ scale) <= 1e-12 * np.linalg.norm(g) * np.linalg.norm(scale)


@pytest.mark.parametrize("case", ["convex_inside", "convex_boundary", "indefinite", "hard"])
def test_trust_region_step_solves_the_subproblem(case):
    """KKT conditions of min g.p + p.H p / 2 on |p| <= r, and no random feasible point does better."""
    rng = np.random.default_rng(7)
    n = 12
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = np.sort(rng.uniform(0.5, 3.0, n))
    if case in ("indefinite", "hard"):
        w[:2] = [-1.5, -0.2]
    H = Q @ np.diag(w) @ Q.T
    g = rng.standard_normal(n)
    if case == "hard":
        g -= (g @ Q[:, 0]) * Q[:, 0]  # orthogonal to the lowest eigenvector
    r = {"convex_inside": 100.0, "convex_boundary": 0.05}.get(case, 0.7)
    p = _trust_region_step(w, Q, Q.T @ g, r)
    model = lambda v: g @ v + 0.5 * v @ H @ v  # noqa: E731
    assert np.linalg.norm(p) <= r * (1 + 1e-9)
    if case == "convex_inside":
        np.testing.assert_allclose(p, -np.linalg.solve(H, g), rtol=1e-10)
    else:
        assert np.linalg.norm(p) == pytest.approx(r, rel=1e-9)
    lam = -float((H @ p + g) @ p) / float(p @ p)  # (H + lam I) p = -g with lam >= -w_min
    assert lam >= max(0.0, -w[0]) - 1e-8
    np.testing.assert_allclose(H @ p + lam * p, -g, atol=1e-8)
    trial = rng.standard_normal((2000, n))
    trial *= (r * rng.uniform(0, 1, (2000, 1)) ** (1 / n)) / np.linalg.norm(trial, axis=1, keepdims=True)
    assert model(p) <= min(model(t) for t in trial) + 1e-12


@pytest.fixture(scope="module")
def two_minima():
    """A Potts instance on which the objective has (at least) two local minima."""
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence([0, 2]).spawn(4)]
    pm = rm.PottsModel.random(L=6, q=4, seed=gens[0]).with_beta(1.75)
    return pm.sample(1000, rng=0, sweeps_between=5, burn_in=50)


def test_newton_polish_makes_every_fit_stationary_and_flags_what_is_not(two_minima):
    train = two_minima
    mf = FactoredAttention.fit(train, q=4, lam=1e-3, init="mean-field", max_iter=20)
    bad = FactoredAttention.fit(train, q=4, lam=1e-3, rng=0, max_iter=500)
    for fa in (mf, bad):
        info = fa.fit_info
        assert info.converged and info.newton_iter > 0 and info.stationarity <= 1e-7
        prob = FactoredAttentionProblem(train, 4, 1e-3, "linear")
        x = prob.pack(fa.attention, fa.value)
        f, g = prob.loss_grad(x)
        assert f == pytest.approx(info.objective, rel=1e-13)
        assert np.linalg.norm(g) == pytest.approx(info.gradient_norm, rel=1e-9)
        assert info.stationarity == pytest.approx(np.linalg.norm(g) * np.linalg.norm(x), rel=1e-9)
        # a local minimum: the Hessian is positive semi-definite there (gauge directions: lam p / M)
        w = np.linalg.eigvalsh(prob.hessian(x))
        assert w[0] > 0
    # the random start ends in a worse local minimum than the mean-field start (measured: 0.142)
    assert bad.fit_info.objective - mf.fit_info.objective > 0.1
    assert bad.mlm_loss(train) > mf.mlm_loss(train)
    early = FactoredAttention.fit(train, q=4, lam=1e-3, rng=0, max_iter=2, newton_iter=0)
    assert not early.fit_info.converged and early.fit_info.stationarity > 1e-3
    assert early.fit_info.newton_iter == 0


def test_mean_field_start_is_deterministic_and_rng_free(two_minima):
    a = FactoredAttention.fit(two_minima[:300], q=4, lam=1e-2, init="mean-field", rng=1)
    b = FactoredAttention.fit(two_minima[:300], q=4, lam=1e-2, init="mean-field", rng=2)
    np.testing.assert_array_equal(a.attention, b.attention)
    assert a.fit_info.init == "mean-field"
    with pytest.raises(ValueError, match="init must be one of"):
        FactoredAttention.fit(two_minima, q=4, init="zeros")
    with pytest.raises(ValueError, match="gtol must be > 0"):
        FactoredAttention.fit(two_minima, q=4, gtol=0.0)


def test_newton_cg_branch_for_many_parameters_reaches_the_same_minimum(two_minima, monkeypatch):
    from replica_mlm.learners import attention_fit
    dense = FactoredAttention.fit(two_minima[:400], q=4, lam=1e-3, init="mean-field", max_iter=40)
    monkeypatch.setattr(attention_fit, "DENSE_NEWTON_MAX", 0)  # as if the Hessian were too large
    cg = FactoredAttention.fit(two_minima[:400], q=4, lam=1e-3, init="mean-field", max_iter=40)
    assert "Newton-CG" in cg.fit_info.message and "Newton-CG" not in dense.fit_info.message
    assert cg.fit_info.converged and dense.fit_info.converged
    assert cg.fit_info.objective == pytest.approx(dense.fit_info.objective, rel=1e-12)
    np.testing.assert_allclose(cg.couplings(), dense.couplings(), atol=1e-5)
