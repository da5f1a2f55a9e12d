"""solve(precision=): the same equations through mpmath; float64 results hold to ~machine precision."""

import math

import mpmath
import pytest

import replica_mlm as rm

POINTS = [(1.0, 1e-12), (1.0, 1e-8), (0.999, 1e-10), (1.001, 1e-10), (0.5, 1e-3), (3.0, 1e-5),
          (0.5, 0.0), (2.0, 0.0), (0.05, 10.0)]


@pytest.mark.parametrize("alpha,lam", POINTS)
def test_float_agrees_with_40_digits(site300, alpha, lam):
    for task in (site300, rm.GaussianPotts.limit(shift=3.0)):
        hi = rm.solve(task, alpha=alpha, lam=lam, precision=40)
        lo = rm.solve(task, alpha=alpha, lam=lam)
        for name in ("eg", "train_loss", "m", "q"):
            x, y = getattr(hi, name), getattr(lo, name)
            assert isinstance(x, mpmath.mpf)
            # a few ulps: the denominator alpha - S_2 is evaluated as V_hat + S_12, a sum of
            # positive terms, so no digits are lost at small alpha (tests/test_extremes.py)
            assert abs(float((x - y) / x)) < 1e-14 if x else y == 0, (name, x, y)


def test_precision_is_self_consistent():
    lim = rm.GaussianPotts.limit(shift=3.0)
    a = rm.solve(lim, alpha=1.0, lam=1e-30, precision=50)
    b = rm.solve(lim, alpha=1.0, lam=1e-30, precision=80)
    with mpmath.workdps(80):
        assert abs((a.eg - b.eg) / b.eg) < mpmath.mpf(10) ** -48
    assert a.residual < mpmath.mpf(10) ** -50
    assert "mpmath at 50 digits" in a.message


def test_precision_peak_and_bad_input(site300):
    sp = rm.solve(site300, alpha=1.0, lam=0.0, precision=30)
    assert sp.eg == mpmath.inf and sp.train_loss == 0
    with pytest.raises(ValueError, match="precision must be >= 16"):
        rm.solve(site300, alpha=1.0, lam=1e-3, precision=8)
    with pytest.raises(ValueError, match="method='root'"):
        rm.solve(site300, alpha=1.0, lam=1e-3, precision=30, method="iterate")
    with pytest.raises(TypeError, match="precision must be an integer"):
        rm.solve(site300, alpha=1.0, lam=1e-3, precision=30.5)
    with pytest.raises(ValueError, match="precision must be <= 1000 digits"):
        rm.solve(site300, alpha=1.0, lam=1e-3, precision=10**9)
    assert math.isfinite(float(rm.solve(site300, alpha=1.0, lam=1e-3, precision=20).eg))


def test_precision_failure_is_a_convergence_error(monkeypatch):
    import functools

    from replica_mlm.theory.solvers import precise
    monkeypatch.setattr(precise, "solve_precise", functools.partial(precise.solve_precise, max_iter=1))
    with pytest.raises(rm.ConvergenceError) as info:
        rm.solve(rm.GaussianPotts.limit(shift=3.0), alpha=1.0, lam=1e-8, precision=30)
    assert info.value.iterations == 1 and "kappa" in info.value.last
