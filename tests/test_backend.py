"""The reduced solver written once over two backends (theory/solvers/backend.py): the mpmath backend uses
the same regimes as float64, each exact at its working precision."""

import mpmath
import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.theory.solvers import precise, root
from replica_mlm.theory.solvers.backend import NUMPY, mpmath_backend


@pytest.fixture(scope="module")
def site50():
    return rm.GaussianPotts.random(L=50, shift=3.0, seed=0).masked_site(0)


@pytest.mark.parametrize("alpha", [1e-3, 1.0, 7.0])
def test_large_kappa_regime_is_exact_at_the_mpmath_precision(site50, alpha):
    # lam = 1e60: beyond 2^(bits + 7) omega_max at 40 digits (first order in 1/kappa), Newton at 80
    spec = site50.spectrum
    lam = 1e60
    low = precise.solve_precise(site50, spec, alpha, lam, 40)
    high = precise.solve_precise(site50, spec, alpha, lam, 80)
    assert low["regime"] == root.LARGE_KAPPA and high["regime"] == root.NEWTON
    assert low["converged"] and high["converged"] and high["iterations"] > 0
    with mpmath.workdps(90):
        for name in ("eg", "train_loss", "V", "q", "m", "V_hat", "q_hat", "kappa"):
            assert abs(low[name] - high[name]) <= mpmath.mpf(10) ** -40 * abs(high[name]), name


def test_both_backends_take_the_same_regimes(site50):
    # away from float64's exponent limits (where only it needs the 2^-800 rule) the codes agree
    alphas = [1e-8, 0.3, 1 - 1e-9, 1.0, 1 + 1e-9, 2.0, 1e8]
    lams = [0.0, 1e-12, 1.0, 1e12, 1e300]
    spec = site50.spectrum
    a, lm = (x.ravel() for x in np.meshgrid(alphas, lams))
    codes = root.solve_reduced(spec, a, lm)["regime"]
    for i in range(a.size):
        out = precise.solve_precise(site50, spec, float(a[i]), float(lm[i]), 17)
        expected = codes[i]
        if expected == root.LARGE_KAPPA and lm[i] < 1e100:
            expected = root.NEWTON  # 17 + 10 digits: the large-kappa rule starts later than 2^60
        assert out["regime"] == expected, (a[i], lm[i])


def test_backend_constants():
    assert NUMPY.residual_tol == root.RESIDUAL_TOL == 256 * np.finfo(float).eps
    with mpmath.workdps(50):
        b = mpmath_backend(40, 10)
        assert b.residual_tol == mpmath.mpf(10) ** -40 and b.large == mpmath.mpf(2) ** (mpmath.mp.prec + 7)
        assert b.step_tol == mpmath.mpf(10) ** -45 and b.tiny == 0 and b.table == 0
