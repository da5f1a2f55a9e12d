"""The learning curve of a real protein site against the replica prediction (proteins.learning_curve)."""

import numpy as np
import pytest

import replica_mlm as rm

pytest.importorskip("biotite")
pytest.importorskip("pandas")

from replica_mlm.proteins import datasets
from replica_mlm.proteins.learning_curve import (
    _square_loss,
    cross_theory,
    heldout_prediction,
    heldout_terms,
    ridge_fit,
    ridge_kappa,
    site_learning_curve,
    theory_loss,
)


@pytest.fixture(scope="module")
def small():
    """Rhomboid, 10 columns (the site 4 and 9 others: d = 180), 300 sequences."""
    msa = rm.MSA.read(datasets.data_folder() / datasets.FAMILIES["rhomboid"][0]
                               / datasets.FAMILIES["rhomboid"][1]).filter(0.2)
    msa = msa.subset(np.arange(300))
    cols = np.arange(10)
    return site_learning_curve(msa, 4, M=[20, 60, 200], lam=0.1, subsamples=6, columns=cols, rng=1)


def test_theory_tends_to_the_teacher_noise_at_large_alpha(small):
    c = small
    big = theory_loss(c.sigma, c.teacher, c.noise, M=[10**7], lam=c.lam, p=c.p)[0]
    assert c.noise_floor == pytest.approx(c.noise.sum() / 2)
    assert big == pytest.approx(c.noise_floor, rel=1e-3)
    assert np.all(np.diff(c.theory[1:]) < 0)  # beyond the bump near M = d the prediction falls


def test_measured_loss_decreases_with_M_on_average(small):
    assert small.mean[-1] < small.mean[0]
    frame = small.to_frame()
    assert list(frame["M"]) == [20, 60, 200]
    np.testing.assert_allclose(frame["z"], (small.theory - small.mean) / small.stderr)


def test_data_sampled_from_the_teacher_agree_with_the_theory(small):
    """Gaussian inputs from Sigma and labels from the teacher's channel: the machinery is right."""
    c = small
    noise = float(c.noise.mean())
    task = rm.PottsSite(covariance=c.sigma, teacher=c.teacher, p=c.p, noise=noise, channel="gaussian")
    gen = np.random.default_rng(5)
    M = [60, 400]
    theory = theory_loss(c.sigma, c.teacher, np.full(c.teacher.shape[1], noise), M=M, lam=c.lam, p=c.p)
    for m, want in zip(M, theory, strict=True):
        losses = []
        for _ in range(8):
            x, y = task.sample(m, rng=gen)
            W = ridge_fit(x, y, c.lam, c.p)
            D = W - c.teacher  # exact expectation over a fresh (x, y): no test-set noise
            losses.append((np.sum(D * (c.sigma @ D)) + c.teacher.shape[1] * noise) / 2)
        mean, se = np.mean(losses), np.std(losses, ddof=1) / np.sqrt(len(losses))
        assert abs(want - mean) <= 4 * se


def test_heldout_loss_is_the_teacher_floor_plus_excess_plus_cross(small):
    """Each fit's held-out loss splits exactly into the teacher's held-out loss, the excess and the
    cross term; the named misspecification term is what the held-out prediction adds."""
    c = small
    np.testing.assert_allclose(c.losses, c.teacher_floor + c.excess + c.cross, rtol=1e-12, atol=0)
    assert np.all(c.excess > 0)
    assert c.misspecification == pytest.approx(c.teacher_floor - c.noise_floor)
    np.testing.assert_allclose(c.theory_heldout, c.theory + c.misspecification, rtol=1e-15)
    frame = c.to_frame()
    np.testing.assert_allclose(frame["z_heldout"], (c.theory_heldout - c.mean) / c.stderr)
    np.testing.assert_allclose(frame["cross"], c.cross.mean(axis=1))
    np.testing.assert_allclose(frame["excess_pool"], c.excess_pool.mean(axis=1))
    assert np.all(c.excess_pool > 0)
    np.testing.assert_allclose(c.theory_cross, c.theory_heldout + c.cross_predicted, rtol=1e-15)
    assert (frame["misspecification"] == c.misspecification).all()
    assert c.table().count("\n") == 1 + c.M.size


def test_heldout_prediction_with_a_known_misspecification():
    """Gaussian inputs, the true teacher and noise for the theory, and held-out rows whose noise
    is twice the pool's by construction: the held-out loss is the prediction plus the named
    term (|z| < 3, 30 training sets per M) while the theory alone misses by far more; the cross
    term (whose residual is independent of x here) is below one standard error of the loss."""
    gen = np.random.default_rng(11)
    d, K, p, lam = 100, 3, 5, 0.1
    eig = np.linspace(0.2, 2.0, d)
    teacher = gen.standard_normal((d, K)) / np.sqrt(d)
    noise = np.array([0.1, 0.2, 0.3])

    def rows(n, var):
        x = gen.standard_normal((n, d)) * np.sqrt(eig)
        return x, x @ teacher + gen.standard_normal((n, K)) * np.sqrt(var)

    (x, y), (xt, yt) = rows(20000, noise), rows(20000, 2 * noise)
    teacher_floor, noise_floor = _square_loss(xt, yt, teacher), float(noise.sum() / 2)
    M = [50, 200]
    theory = theory_loss(np.diag(eig), teacher, noise, M=M, lam=lam, p=p)
    prediction = heldout_prediction(theory, teacher_floor=teacher_floor, noise_floor=noise_floor)
    for m, old, new in zip(M, theory, prediction, strict=True):
        losses, cross = [], []
        for _ in range(30):
            pick = gen.choice(x.shape[0], size=m, replace=False)
            W = ridge_fit(x[pick], y[pick], lam, p)
            excess, cr = heldout_terms(xt, yt, W, teacher)
            losses.append(_square_loss(xt, yt, W))
            assert losses[-1] == pytest.approx(teacher_floor + excess + cr, rel=1e-12)
            cross.append(cr)
        mean, se = np.mean(losses), np.std(losses, ddof=1) / np.sqrt(len(losses))
        assert abs(new - mean) < 3 * se, (m, new, mean, se)
        assert abs(old - mean) > 20 * se, (m, old, mean, se)
        # the cross term: its residual is independent of x, so it is only the test rows' sampling
        assert abs(np.mean(cross)) < se


def test_cross_term_predicted_when_the_heldout_residual_is_correlated_with_x():
    """Gaussian inputs; the held-out labels carry an extra linear part ``B^T x`` that the teacher
    misses (its held-out residual is correlated with x by construction): the measured cross term
    is its prediction from the theory's mean fit, and the loss is theory + misspecification + the
    predicted cross term, both within 3 standard errors (40 training sets per M); without the cross
    term the prediction misses by more than 5."""
    gen = np.random.default_rng(12)
    d, K, p, lam = 100, 2, 20, 0.2
    eig = np.linspace(0.2, 2.0, d)
    teacher = gen.standard_normal((d, K)) / np.sqrt(d)
    extra = -0.6 * teacher + 0.3 * gen.standard_normal((d, K)) / np.sqrt(d)
    noise = np.array([0.1, 0.2])
    x = gen.standard_normal((20000, d)) * np.sqrt(eig)
    y = x @ teacher + gen.standard_normal((20000, K)) * np.sqrt(noise)
    xt = gen.standard_normal((40000, d)) * np.sqrt(eig)
    yt = xt @ (teacher + extra) + gen.standard_normal((40000, K)) * np.sqrt(noise)
    teacher_floor, noise_floor = _square_loss(xt, yt, teacher), float(noise.sum() / 2)
    coupling = xt.T @ (yt - xt @ teacher) / xt.shape[0]
    M = [40, 300]
    theory = theory_loss(np.diag(eig), teacher, noise, M=M, lam=lam, p=p)
    misspecified = heldout_prediction(theory, teacher_floor=teacher_floor, noise_floor=noise_floor)
    predicted_cross = cross_theory(np.diag(eig), teacher, coupling, M=M, lam=lam, p=p)
    for k, m in enumerate(M):
        losses, cross = [], []
        for _ in range(40):
            pick = gen.choice(x.shape[0], size=m, replace=False)
            W = ridge_fit(x[pick], y[pick], lam, p)
            losses.append(_square_loss(xt, yt, W))
            cross.append(heldout_terms(xt, yt, W, teacher)[1])
        se = np.std(losses, ddof=1) / np.sqrt(len(losses))
        se_cross = np.std(cross, ddof=1) / np.sqrt(len(cross))
        assert abs(np.mean(cross) - predicted_cross[k]) < 3 * se_cross, (m, np.mean(cross), se_cross)
        assert abs(misspecified[k] + predicted_cross[k] - np.mean(losses)) < 3 * se, (m, np.mean(losses), se)
        assert abs(misspecified[k] - np.mean(losses)) > 5 * se, m


def _brent_kappa(omega, M, penalty):
    """The root of ``kappa = penalty / M + (kappa / M) sum omega / (omega + kappa)`` by Brent's method:
    a second algorithm beside the theory's saddle point."""
    from scipy.optimize import brentq

    low = penalty / M
    high = low + float(omega.sum()) / M  # f(high) > 0 > f(low)
    return brentq(lambda k: k - low - k / M * np.sum(omega / (omega + k)), low, high,
                  xtol=1e-15 * high, rtol=4 * np.finfo(float).eps)


def test_ridge_kappa_gives_the_theory_loss():
    """The effective ridge behind the predicted cross term is the theory's: it is the Brent root of
    its equation, and the ridge test loss built from it (deterministic equivalent) equals
    theory_loss to rounding, below and above M = d."""
    gen = np.random.default_rng(3)
    d, lam, p = 150, 0.1, 7
    a = gen.standard_normal((d, d))
    sigma = a @ a.T / d + 0.05 * np.eye(d)
    W, noise = gen.standard_normal((d, 3)) / np.sqrt(d), np.array([0.1, 0.2, 0.3])
    omega, U = np.linalg.eigh(sigma)
    t = U.T @ W
    for m in (20, 149, 1000):
        k = ridge_kappa(omega, M=m, penalty=lam * p)
        assert k == pytest.approx(_brent_kappa(omega, m, lam * p), rel=1e-12)
        df2 = np.sum(omega**2 / (omega + k) ** 2)
        excess = sum((k**2 * np.sum(omega * t[:, j] ** 2 / (omega + k) ** 2) + noise[j] * df2 / m)
                     / (1 - df2 / m) for j in range(3)) / 2
        want = theory_loss(sigma, W, noise, M=[m], lam=lam, p=p)[0] - noise.sum() / 2
        assert excess == pytest.approx(want, rel=1e-12)
        # the predicted cross term is linear in the coupling and zero without it
        c = gen.standard_normal((d, 3))
        assert cross_theory(sigma, W, 0 * c, M=[m], lam=lam, p=p)[0] == 0
        np.testing.assert_allclose(cross_theory(sigma, W, 2 * c, M=[m], lam=lam, p=p),
                                   2 * cross_theory(sigma, W, c, M=[m], lam=lam, p=p), rtol=1e-12)


def test_bad_arguments_are_refused(small):
    msa = rm.MSA(np.ones((30, 5), dtype=np.int8) + np.arange(5, dtype=np.int8), ("s",) * 30,
                          np.arange(5))
    with pytest.raises(ValueError, match="M must be"):
        site_learning_curve(msa, 0, M=[100], lam=0.1)
    with pytest.raises(ValueError, match="subsamples"):
        site_learning_curve(msa, 0, M=[5], lam=0.1, subsamples=1)
    with pytest.raises(ValueError, match="columns must contain"):
        site_learning_curve(msa, 0, M=[5], lam=0.1, columns=[1, 2])
    with pytest.raises(TypeError, match="msa"):
        site_learning_curve(np.zeros((3, 3)), 0, M=[5], lam=0.1)


def test_figure_is_written(small, tmp_path):
    from replica_mlm.figures.protein_families import plot_site_learning_curves

    fig = plot_site_learning_curves([small], path=tmp_path / "curve")
    assert (tmp_path / "curve.png").stat().st_size > 0 and (tmp_path / "curve.pdf").stat().st_size > 0
    assert len(fig.axes[0].lines) >= 2
    with pytest.raises(ValueError, match="curves"):
        plot_site_learning_curves([])


# ------------------------------------------------------------------- the pool as the population
@pytest.fixture(scope="module")
def pooled():
    """Rhomboid, the site 4 and 9 other columns, the first 600 rows as the population."""
    from replica_mlm.proteins.pool_curve import pool_learning_curve

    msa = rm.MSA.read(datasets.data_folder() / datasets.FAMILIES["rhomboid"][0]
                               / datasets.FAMILIES["rhomboid"][1]).filter(0.2)
    msa = msa.subset(np.arange(600))
    return msa, pool_learning_curve(msa, 4, M=[40, 150], lam=0.1, subsamples=40, columns=np.arange(10),
                                    rng=2)


def test_pool_task_is_exact_for_the_population(pooled):
    """W* is the pool's least squares, so the population loss of any W is the floor plus its
    Sigma-distance to W*: checked against the mean over the pool's rows, with the same inputs
    built independently (full coordinates, no rotation)."""
    from replica_mlm.learners.multinomial_pl import reduced_inputs
    from replica_mlm.proteins.pool_curve import _population_loss
    from replica_mlm.tasks.potts_site import simplex_basis

    msa, c = pooled
    P = simplex_basis(msa.q)
    seqs = msa.sequences[:, c.columns].astype(np.intp)
    x = reduced_inputs(seqs, 4, P, P[seqs].mean(axis=0))
    y = P[seqs[:, 4]] - P[seqs[:, 4]].mean(axis=0)
    W = ridge_fit(x[:50], y[:50], c.lam, c.p)  # any W: a fit on 50 rows
    brute = float(np.mean(np.sum((y - x @ W) ** 2, axis=1)) / 2)
    full_eig, vec = np.linalg.eigh(x.T @ x / x.shape[0])
    kept = vec[:, full_eig > 1e-10 * full_eig[-1]]
    assert kept.shape[1] == c.d < x.shape[1]  # absent colours: null directions dropped
    loss = _population_loss(kept.T @ W, c.teacher, c.sigma_eigenvalues, c.floor)
    assert loss == pytest.approx(brute, rel=1e-10)
    # the fit in the kept coordinates is the fit in the full ones
    W_all = ridge_fit(x, y, c.lam, c.p)
    np.testing.assert_allclose(kept @ ridge_fit(x @ kept, y, c.lam, c.p), W_all,
                               atol=1e-10 * np.abs(W_all).max())


def test_gaussian_surrogate_agrees_with_the_theory(pooled):
    """On inputs and noise Gaussian with the pool's moments the theory is exact up to O(1/d):
    |z| < 3 (40 training sets per M, fixed seed)."""
    _, c = pooled
    assert np.all(np.abs(c.z_gaussian) < 3), c.table()
    assert np.all(c.losses > c.floor) and np.all(c.theory > c.floor)
    assert c.table().count("\n") == 1 + c.M.size


def test_pool_curve_refuses_bad_arguments(pooled):
    from replica_mlm.proteins.pool_curve import pool_learning_curve

    msa, _ = pooled
    with pytest.raises(ValueError, match="M must be in"):
        pool_learning_curve(msa, 4, M=[msa.N + 1], lam=0.1, columns=np.arange(10))
    with pytest.raises(ValueError, match="subsamples"):
        pool_learning_curve(msa, 4, M=[10], lam=0.1, subsamples=1, columns=np.arange(10))
    with pytest.raises(ValueError, match="columns must contain the site"):
        pool_learning_curve(msa, 4, M=[10], lam=0.1, columns=np.arange(5, 9))
