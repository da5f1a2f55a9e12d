"""Ridge regression on a C-cluster Gaussian mixture with class-valued targets (theory.solvers.mixture_ridge).

The square loss sees the class only through its covariance: the mixture's prediction equals the
Gaussian reduction's up to O(C/d) terms of the spectrum (docs/multiclass.md, "The square loss on
the mixture"); both are checked here, with ridge simulated on the mixture itself.
"""

import numpy as np
import pytest

from replica_mlm._base.errors import ConvergenceError
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solve import solve
from replica_mlm.theory.solvers.mixture_ridge import MixtureRidgeTheory, mixture_ridge_curve, solve_point

PI = np.array([0.5, 0.3, 0.15, 0.05])
T = np.array([[1.0, 0.0], [-0.5, 1.0], [2.0, -1.0], [-1.5, 0.5]])


def _moments(d):
    """A self-similar family: S = diag(0.2 ... 2), smooth class means of Mahalanobis size O(1),
    unequal weights, two outputs; means and targets centred (the fit has no intercept)."""
    x = (np.arange(d) + 0.5) / d
    omega = 0.2 + 1.8 * x
    mu = np.stack([np.cos((c + 1) * np.pi * x) + 0.5 * c * x for c in range(4)]) * 1.5 / np.sqrt(d)
    return {"weights": PI, "means": mu - PI @ mu, "covariance": np.diag(omega), "targets": T - PI @ T}


def _gaussian_reduction(theory, alpha, lam):
    """The Gaussian reduction of the same data: total covariance, best linear predictor, residual."""
    sigma, beta, noise = theory.gaussian_equivalent()
    omega, u = np.linalg.eigh(sigma)
    d = omega.size
    return sum(solve(Spectrum(omega=omega, bulk=np.full(d, 1 / d), teacher=(u.T @ beta[:, a]) ** 2,
                              noise=float(noise[a])), alpha=alpha, lam=lam).test_loss
               for a in range(beta.shape[1]))


@pytest.mark.parametrize("alpha,lam", [(0.5, 0.01), (1.0, 0.1), (3.0, 0.1)])
def test_equals_the_gaussian_reduction_up_to_order_one_over_d(alpha, lam):
    """d (T_mixture - T_gauss) / T_gauss converges (the gap is c / d), and the Richardson limit of the
    gap is zero to 1e-6 relative: the two theories coincide as d -> infinity."""
    gaps, losses = {}, {}
    for d in (200, 400, 800):
        th = MixtureRidgeTheory(**_moments(d))
        pt = solve_point(th, alpha=alpha, lam=lam)
        assert pt.converged and pt.residual <= 1e-10
        losses[d] = pt.test_loss
        gaps[d] = pt.test_loss - _gaussian_reduction(th, alpha, lam)
    scaled = {d: d * g / losses[d] for d, g in gaps.items()}
    assert abs(scaled[800] - scaled[400]) <= 1e-3 * abs(scaled[400])
    assert abs(scaled[400] - scaled[200]) <= 2e-3 * abs(scaled[200])
    assert abs(2 * gaps[800] - gaps[400]) <= 1e-6 * losses[800]
    assert abs(gaps[200]) >= 1e-5 * losses[200]  # the finite-d gap is real, not zero by construction


def test_outputs_decouple_and_the_curve_warm_starts():
    th = MixtureRidgeTheory(**_moments(200))
    both = mixture_ridge_curve(th, alpha=[0.5, 2.0], lam=0.1)
    for a in range(2):
        one = MixtureRidgeTheory(**{**_moments(200), "targets": _moments(200)["targets"][:, a]})
        for pt, alpha in zip(both, (0.5, 2.0), strict=True):
            single = solve_point(one, alpha=alpha, lam=0.1)
            assert single.test_loss == pytest.approx(pt.test_losses[a], rel=1e-10)
            assert single.V == pytest.approx(pt.V, rel=1e-12)
    frame = both[1].to_frame()
    assert list(frame["output"]) == [0, 1] and bool(frame["converged"].all())


def test_large_alpha_tends_to_the_best_linear_predictor():
    th = MixtureRidgeTheory(**_moments(200))
    _, _, noise = th.gaussian_equivalent()
    pt = solve_point(th, alpha=1e6, lam=1e-6)
    assert pt.test_loss == pytest.approx(noise.sum() / 2, rel=1e-4)


def _simulate(mom, alpha, lam, seeds, seed0):
    """Ridge on data drawn from the mixture itself; the exact population loss of each fit."""
    mu, S, t, pi = mom["means"], mom["covariance"], mom["targets"], mom["weights"]
    d = S.shape[0]
    chol = np.linalg.cholesky(S)
    n = round(alpha * d)
    out = []
    for s in range(seeds):
        g = np.random.default_rng(seed0 + s)
        c = g.choice(pi.size, size=n, p=pi)
        x = mu[c] + g.standard_normal((n, d)) @ chol.T
        a = x.T @ x
        a[np.diag_indices_from(a)] += lam * d
        W = np.linalg.solve(a, x.T @ t[c])
        out.append(float(np.sum(pi @ (t - mu @ W) ** 2 + np.sum(W * (S @ W), axis=0)) / 2))
    return np.mean(out), np.std(out, ddof=1) / np.sqrt(seeds)


POINTS = [(0.5, 0.1), (1.0, 0.1), (2.0, 0.1), (4.0, 0.1), (1.0, 1.0), (3.0, 0.01)]


def test_ridge_simulated_on_the_mixture_agrees_small_d():
    """d = 100, 6 points, 100 fits each (seeds 1000..): within 3 standard errors."""
    mom = _moments(100)
    th = MixtureRidgeTheory(**mom)
    for alpha, lam in POINTS:
        want = solve_point(th, alpha=alpha, lam=lam).test_loss
        mean, se = _simulate(mom, alpha, lam, 100, 1000)
        assert abs(want - mean) <= 3 * se, (alpha, lam, want, mean, se)


@pytest.mark.slow
def test_ridge_simulated_on_the_mixture_agrees_d400():
    """d = 400, 10 points, 60 fits each (seeds 2000..): within 3 standard errors."""
    mom = _moments(400)
    th = MixtureRidgeTheory(**mom)
    for alpha, lam in [*POINTS, (0.25, 0.1), (1.5, 0.01), (6.0, 1.0), (0.75, 0.01)]:
        want = solve_point(th, alpha=alpha, lam=lam).test_loss
        mean, se = _simulate(mom, alpha, lam, 60, 2000)
        assert abs(want - mean) <= 3 * se, (alpha, lam, want, mean, se)


def test_bad_input_is_refused():
    mom = _moments(20)
    with pytest.raises(ValueError, match="weights must be > 0 and sum to 1"):
        MixtureRidgeTheory(**{**mom, "weights": np.array([0.5, 0.5, 0.0, 0.0])})
    with pytest.raises(ValueError, match="covariance must be positive definite"):
        MixtureRidgeTheory(**{**mom, "covariance": np.diag(np.r_[np.ones(19), 0.0])})
    with pytest.raises(ValueError, match="targets must have shape"):
        MixtureRidgeTheory(**{**mom, "targets": np.ones(3)})
    with pytest.raises(ValueError, match="means must be"):
        MixtureRidgeTheory(**{**mom, "means": np.ones((4, 5))})
    with pytest.raises(ValueError, match="NaN"):
        MixtureRidgeTheory(**{**mom, "targets": np.full(4, np.nan)})
    with pytest.raises(TypeError):
        MixtureRidgeTheory(**{**mom, "weights": "uniform"})
    th = MixtureRidgeTheory(**mom)
    with pytest.raises(ValueError, match="lam"):
        solve_point(th, alpha=1.0, lam=0.0)
    with pytest.raises(ValueError, match="alpha"):
        mixture_ridge_curve(th, alpha=[1.0, -1.0], lam=0.1)
    assert issubclass(ConvergenceError, RuntimeError)


@pytest.fixture(scope="module")
def rhomboid_small():
    """Rhomboid, 10 columns (site 4 and 9 others: d = 180), 300 sequences (as test_proteins_curve)."""
    pytest.importorskip("biotite")
    import replica_mlm as rm
    from replica_mlm.proteins import datasets

    msa = rm.MSA.read(datasets.data_folder() / datasets.FAMILIES["rhomboid"][0]
                      / datasets.FAMILIES["rhomboid"][1]).filter(0.2).subset(np.arange(300))
    return msa


def test_class_moments_rebuild_sigma_and_count_only_present_colours(rhomboid_small):
    from replica_mlm.learners.multinomial_pl import reduced_inputs
    from replica_mlm.proteins.learning_curve import class_moments
    from replica_mlm.tasks.potts_site import simplex_basis

    seqs = rhomboid_small.sequences[:, :10].astype(np.intp)
    P = simplex_basis(rhomboid_small.q)
    mean = P[seqs].mean(axis=0)
    x = reduced_inputs(seqs, 4, P, mean)
    classes, weights, means, counts, S = class_moments(x, seqs[:, 4], 1e-3)
    np.testing.assert_array_equal(classes, np.flatnonzero(np.bincount(seqs[:, 4], minlength=21)))
    assert counts.sum() == seqs.shape[0] and weights.sum() == pytest.approx(1.0, abs=1e-15)
    sigma = x.T @ x / x.shape[0] + 1e-3 * np.eye(x.shape[1])
    np.testing.assert_allclose(S + (means.T * weights) @ means, sigma, atol=1e-13)
    np.testing.assert_allclose(weights @ means, 0.0, atol=1e-13)  # centred inputs: centred means


def test_site_curve_mixture_column_limits(rhomboid_small):
    """The mixture column: at M -> 0 the pool's own label variance / 2 (measured directly), at
    M -> infinity its floor; the Gaussian column and fields unchanged beside it."""
    from replica_mlm.proteins.learning_curve import class_moments, mixture_loss, site_learning_curve
    from replica_mlm.tasks.potts_site import simplex_basis

    cols = np.arange(10)
    c = site_learning_curve(rhomboid_small, 4, M=[20, 60, 200], lam=0.1, subsamples=6, columns=cols, rng=1)
    assert c.mixture.shape == (3,) and np.all(np.isfinite(c.mixture))
    frame = c.to_frame()
    np.testing.assert_allclose(frame["z_mixture"], (c.mixture - c.mean) / c.stderr)
    assert c.smallest_class >= 1 and c.classes.size >= 2
    # rebuild the pool exactly as the curve does (rng = 1: the first draw is the test split)
    gen = np.random.default_rng(1)
    order = gen.permutation(rhomboid_small.N)
    pool = rhomboid_small.sequences[order[c.n_test:]][:, cols].astype(np.intp)
    P = simplex_basis(rhomboid_small.q)
    y = P[pool[:, 4]] - P[pool[:, 4]].mean(axis=0)
    from replica_mlm.learners.multinomial_pl import reduced_inputs

    x = reduced_inputs(pool, 4, P, P[pool].mean(axis=0))
    _, weights, means, _, S = class_moments(x, pool[:, 4], np.trace(x.T @ x / x.shape[0]) * 1e-6 / x.shape[1])
    targets = P[np.unique(pool[:, 4])] - P[pool[:, 4]].mean(axis=0)
    tiny, floor = mixture_loss(weights, means, S, targets, M=[1e-6], lam=0.1, p=9)
    assert tiny[0] == pytest.approx(np.mean(np.sum(y**2, axis=1)) / 2, rel=1e-6)
    big, _ = mixture_loss(weights, means, S, targets, M=[1e9], lam=1e-6, p=9)
    assert floor == pytest.approx(c.mixture_floor, rel=1e-12)
    assert big[0] == pytest.approx(floor, rel=1e-4)
    resid = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]  # the best linear predictor, another route
    assert floor == pytest.approx(np.mean(np.sum(resid**2, axis=1)) / 2, rel=1e-4)
