"""Thermodynamic limit: quadrature against mpmath, docs/limit.md check values, finite-size convergence."""

import math

import mpmath
import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.tasks.gaussian_potts_limit import nodes_for


def _integrals(s: float, f):
    """(1/p) tr f(Sigma) and w*^T f(Sigma) w* in the limit, by adaptive mpmath quadrature (30 digits)."""
    with mpmath.workdps(30):
        s = mpmath.mpf(s)

        def bulk(x):
            u = s - x
            return f(1 / x) * mpmath.sqrt(4 - u * u) / (2 * mpmath.pi)

        def teacher(x):
            z = s - x
            return f(1 / x) * mpmath.sqrt(4 - z * z) / (2 * mpmath.pi * (s * s - s * z + 1))

        return (mpmath.quad(bulk, [s - 2, s, s + 2]), mpmath.quad(teacher, [s - 2, s, s + 2]))


@pytest.mark.parametrize("shift", [2.05, 2.5, 3.0, 6.0])
def test_quadrature_matches_mpmath(shift):
    spec = rm.GaussianPotts.limit(shift=shift).spectrum
    for kappa in (1e-6, 0.3, 50.0):
        funcs = {
            "S_1": lambda w, k=kappa: w / (k + w),
            "S_2": lambda w, k=kappa: w**2 / (k + w) ** 2,
            "Q_T": lambda w, k=kappa: w**3 / (k + w) ** 2,
        }
        for name, f in funcs.items():
            exact_bulk, exact_teacher = _integrals(shift, f)
            vals = f(spec.omega)
            assert np.dot(spec.bulk, vals) == pytest.approx(float(exact_bulk), rel=1e-10), name
            assert np.dot(spec.teacher, vals) == pytest.approx(float(exact_teacher), rel=1e-10), name


def test_node_count_is_modest():
    # a point in the limit costs about as much as a finite spectrum of a few hundred modes
    assert nodes_for(3.0, 17) < 60 and nodes_for(2.1, 17) < 120 and nodes_for(2.01, 17) < 300


def test_theory_check_values():
    lim = rm.GaussianPotts.limit(shift=3.0)
    g3 = (3 - math.sqrt(5)) / 2
    assert lim.c_ii == pytest.approx(0.38196601125, abs=1e-11) and lim.c_ii == pytest.approx(g3, rel=1e-15)
    assert lim.noise == pytest.approx(1 / 3, rel=1e-15)
    assert lim.rho == pytest.approx(0.04863267791677, abs=1e-14)
    spec = lim.spectrum
    assert spec.rho == pytest.approx(lim.rho, rel=1e-13)  # quadrature of the teacher density
    assert spec.teacher.sum() == pytest.approx(1 / 9, rel=1e-13)  # |w*|^2 -> |b|^2 / s^2
    assert rm.solve(lim, alpha=2.0, lam=0.01).eg == pytest.approx(0.6315784365, abs=1e-10)


def test_limit_works_wherever_a_site_does():
    lim = rm.GaussianPotts.limit(shift=3.0)
    curve = rm.learning_curve(lim, alpha=np.linspace(0.1, 3, 30), lam=1e-3)
    assert np.all(np.isfinite(curve.eg))
    it = rm.solve(lim, alpha=1.5, lam=0.1, method="iterate", tol=1e-14)
    assert it.eg == pytest.approx(rm.solve(lim, alpha=1.5, lam=0.1).eg, rel=1e-10)
    assert rm.solve(lim, alpha=3.0, lam=0.0).eg == pytest.approx(lim.noise * 1.5, rel=1e-14)


@pytest.mark.parametrize("shift", [2.0, 1.5, -3.0, float("nan")])
def test_bad_shift_in_the_limit(shift):
    with pytest.raises(ValueError, match="shift"):
        rm.GaussianPotts.limit(shift=shift)


def _rms_gaps(sizes, instances, points):
    lim = rm.GaussianPotts.limit(shift=3.0)
    ref = np.array([rm.solve(lim, alpha=a, lam=l).eg for a, l in points])
    rms = []
    for L, n in zip(sizes, instances, strict=True):
        gaps = np.array([[rm.solve(site, alpha=a, lam=l).eg for a, l in points]
                         for site in (rm.GaussianPotts.random(L=L, shift=3.0, seed=1000 + k).masked_site(0)
                                      for k in range(n))]) - ref
        rms.append(np.sqrt(np.mean(gaps**2)))
    return np.array(rms)


def _check_inverse_sqrt_rate(sizes, instances):
    """Finite instances fluctuate around the limit by O(L^-1/2): the RMS gap over instances shrinks
    with a log-log slope of -1/2. With n instances the RMS is known to ~1/sqrt(2 n) relative, so
    the fitted slope is known to about 0.1 here; the tolerance is 0.2 (two of those)."""
    points = [(0.5, 1e-2), (2.0, 1e-2), (1.0, 0.1)]
    rms = _rms_gaps(sizes, instances, points)
    slope = np.polyfit(np.log(sizes), np.log(rms), 1)[0]
    assert np.all(np.diff(rms) < 0), rms
    assert slope == pytest.approx(-0.5, abs=0.2), (slope, rms)


@pytest.mark.slow  # the quick validation section 'limit' checks the same rate in CI (limit.finite_size_rate)
def test_finite_size_gap_shrinks_like_inverse_sqrt_L_quick():
    _check_inverse_sqrt_rate([100, 400, 1600], [48, 24, 8])


@pytest.mark.slow
def test_finite_size_gap_shrinks_like_inverse_sqrt_L():
    _check_inverse_sqrt_rate([200, 800, 3200], [48, 24, 12])


def test_validation_finite_size_gives_the_same_numbers_with_two_workers(monkeypatch):
    from replica_mlm.validation import limit_section as section
    from replica_mlm.validation.mlm_section import instance_seed

    monkeypatch.setattr(section, "_finite_sizes", lambda quick: ([30, 60], [4, 3]))
    serial = section._finite_size(True, 5, workers=1)
    assert section._finite_size(True, 5, workers=2) == serial
    # the RMS gap of the smaller size, recomputed here instance by instance
    lim = rm.GaussianPotts.limit(shift=3.0)
    ref = np.array([rm.solve(lim, alpha=a, lam=lam).eg for a, lam in section.POINTS])
    gaps = [[rm.solve(rm.GaussianPotts.random(L=30, shift=3.0, seed=instance_seed(5, 30, k)).masked_site(0),
                      alpha=a, lam=lam).eg for a, lam in section.POINTS] for k in range(4)]
    assert serial["rms_gap"][0] == float(np.sqrt(np.mean((np.array(gaps) - ref) ** 2)))
    assert serial["instances"] == [4, 3] and serial["L"] == [30, 60]
