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
