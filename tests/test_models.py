"""Gaussian Potts model and masked sites: conventions of docs/theory.md, section 1, and bad input."""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.tasks.gaussian_potts import goe


def test_goe_statistics():
    L = 400
    J = goe(L, rng=0)
    assert np.array_equal(J, J.T)
    off = J[np.triu_indices(L, 1)]
    # variances 1/L off the diagonal and 2/L on it; standard errors of a sample variance ~ sqrt(2/N)
    assert off.var() * L == pytest.approx(1.0, abs=4 * np.sqrt(2 / off.size))
    assert np.diag(J).var() * L == pytest.approx(2.0, abs=4 * 2 * np.sqrt(2 / L))
    # semicircle edge at 2
    assert np.linalg.eigvalsh(J)[-1] == pytest.approx(2.0, abs=0.15)


def test_model_attributes(potts300):
    m = potts300
    assert m.shift == 3.0 and m.couplings.shape == (301, 301)
    assert np.allclose(m.precision, 3.0 * np.eye(301) - m.couplings)
    assert np.allclose(m.covariance @ m.precision, np.eye(301), atol=1e-12)
    m2 = rm.GaussianPotts(couplings=m.couplings, shift=3.0)
    assert np.array_equal(m2.couplings, m.couplings)


def test_masked_site_is_gaussian_conditioning(potts300):
    i = 7
    site = potts300.masked_site(i)
    C, P = potts300.covariance, potts300.precision
    keep = np.arange(301) != i
    # regression of x_i on x_-i from the covariance: w* = Sigma^{-1} C_{-i,i}
    w_cov = np.linalg.solve(C[np.ix_(keep, keep)], C[keep, i])
    assert np.allclose(site.teacher, w_cov, atol=1e-12)
    assert site.noise == pytest.approx(1 / P[i, i], rel=1e-14)
    assert site.c_ii == pytest.approx(C[i, i], rel=1e-12)  # C_ii = rho + sigma^2
    assert site.p == 300


def test_sample_has_the_right_moments():
    site = rm.MaskedSite(covariance=np.array([[2.0, 0.5], [0.5, 1.0]]), teacher=[1.0, -2.0], noise=0.25)
    X, y = site.sample(200_000, rng=np.random.default_rng(0))
    assert X.shape == (200_000, 2) and y.shape == (200_000,)
    cov = np.cov(X.T)
    # entries of a sample covariance have standard error ~ sqrt((S_aa S_bb + S_ab^2)/n) < 0.01 here
    assert np.allclose(cov, site.covariance, atol=4 * 0.0071)
    resid = y - X @ site.teacher
    assert resid.var() == pytest.approx(0.25, abs=4 * 0.25 * np.sqrt(2 / 200_000))
    # reproducible from an int seed
    assert np.array_equal(site.sample(5, rng=3)[0], site.sample(5, rng=3)[0])


def test_spectrum_of_site(site300):
    spec = site300.spectrum
    assert spec.omega.shape == (300,) and np.all(spec.omega > 0)
    assert spec.rho == pytest.approx(site300.rho, rel=1e-12)
    assert spec.noise == site300.noise


@pytest.mark.parametrize("make,match", [
    (lambda: rm.GaussianPotts(couplings=[[0, 1], [0.5, 0]], shift=3.0), "symmetric"),
    (lambda: rm.GaussianPotts(couplings=np.ones((2, 3)), shift=3.0), "square"),
    (lambda: rm.GaussianPotts(couplings=[[0, np.nan], [np.nan, 0]], shift=3.0), "NaN"),
    (lambda: rm.GaussianPotts.random(L=200, shift=1.5, seed=0), "shift=1.5 is too small"),
    (lambda: rm.GaussianPotts(couplings=np.zeros((3, 3)), shift=-1.0), "shift must be > 0"),
    (lambda: rm.GaussianPotts.random(L=0, shift=3.0), "L must be >= 1"),
    (lambda: rm.MaskedSite(covariance=[[1, 2], [2, 1]], teacher=[1, 1], noise=0.1), "positive definite"),
    (lambda: rm.MaskedSite(covariance=[[1, 0.1], [0, 1]], teacher=[1, 1], noise=0.1), "symmetric"),
    (lambda: rm.MaskedSite(covariance=np.eye(3), teacher=[1, 1], noise=0.1), "must match"),
    (lambda: rm.MaskedSite(covariance=np.eye(2), teacher=[1, np.inf], noise=0.1), "NaN or infinite"),
    (lambda: rm.MaskedSite(covariance=np.eye(2), teacher=[1, 1], noise=-0.1), "noise must be >= 0"),
    (lambda: rm.Spectrum(omega=[1.0, 2.0], bulk=[0.5, 0.4], teacher=[0, 0], noise=0.1), "sum to 1"),
    (lambda: rm.Spectrum(omega=[1.0, -2.0], bulk=[0.5, 0.5], teacher=[0, 0], noise=0.1), "omega must be > 0"),
])
def test_bad_model_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("i,error", [(-1, ValueError), (301, ValueError), (1000, ValueError),
                                     (2.0, TypeError), ("0", TypeError), (True, TypeError)])
def test_masked_site_index_out_of_range(potts300, i, error):
    with pytest.raises(error, match="site index"):
        potts300.masked_site(i)


def test_bad_sample_input(site300):
    with pytest.raises(ValueError, match="n must be"):
        site300.sample(0, rng=0)
    with pytest.raises(TypeError, match="rng must be"):
        site300.sample(3, rng="seed")


def test_sizes_beyond_memory_are_refused_before_allocating(site300):
    """ValueError naming the request and the memory available, not MemoryError or the OOM killer."""
    with pytest.raises(ValueError, match=r"sample\(n=1000000000\).*iB of memory, more than"):
        site300.sample(10**9, rng=0)
    with pytest.raises(ValueError, match=r"L = 1000000000.*more than the .* available"):
        rm.GaussianPotts.random(L=10**9, seed=0)


def test_generalisation_error_checks_weights(site300):
    w = np.zeros(site300.p)
    assert site300.generalisation_error(w.tolist()) == site300.generalisation_error(w)
    with pytest.raises(TypeError, match="weights"):
        site300.generalisation_error(w + 1j)
    with pytest.raises(ValueError, match="weights contains NaN"):
        site300.generalisation_error(np.full(site300.p, np.nan))
    with pytest.raises(ValueError, match="weights must have shape"):
        site300.generalisation_error(np.zeros(3))
