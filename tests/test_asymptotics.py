"""Asymptotic series (derived by sympy) against the solver."""

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import replica_mlm as rm
from replica_mlm.theory.studies import asymptotics as limits


@pytest.fixture(scope="module")
def lim():
    return rm.GaussianPotts.limit(shift=3.0)


def test_series_have_the_known_leading_terms():
    ex = rm.expansions()
    sigma2 = sp.Symbol("sigma^2", nonnegative=True)
    c1 = ex["large_alpha"].coefficients[1]
    assert sp.simplify(c1 - sigma2) == 0  # eg - sigma^2 ~ sigma^2 / alpha
    eg0 = ex["small_alpha"].coefficients[0]
    assert sp.simplify(eg0 - (limits.teacher_moment(1) + sigma2)) == 0  # C_ii = rho + sigma^2
    assert ex["peak"].coefficients[2] == sp.Rational(-1, 2)  # divergence exponent at alpha = 1
    prefactor = ex["peak"].coefficients[0]
    assert sp.simplify(prefactor - sigma2 / (2 * sp.sqrt(limits.bulk_moment(-1)))) == 0


@pytest.mark.parametrize("lam", [1e-3, 0.1])
def test_small_alpha(lim, lam):
    a = rm.asymptotics(lim, lam=lam)
    assert a.eg0 == pytest.approx(lim.c_ii, rel=1e-13)
    # remainder / alpha^2 tends to a constant: the first-order series is right
    r = [(rm.solve(lim, alpha=x, lam=lam).eg - a.eg0 - a.slope * x) / x**2 for x in (1e-2, 1e-3, 1e-4)]
    assert abs(r[2] - r[1]) < 0.02 * abs(r[1]) and abs(r[2] - r[1]) < abs(r[1] - r[0])


def test_more_data_hurts_at_the_start_at_small_lam(lim):
    # the paper's claim: at small lam the slope of eg at alpha = 0 is positive; at large lam negative
    assert rm.asymptotics(lim, lam=1e-4).slope > 0
    assert rm.asymptotics(lim, lam=10.0).slope < 0
    # and the solver agrees on the sign
    assert rm.solve(lim, alpha=1e-3, lam=1e-4).eg > lim.c_ii > rm.solve(lim, alpha=1e-3, lam=10.0).eg


@pytest.mark.parametrize("lam", [0.0, 1e-3, 0.5])
def test_large_alpha(lim, lam):
    a = rm.asymptotics(lim, lam=lam)
    assert a.c1 == pytest.approx(lim.noise, rel=1e-14)
    r = [(rm.solve(lim, alpha=x, lam=lam).eg - lim.noise - a.c1 / x - a.c2 / x**2) * x**3
         for x in (1e2, 1e3, 1e4)]
    # remainder ~ alpha^-3: r tends to a constant, its changes shrink ~10x per decade
    # (float64 limits the last point to ~ eps sigma^2 alpha^3 ~ 4e-5)
    assert abs(r[2] - r[1]) < 0.2 * abs(r[1] - r[0]) + 1e-4, r


def test_peak_divergence_at_high_precision(lim):
    a = rm.asymptotics(lim, lam=0.0, precision=40)
    assert a.peak_exponent == -0.5
    with mpmath.workdps(40):
        rem = []
        for lam in ("1e-10", "1e-20", "1e-30"):
            x = mpmath.mpf(lam)
            eg = rm.solve(lim, alpha=1.0, lam=float(lam), precision=40).eg
            rem.append((eg - a.peak_prefactor * mpmath.mpf(float(lam)) ** a.peak_exponent
                        - a.peak_constant) / mpmath.sqrt(x))
        # eg = A lam^-1/2 + A' + O(lam^1/2): the O(lam^1/2) coefficient settles
        assert abs(rem[2] - rem[1]) < 1e-8 * abs(rem[1])
    # the fitted exponent of the solver's eg at tiny lam is -1/2
    lams = np.array([1e-16, 1e-20])
    egs = [float(rm.solve(lim, alpha=1.0, lam=x, precision=30).eg) for x in lams]
    slope = math.log(egs[1] / egs[0]) / math.log(lams[1] / lams[0])
    assert slope == pytest.approx(-0.5, abs=1e-6)


def test_asymptotics_on_a_finite_site(site300):
    a = rm.asymptotics(site300, lam=1e-2)
    assert a.eg0 == pytest.approx(site300.c_ii, rel=1e-12)
    x = 1e-4
    assert rm.solve(site300, alpha=x, lam=1e-2).eg == pytest.approx(a.eg0 + a.slope * x, abs=10 * x**2)
