"""Closed-form simulations, and the replica theory held against them."""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.ridge_path import ridge_path


def test_ridge_path_equals_direct_solves():
    rng = np.random.default_rng(0)
    for n, p in [(30, 50), (80, 50), (50, 50)]:
        X, y = rng.standard_normal((n, p)), rng.standard_normal(n)
        lams = np.array([0.0, 1e-3, 0.1, 10.0])
        W = ridge_path(X, y, lams)
        for j, lam in enumerate(lams):
            if lam > 0:
                direct = np.linalg.solve(X.T @ X + lam * p * np.eye(p), X.T @ y)
            else:
                direct = np.linalg.pinv(X) @ y
            assert np.allclose(W[:, j], direct, rtol=1e-9, atol=1e-10)


def test_simulation_fields_and_reproducibility(site300):
    sim = rm.simulate(site300, alpha=2.0, lam=[0.0, 1e-3, 0.1], seeds=5, rng=0)
    assert sim.eg.shape == (5, 3) and sim.eg_mean.shape == (3,) and sim.eg_stderr.shape == (3,)
    assert sim.n == 600 and sim.alpha == 2.0
    assert np.all(sim.eg >= site300.noise)
    again = rm.simulate(site300, alpha=2.0, lam=[0.0, 1e-3, 0.1], seeds=5, rng=np.random.default_rng(0))
    assert np.array_equal(sim.eg, again.eg)
    # seed k does not depend on how many seeds are drawn
    fewer = rm.simulate(site300, alpha=2.0, lam=[0.0, 1e-3, 0.1], seeds=2, rng=0)
    assert np.array_equal(fewer.eg, sim.eg[:2])


def test_least_squares_matches_finite_p_exact_mean(site300):
    # for Gaussian X, E[eg] of OLS at finite n > p + 1 is sigma^2 (1 + p / (n - p - 1)) exactly
    sim = rm.simulate(site300, alpha=2.0, lam=0.0, seeds=40, rng=11)
    exact = site300.noise * (1 + sim.p / (sim.n - sim.p - 1))
    z = (sim.eg_mean[0] - exact) / sim.eg_stderr[0]
    assert abs(z) < 4, z
    # the empirical train loss is sigma^2 (n - p) / n in mean
    zt = (sim.train_loss_mean[0] - site300.noise * (sim.n - sim.p) / sim.n) / sim.train_loss_stderr[0]
    assert abs(zt) < 4, zt


# thirteen points, lam = 0 on both sides of alpha = 1; p = 300. All lam of one alpha share
# one SVD per sample.
POINTS = [(alpha, lam) for alpha in (0.5, 1.5, 3.0) for lam in (0.0, 1e-3, 0.1, 1.0)] + [(1.0, 0.1)]


def test_theory_agrees_with_simulation(site300):
    """|z| < 4 at every point, z = (simulation mean - replica) / standard error (40 seeds).

    The replica prediction is exact as p -> infinity; at p = 300 the mean over samples differs
    by O(1/p) (OLS at alpha = 1.5: 1 + p/(n-p-1) = 3.0134 sigma^2 against 3 sigma^2, a 0.45 % bias)
    which is below the standard errors here (1 % - 5 %).
    """
    zs = []
    by_alpha = {}
    for alpha, lam in POINTS:
        by_alpha.setdefault(alpha, []).append(lam)
    for alpha, lams in by_alpha.items():
        sim = rm.simulate(site300, alpha=alpha, lam=lams, seeds=40, rng=2024)
        for j, lam in enumerate(lams):
            theory = rm.solve(site300, alpha=sim.alpha, lam=lam)
            z = (sim.eg_mean[j] - theory.eg) / sim.eg_stderr[j]
            zt = (sim.train_loss_mean[j] - theory.train_loss) / max(sim.train_loss_stderr[j], 1e-300)
            zs.append((alpha, lam, z, zt))
    for alpha, lam, z, zt in zs:
        assert abs(z) < 4, (alpha, lam, z)
        if lam > 0 or alpha > 1:  # train loss is exactly 0 for the interpolator
            assert abs(zt) < 4, (alpha, lam, zt)
    assert len(zs) == 13


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=0.0, lam=0.1), "alpha must be > 0"),
    (dict(alpha=1.0, lam=[-0.1]), "lam must be >= 0"),
    (dict(alpha=1.0, lam=[0.1, np.nan]), "NaN"),
    (dict(alpha=1.0, lam=0.1, seeds=0), "seeds must be >= 1"),
    (dict(alpha=1.0, lam=0.1, seeds=1), "seeds must be >= 2"),
    (dict(alpha=0.5 / 300, lam=0.1), r"alpha \* p = 0.5 < 1 sample"),
    (dict(alpha=0.99 / 300, lam=0.1), r"alpha must be >= 1/p"),
    (dict(alpha=1.0, lam=0.1, seeds=10**18), r"simulate\(seeds=1000000000000000000\).*more than"),
])
def test_bad_simulation_input(site300, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.simulate(site300, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=1.0, lam=0.1, rng="x"), "rng must be"),
    (dict(alpha=1.0, lam=0.1, seeds=2.0), "seeds must be an integer"),
    (dict(alpha=1.0 + 0j, lam=0.1), "alpha must be a real number"),
    (dict(alpha="1.0", lam=0.1), "alpha must be a real number, not a string"),
    (dict(alpha=1.0, lam=[0.1, True]), "lam must contain real numbers"),
    (dict(alpha=1.0, lam=np.array([0.1 + 1e-9j])), "lam must be an array of real numbers"),
])
def test_wrong_types_in_simulation(site300, kwargs, match):
    with pytest.raises(TypeError, match=match):
        rm.simulate(site300, **kwargs)


def test_simulation_of_one_sample_per_seed(site300):
    """alpha * p = 1 exactly is the smallest allowed training set (n = 1), no NaN."""
    sim = rm.simulate(site300, alpha=1 / 300, lam=[0.0, 0.1], seeds=2, rng=0)
    assert sim.n == 1 and np.all(np.isfinite(sim.eg_stderr))


# --- the Gram route of ridge_path -------------------------------------------------------------


@pytest.mark.parametrize("n, p", [(30, 50), (80, 50), (49, 50), (51, 50), (300, 120), (60, 150)])
def test_ridge_gram_route_equals_svd(n, p):
    # anisotropic inputs (variances 0.2 - 5), both sides of n = p; lam = 0 is the Moore-Penrose
    # solution (checked against numpy.linalg.pinv as well)
    from replica_mlm.learners.ridge_path import _ridge_gram

    rng = np.random.default_rng(n * 1000 + p)
    x = rng.standard_normal((n, p)) * np.sqrt(rng.uniform(0.2, 5.0, p))
    y = rng.standard_normal(n)
    lams = np.array([0.0, 1e-4, 1e-2, 1.0, 10.0])
    gram = _ridge_gram(x, y, lams)
    assert gram is not None  # full rank: the Gram route applies, no fallback
    svd = ridge_path(x, y, lams, method="svd")
    scale = np.abs(svd).max(axis=0)
    assert np.max(np.abs(gram - svd) / scale) < 1e-12
    assert np.max(np.abs(gram[:, 0] - np.linalg.pinv(x) @ y)) < 1e-12 * scale[0]
    assert np.array_equal(ridge_path(x, y, lams), gram)  # "auto" takes it for a few lam


@pytest.mark.parametrize("n, p", [(80, 50), (30, 50)])
def test_ridge_gram_route_rank_deficient_falls_back(n, p):
    # two equal columns (and two equal rows when n < p): X^T X or X X^T is singular; at lam = 0
    # the Gram route declines and the SVD gives the Moore-Penrose solution; lam > 0 stays Gram
    from replica_mlm.learners.ridge_path import _ridge_gram

    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, p))
    x[:, 1] = x[:, 0]
    x[1] = x[0]
    y = rng.standard_normal(n)
    lams = np.array([0.0, 1e-3, 0.1])
    assert _ridge_gram(x, y, lams) is None
    w = ridge_path(x, y, lams)
    assert np.array_equal(w, ridge_path(x, y, lams, method="svd"))
    assert np.max(np.abs(w[:, 0] - np.linalg.pinv(x) @ y)) < 1e-12 * np.abs(w[:, 0]).max()
    ridge = _ridge_gram(x, y, lams[1:])
    assert ridge is not None
    assert np.max(np.abs(ridge - w[:, 1:]) / np.abs(w[:, 1:]).max(axis=0)) < 1e-12


def test_ridge_path_method_checked():
    x, y = np.ones((3, 2)), np.ones(3)
    with pytest.raises(ValueError, match="method must be one of"):
        ridge_path(x, y, np.array([0.1]), method="qr")
    with pytest.raises(TypeError, match="method must be one of"):
        ridge_path(x, y, np.array([0.1]), method=1)
