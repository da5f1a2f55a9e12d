"""Saddle-point solvers: two methods, exact limits, invariances, loud failures."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

import replica_mlm as rm


def random_spectrum(seed, p=40, noise=0.3):
    rng = np.random.default_rng(seed)
    omega = rng.uniform(0.1, 3.0, p)
    teacher = rng.exponential(1.0, p) / p
    return rm.Spectrum(omega=omega, bulk=np.full(p, 1 / p), teacher=teacher, noise=noise)


# --- two solvers, one answer -----------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0])
@pytest.mark.parametrize("lam", [1e-2, 0.1, 1.0])
def test_root_and_iterate_agree(site300, alpha, lam):
    a = rm.solve(site300, alpha=alpha, lam=lam)
    b = rm.solve(site300, alpha=alpha, lam=lam, method="iterate", tol=1e-14)
    for name in ("eg", "train_loss", "m", "q", "V", "V_hat", "q_hat", "m_hat"):
        x, y = getattr(a, name), getattr(b, name)
        assert abs(x - y) <= 1e-9 * max(1.0, abs(x)), (name, x, y)
    assert a.method == "root" and b.method == "iterate"
    assert a.converged and b.converged


def test_root_is_machine_precise_at_the_peak(site300):
    sp = rm.solve(site300, alpha=1.0, lam=1e-8)
    assert sp.converged and math.isfinite(sp.eg) and sp.eg > 100
    assert sp.residual < 1e-13  # all six raw equations hold to rounding
    assert sp.iterations < 100


@pytest.mark.parametrize(
    "alpha,lam", [(0.3, 1e-3), (1.0, 1e-6), (2.5, 0.2), (1.0, 1e-8), (0.5, 0.0), (2.0, 0.0)]
)
def test_residual_of_raw_equations_is_rounding(site300, alpha, lam):
    assert rm.solve(site300, alpha=alpha, lam=lam).residual < 1e-13


def test_iterate_documents_its_damping(site300):
    sp = rm.solve(site300, alpha=2.0, lam=0.1, method="iterate", damping=0.5, tol=1e-10)
    assert "damping=0.5" in sp.message and sp.iterations > 1


# --- lam = 0 is exact (docs/theory.md, section 5) -------------------------------------------

@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 7.0])
def test_least_squares_limit(site300, alpha):
    sp = rm.solve(site300, alpha=alpha, lam=0.0)
    expected = site300.noise * alpha / (alpha - 1)
    assert sp.eg == pytest.approx(expected, rel=1e-13)
    assert sp.train_loss == pytest.approx(site300.noise * (alpha - 1) / alpha, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.7, 0.99])
def test_minimum_norm_limit(site300, alpha):
    # independent implementation of docs/theory.md, section 5, alpha < 1
    spec = site300.spectrum
    w, th2, p = spec.omega, spec.teacher, site300.p
    kappa = optimize.brentq(lambda k: np.mean(w / (w + k)) - alpha, 1e-14, 1e6, xtol=1e-300, rtol=1e-15)
    eg = (spec.noise + kappa**2 * np.sum(w * th2 / (w + kappa) ** 2)) / (
        1 - np.sum(w**2 / (w + kappa) ** 2) / (alpha * p))
    sp = rm.solve(site300, alpha=alpha, lam=0.0)
    assert sp.eg == pytest.approx(eg, rel=1e-12)
    assert sp.kappa == pytest.approx(kappa, rel=1e-12)
    assert sp.V == math.inf and sp.V_hat == 0.0 and sp.train_loss == 0.0


def test_lam_zero_is_the_limit_of_small_lam(site300):
    for alpha in (0.5, 2.0):
        exact = rm.solve(site300, alpha=alpha, lam=0.0).eg
        assert rm.solve(site300, alpha=alpha, lam=1e-12).eg == pytest.approx(exact, rel=1e-9)


def test_interpolation_peak_is_inf_without_warnings(site300, recwarn):
    sp = rm.solve(site300, alpha=1.0, lam=0.0)
    assert sp.eg == math.inf and sp.q == math.inf and sp.V == math.inf
    assert sp.train_loss == 0.0 and sp.m == pytest.approx(site300.rho)
    assert len(recwarn) == 0
    # and the peak grows without bound as lam -> 0
    egs = [rm.solve(site300, alpha=1.0, lam=lam).eg for lam in (1e-2, 1e-4, 1e-6, 1e-8)]
    assert all(a < b for a, b in itertools.pairwise(egs))


# --- physical limits ----------------------------------------------------------------------------

def test_large_lambda_and_small_alpha_give_c_ii(site300):
    c_ii = site300.c_ii
    assert rm.solve(site300, alpha=2.0, lam=1e9).eg == pytest.approx(c_ii, rel=1e-8)
    assert rm.solve(site300, alpha=1e-9, lam=1e-3).eg == pytest.approx(c_ii, rel=1e-6)


def test_large_alpha_gives_noise_with_one_over_alpha_tail(site300):
    s2 = site300.noise
    for alpha in (1e2, 1e4, 1e6):  # eg - sigma^2 = sigma^2 / alpha (1 + O(1/alpha))
        sp = rm.solve(site300, alpha=alpha, lam=1e-3)
        assert (sp.eg - s2) * alpha == pytest.approx(s2, rel=2 / alpha)


def test_rotation_invariance(site300):
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((site300.p, site300.p)))
    rotated = rm.MaskedSite(covariance=q @ site300.covariance @ q.T, teacher=q @ site300.teacher,
                            noise=site300.noise)
    for alpha, lam in [(0.5, 1e-3), (1.0, 1e-2), (3.0, 0.0)]:
        a, b = rm.solve(site300, alpha=alpha, lam=lam), rm.solve(rotated, alpha=alpha, lam=lam)
        assert b.eg == pytest.approx(a.eg, rel=1e-10)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), alpha=st.floats(0.02, 6.0), log_lam=st.floats(-8, 2),
       noise=st.floats(0.0, 2.0))
def test_eg_at_least_noise_and_finite(seed, alpha, log_lam, noise):
    spec = random_spectrum(seed, noise=noise)
    sp = rm.solve(spec, alpha=alpha, lam=10.0**log_lam)
    assert math.isfinite(sp.eg) and sp.eg >= spec.noise * (1 - 1e-12)
    assert 0 <= sp.train_loss <= sp.eg * (1 + 1e-12)
    # the raw q_hat equation evaluates rho + sigma^2 - 2m + q = eg by cancellation: its rounding
    # error is ~ eps (rho + sigma^2 + 2m + q) / eg, which bounds the residual that can be seen
    condition = (sp.rho + sp.noise + 2 * abs(sp.m) + sp.q) / sp.eg
    assert sp.residual < 1e-13 * max(1.0, condition)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), alpha=st.floats(0.05, 5.0), log_lam=st.floats(-2, 1))
def test_iterate_agrees_on_random_spectra(seed, alpha, log_lam):
    spec = random_spectrum(seed)
    lam = 10.0**log_lam
    a = rm.solve(spec, alpha=alpha, lam=lam)
    b = rm.solve(spec, alpha=alpha, lam=lam, method="iterate", tol=1e-14)
    assert b.eg == pytest.approx(a.eg, rel=1e-9, abs=1e-12)


def test_eg_increases_with_alpha_below_peak_at_small_lam(site300):
    # the paper's headline: low signal-to-noise, so no initial decay at small lam
    curve = rm.learning_curve(site300, alpha=np.linspace(0.05, 0.95, 40), lam=1e-4)
    assert np.all(np.diff(curve.eg) > 0)


# --- loud failures -------------------------------------------------------------------------------

def test_non_convergence_raises_with_last_iterate(site300):
    with pytest.raises(rm.ConvergenceError) as info:
        rm.solve(site300, alpha=1.0, lam=1e-6, method="iterate", max_iter=50)
    err = info.value
    assert err.iterations == 50 and set(err.last) >= {"V", "q", "m"} and err.residual > 0
    with pytest.raises(rm.ConvergenceError):  # the minimum-norm limit diverges under iteration
        rm.solve(site300, alpha=0.5, lam=0.0, method="iterate")


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=0.0, lam=0.1), "alpha must be > 0"),
    (dict(alpha=-1.0, lam=0.1), "alpha must be > 0"),
    (dict(alpha=1.0, lam=-0.1), "lam must be >= 0"),
    (dict(alpha=float("nan"), lam=0.1), "alpha must be finite"),
    (dict(alpha=1.0, lam=float("nan")), "lam must be finite"),
    (dict(alpha=1.0, lam=float("inf")), "lam must be finite"),
    (dict(alpha=1.0, lam=0.1, method="newton"), "method must be one of"),
    (dict(alpha=1.0, lam=0.1, method="iterate", damping=1.0), "damping"),
    (dict(alpha=1.0, lam=0.1, tol=1e-3), "takes no options"),
])
def test_bad_solver_input(site300, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.solve(site300, **kwargs)


def test_bad_task():
    with pytest.raises(ValueError, match="task must be"):
        rm.solve(np.eye(3), alpha=1.0, lam=0.1)
