"""The learning curve of a real protein site against the replica prediction (proteins.learning_curve)."""

import numpy as np
import pytest

import replica_mlm as rm

pytest.importorskip("biotite")
pytest.importorskip("pandas")

from replica_mlm.proteins import datasets
from replica_mlm.proteins.learning_curve import (
    ridge_fit,
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
