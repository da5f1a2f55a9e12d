"""The multi-class theory of a Potts site with q > 2 colours (docs/multiclass.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

import replica_mlm as rm
from replica_mlm.learners import multinomial_pl as mpl
from replica_mlm.tasks import potts_site as ps
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.sides.prior import ridge_matrices


@pytest.fixture(scope="module")
def ising():
    return rm.PottsModel.random_ising(L=10, beta=0.5, seed=1)


@pytest.fixture(scope="module")
def potts3():
    J = rm.PottsModel.random_ising(L=8, beta=1.0, seed=3).couplings
    return rm.PottsModel(couplings=J, colours=np.eye(3), beta=1.5)


def test_simplex_basis_is_orthonormal_and_orthogonal_to_ones():
    for q in (2, 3, 7):
        P = ps.simplex_basis(q)
        np.testing.assert_allclose(P.T @ P, np.eye(q - 1), atol=1e-14)
        np.testing.assert_allclose(P.T @ np.ones(q), 0.0, atol=1e-14)


def test_teacher_and_bias_reproduce_the_exact_conditional():
    # a colour matrix without symmetry: the bias b* and the centring must be exact
    model = rm.PottsModel.random(L=6, q=3, seed=2, beta=0.8)
    cc = ps.colour_covariance(model)
    assert cc.method == "exact" and not cc.symmetrised
    for i in (0, 4):
        site = ps.potts_site(model, i, cc)
        seqs = model.all_sequences()[::37]
        x = mpl.reduced_inputs(seqs, i, site.basis, cc.mean)
        mine = softmax((x @ site.teacher + site.bias) @ site.basis.T, axis=1)
        np.testing.assert_allclose(mine, model.conditional(seqs, i), atol=1e-12)
    assert np.max(np.abs(ps.potts_site(model, 0, cc).bias)) > 1e-3  # the bias is really there


def test_ising_reduces_to_the_scalar_logistic_route(ising):
    """K = 1: the same estimator as logistic regression on the spins (x = s / sqrt 2, W = w)."""
    task = ising.masked_site(3)
    site = ps.potts_site(ising, 3, ps.colour_covariance(ising))
    assert site.K == 1 and site.symmetric
    np.testing.assert_allclose(site.rho[0, 0], task.rho / 2, rtol=1e-13)
    for alpha, lam in ((2.0, 0.1),):
        ref = rm.solve(task, alpha=alpha, lam=lam, loss="logistic")
        got = rm.solve(site, alpha=alpha, lam=lam, order=40)
        assert isinstance(got, rm.MulticlassSaddlePoint) and got.converged and got.residual <= 1e-10
        for key in ("test_loss", "estimation_error", "train_loss"):
            err = got.integration_error[key]
            assert err < 1e-9
            assert abs(getattr(got, key) - getattr(ref, key)) <= 1e-9 * max(1.0, abs(getattr(ref, key)))
        np.testing.assert_allclose(got.Q[0, 0], ref.q / 2, rtol=1e-9)
        np.testing.assert_allclose(got.M[0, 0], ref.m / 2, rtol=1e-9)
        # the error rate integrates an indicator by scrambled Sobol' rules: within 4 of its errors
        assert abs(got.eg - ref.eg) <= 4 * got.integration_error["eg"]


def test_square_loss_gaussian_channel_decouples_into_scalar_fast_paths():
    """Square loss, gaussian channel: column a of W* is the scalar problem with the same Sigma."""
    gen = np.random.default_rng(0)
    d, K, p, noise = 12, 3, 4, 0.3
    A = gen.standard_normal((d, d))
    sigma = A @ A.T / d + 0.2 * np.eye(d)
    W = gen.standard_normal((d, K)) / np.sqrt(d)
    site = rm.PottsSite(covariance=sigma, teacher=W, p=p, noise=noise, channel="gaussian")
    for alpha, lam in ((0.7, 0.05), (6.0, 0.3)):
        got = rm.solve(site, alpha=alpha, lam=lam)
        assert got.converged and got.residual <= 1e-10
        est = 0.0
        for a in range(K):
            # alpha = M / p, ridge lam p: in the scalar task's own convention p -> d
            ref = rm.solve(rm.MaskedSite(covariance=sigma, teacher=W[:, a], noise=noise),
                           alpha=alpha * p / d, lam=lam * p / d)
            np.testing.assert_allclose(got.Q[a, a], ref.q, rtol=1e-9)
            np.testing.assert_allclose(got.M[a, a], ref.m, rtol=1e-9)
            np.testing.assert_allclose(got.V[a, a], ref.V, rtol=1e-9)  # V is scale-free
            est += ref.estimation_error
        np.testing.assert_allclose(got.estimation_error, est, rtol=1e-9)


def test_symmetric_reduction_equals_the_general_solver(potts3):
    site = potts3.masked_site(2)
    assert site.symmetric and site.K == 2
    general = rm.PottsSite(covariance=site.covariance, teacher=site.teacher, p=site.p)
    a = rm.solve(site, alpha=2.0, lam=0.1, order=12)
    b = rm.solve(general, alpha=2.0, lam=0.1, order=12)
    assert a.method == "symmetric" and b.method == "general"
    for key in ("test_loss", "estimation_error"):
        tol = 4 * (a.integration_error[key] + b.integration_error[key]) + 1e-9
        assert abs(getattr(a, key) - getattr(b, key)) <= tol
    np.testing.assert_allclose(b.Q, b.Q[0, 0] * np.eye(2), atol=1e-6 * b.Q[0, 0])


def test_hermite_and_sobol_rules_agree(potts3):
    site = potts3.masked_site(2)
    a = rm.solve(site, alpha=1.0, lam=0.01, order=12)
    b = rm.solve(site, alpha=1.0, lam=0.01, integration="sobol", order=10, randomisations=3)
    for key in ("test_loss", "estimation_error"):
        err = np.hypot(a.integration_error[key], b.integration_error[key])
        assert err > 0
        assert abs(getattr(a, key) - getattr(b, key)) <= 4 * err


def test_multinomial_fit_is_sklearn_unreduced_fit():
    from sklearn.linear_model import LogisticRegression

    gen = np.random.default_rng(1)
    q, d, n, lam, p = 4, 9, 60, 0.05, 3
    P = ps.simplex_basis(q)
    x = gen.standard_normal((n, d))
    y = gen.integers(0, q, n)
    W, kkt = mpl.fit(x, y, P, lam, p)
    assert kkt <= mpl.KKT_TOL
    skl = LogisticRegression(C=1.0 / (lam * p), fit_intercept=False, solver="newton-cholesky", tol=1e-12,
                             max_iter=500).fit(x, y)
    np.testing.assert_allclose(W, skl.coef_.T @ P, atol=1e-6)
    np.testing.assert_allclose(skl.coef_.sum(axis=0), 0.0, atol=1e-6)  # ridge kills the ones direction


def test_bad_input(potts3):
    site = potts3.masked_site(0)
    with pytest.raises(ValueError, match="lam"):
        rm.solve(site, alpha=1.0, lam=0.0)
    with pytest.raises(ValueError, match="alpha"):
        rm.solve(site, alpha=-1.0, lam=0.1)
    with pytest.raises(ValueError, match="loss"):
        rm.solve(site, alpha=1.0, lam=0.1, loss="square")
    with pytest.raises(ValueError, match="integration"):
        rm.solve(site, alpha=1.0, lam=0.1, integration="monte")
    with pytest.raises(TypeError):
        rm.solve(site, alpha=1.0, lam=0.1, order=2.5)
    with pytest.raises(ValueError, match="cross_entropy"):
        rm.simulate(potts3, site=0, alpha=1.0, lam=0.1, seeds=2, loss="logistic")
    with pytest.raises(ValueError, match="site"):
        rm.simulate(potts3, alpha=1.0, lam=0.1, seeds=2, loss="cross_entropy")
    with pytest.raises(ValueError, match="symmetric"):
        rm.PottsSite(covariance=np.diag([1.0, 2.0]), teacher=np.eye(2), p=1, symmetric=True)
    with pytest.raises(ValueError, match="rows"):
        rm.PottsSite(covariance=np.eye(3), teacher=np.eye(2), p=1)
    with pytest.raises(ValueError, match="sobol"):
        mc.rule_for(10, "hermite", order=20, seed=0)


def test_prior_reduces_to_scalar_prior_at_k1():
    from replica_mlm.theory.symbolic.compiled import compiled

    gen = np.random.default_rng(4)
    omega, theta, p, lam = gen.uniform(0.2, 2, 9), gen.standard_normal(9) / 3, 9, 0.07
    vh, qh, mh = 0.8, 1.3, 0.6
    V, Q, M, _, _ = ridge_matrices(omega, theta[:, None], p, lam, np.array([[vh]]), np.array([[qh]]),
                              np.array([[mh]]))
    terms = compiled().modes_together(omega, np.full(9, 1 / p), theta**2, lam, vh, qh, mh)
    ref = [float(np.sum(np.broadcast_to(t, omega.shape))) for t in terms]
    np.testing.assert_allclose([V[0, 0], Q[0, 0], M[0, 0]], ref, rtol=1e-13)


@pytest.mark.slow
def test_theory_against_multinomial_pseudo_likelihood_q3():
    """q = 3, L = 12 (exact covariance), standard Potts couplings, 20 seeds (rng=1): |z| < 3.

    Measured (docs/multiclass.md): |z| <= 1.2 for the test loss and the estimation error at
    alpha in {0.5, 1, 2}; at alpha = 5 the theory lies about 3 standard errors above.
    """
    J = rm.PottsModel.random_ising(L=12, beta=1.0, seed=3).couplings
    model = rm.PottsModel(couplings=J, colours=np.eye(3), beta=1.5)
    site = model.masked_site(0)
    for alpha, lam in ((1.0, 0.1), (2.0, 0.01)):
        th = rm.solve(site, alpha=alpha, lam=lam)
        sim = rm.simulate(model, site=0, alpha=alpha, lam=lam, seeds=20, rng=1, loss="cross_entropy",
                          n_test=3000)
        assert sim.kkt_residual.max() <= 1e-9
        for key in ("test_loss", "estimation_error"):
            z = (getattr(th, key) - getattr(sim, key + "_mean")[0]) / getattr(sim, key + "_stderr")[0]
            assert abs(z) < 3, (alpha, lam, key, z)


def test_prox_is_stationary_over_a_wide_range_of_v():
    """z* solves V^{-1}(z - h) = P^T(e_y - softmax(P z)) for V from 1e-2 to 1e4 and |h| up to ~30."""
    P = ps.simplex_basis(4)
    gen = np.random.default_rng(0)
    base = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.7]])
    for scale in (1e-2, 1.0, 1e4):
        for spread in (1.0, 10.0):
            h = gen.standard_normal((500, 3)) * spread
            y = gen.integers(0, 4, 500)
            V = base * scale
            z, f, D = mc.prox(h, y, V, P)
            lhs = (z - h) @ np.linalg.inv(V)
            assert np.max(np.abs(lhs - f)) <= 1e-12 * (1 + np.max(np.abs(h)) / scale)
            np.testing.assert_allclose(D, np.swapaxes(D, 1, 2), atol=1e-15)


def test_theory_against_gaussian_input_simulation(potts3):
    """The model the theory describes (Gaussian x with the site's Sigma, softmax labels), fitted by
    the multinomial pseudo-likelihood: 120 seeds (rng 1000 + s, test 5000 + s), |z| < 3."""
    site = potts3.masked_site(0)
    P = site.basis
    alpha, lam = 2.0, 0.1
    th = rm.solve(site, alpha=alpha, lam=lam, order=14)
    n = round(alpha * site.p)
    ce, est = [], []
    for s in range(120):
        x, y = site.sample(n, rng=1000 + s)
        W, _ = mpl.fit(x, y, P, lam, site.p)
        xt, _ = site.sample(4000, rng=5000 + s)
        truth = softmax(xt @ site.teacher @ P.T, axis=1)
        ce.append(np.mean(np.sum(truth * -np.log(softmax(xt @ W @ P.T, axis=1)), axis=1)))
        est.append(np.sum((W - site.teacher) ** 2))
    for value, sample in ((th.test_loss, ce), (th.estimation_error, est)):
        sample = np.asarray(sample)
        z = (value - sample.mean()) / (sample.std(ddof=1) / np.sqrt(sample.size))
        assert abs(z) < 3, z
