"""One square-loss point on scalars (theory/solvers/one_point.py, issue 29): the same bits as the
vectorised reduced solver, the same eg as an independent Brent root of the scalar equation, and
the vectorised solver wherever the scalar path does not apply."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import replica_mlm as rm
from replica_mlm.theory.solvers import one_point, root
from replica_mlm.theory.symbolic.compiled import compiled_sums, ratios_at, sum_terms


def _spectra() -> dict:
    rng = np.random.default_rng(7)
    w = np.geomspace(1e-8, 1e4, 200)  # ill-conditioned: 12 decades
    shuffled = rng.permutation(120)
    omega = np.linspace(0.1, 3.0, 120)[shuffled]  # not sorted: the masked ratios
    return {
        "site": rm.GaussianPotts.random(L=80, shift=3.0, seed=0).masked_site(0).spectrum,
        "limit 3": rm.GaussianPotts.limit(3.0).spectrum,
        "limit 2.05": rm.GaussianPotts.limit(2.05).spectrum,
        "ill-conditioned": rm.Spectrum(omega=w, bulk=np.full(200, 1 / 200), teacher=rng.uniform(0, 1, 200),
                                       noise=0.3),
        "unsorted": rm.Spectrum(omega=omega, bulk=np.full(120, 1 / 120), teacher=rng.uniform(0, 2, 120),
                                noise=0.0),
        "lanczos": rm.Spectrum.from_site(rm.GaussianPotts.random(L=40, shift=3.0, seed=2).masked_site(0),
                                         method="lanczos"),
    }


SPECTRA = _spectra()


def _points(seed: int, n: int = 40):
    rng = np.random.default_rng(seed)
    alphas = np.exp(rng.uniform(math.log(0.05), math.log(10.0), n))
    lams = 10 ** rng.uniform(-6, 1, n)
    edges = [(1.0, 1e-6), (0.5, 0.1), (0.49999, 1e-3), (10.0, 1e-6), (0.05, 10.0), (1.0, 1e-9)]
    return [(float(a), float(lm)) for a, lm in zip(alphas, lams, strict=True)] + edges


@pytest.mark.parametrize("name", list(SPECTRA))
def test_one_point_is_the_vectorised_solver_to_the_bit(name):
    """Every field of the scalar path equals that of root.solve_reduced for the same point alone,
    and rm.solve returns those numbers through the scalar path."""
    spec = SPECTRA[name]
    used = 0
    for alpha, lam in _points(hash(name) % 1000):
        one = one_point.solve_point(spec, alpha, lam)
        ref = root.solve_reduced(spec, np.array([alpha]), lam)
        assert one is not None, (alpha, lam)  # all of these points are in the covered case
        used += 1
        for key in (*root.FIELDS, "regime"):
            assert one[key] == ref[key][0], (key, alpha, lam, one[key], ref[key][0])
        sp = rm.solve(spec, alpha=alpha, lam=lam)
        assert sp.converged and sp.residual <= root.RESIDUAL_TOL
        for key in ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "residual",
                    "test_loss", "estimation_error"):
            assert getattr(sp, key) == float(ref[key][0]), key
        assert sp.iterations == int(ref["iterations"][0]) and sp.method == "root"
    assert used == len(_points(0))


def brent_closed_form(spec, alpha: float, lam: float) -> tuple[float, float, float]:
    """(eg, kappa, condition number) of the closed form of benchmarks/bench_overhead.py: kappa by
    scipy's brentq on lam/kappa + S_1(kappa) = alpha, then eg = (R + sigma^2) / (1 - S_2 / alpha),
    whose condition number is 1 / (1 - S_2 / alpha)."""
    w, b, c = spec.omega, spec.bulk, spec.teacher

    def g(k):
        return lam / k + np.dot(b, w / (w + k)) - alpha
    k = brentq(g, lam / alpha, (lam + np.dot(b, w)) / alpha, xtol=1e-300, rtol=8.9e-16)
    y = w / (w + k)
    cond = 1.0 / (1.0 - np.dot(b, y * y) / alpha)
    return (k * k * np.dot(c, w / (w + k) ** 2) + spec.noise) * cond, k, cond


def test_eg_agrees_with_an_independent_brent_root():
    """eg and kappa from the scalar path against :func:`brent_closed_form`. Both are exact to
    rounding amplified by the condition number of the peak (9e3 at alpha = 1, lam = 1e-9): within
    32 eps of it."""
    spec = SPECTRA["site"]
    eps = np.finfo(float).eps
    for alpha, lam in _points(11, 30):
        eg, k, cond = brent_closed_form(spec, alpha, lam)
        got = one_point.solve_point(spec, alpha, lam)
        assert abs(got["eg"] / eg - 1) <= 32 * eps * cond, (alpha, lam, got["eg"], eg, cond)
        assert abs(got["kappa"] / k - 1) <= 32 * eps * cond, (alpha, lam, got["kappa"], k, cond)


def test_the_start_does_not_depend_on_the_cheap_signs(monkeypatch):
    """With SLACK = inf every node of the bisection is evaluated exactly as the vectorised solver
    does: the same starts, hence the same solutions, as with the cheap signs."""
    spec = SPECTRA["ill-conditioned"]
    pts = _points(5, 25)
    fast = [one_point.solve_point(spec, a, lm) for a, lm in pts]
    monkeypatch.setattr(one_point, "SLACK", math.inf)
    exact = [one_point.solve_point(spec, a, lm) for a, lm in pts]
    for f, e in zip(fast, exact, strict=True):
        assert f["kappa"] == e["kappa"] and f["iterations"] == e["iterations"]


@pytest.mark.parametrize("name", ["site", "unsorted", "ill-conditioned"])
def test_ratios_at_gives_the_numbers_of_the_compiled_sums(name):
    """Sums from ratios_at (below, inside and above the spectrum) equal those of compiled_sums."""
    spec = SPECTRA[name]
    w, b, c = spec.omega, spec.bulk, spec.teacher
    ascending = bool(np.all(w[1:] >= w[:-1]))
    names = ("S_1", "S_1c", "S_2", "S_2c", "Q_T", "M", "R", "P_rho", "S_12")
    for k in (w.min() / 3, w.min(), float(np.median(w)), w.max(), 5 * w.max(), 1e-300, 1e300):
        x, y = ratios_at(k, w, w.min(), w.max(), ascending=ascending)
        ref = compiled_sums(names)(w, b, c, np.array([[k]]))
        for got, want in zip(sum_terms(names)(w, b, c, x, y), ref, strict=True):
            assert np.array_equal(np.broadcast_to(got, w.shape), np.broadcast_to(want, (1, w.size))[0])


@pytest.mark.parametrize("name", ["site", "unsorted", "ill-conditioned", "lanczos"])
def test_backend_sums_at_a_few_kappas_are_those_of_the_block(name):
    """NUMPY.sums at up to backend.FEW kappas (one kappa at a time) equals, to the bit, the same
    kappas summed among many (the block of points x modes)."""
    from replica_mlm.theory.solvers import backend

    spec = SPECTRA[name]
    w = spec.omega
    kappas = np.array([w.min() / 3, w.min(), float(np.median(w)), w.max(), 5 * w.max(), 1e-300, 1e300,
                       0.0, np.inf])
    names = ("S_1", "S_1c", "S_2", "S_2c", "Q_T", "M", "R", "P_rho", "S_12")
    block = backend.NUMPY.sums(spec, names, kappas)
    for i in range(kappas.size):
        few = backend.NUMPY.sums(spec, names, kappas[i:i + backend.FEW])
        for key in names:
            np.testing.assert_array_equal(few[key], block[key][i:i + backend.FEW], err_msg=key)


@pytest.mark.parametrize("alpha, lam, regime", [(0.5, 0.0, "minimum-norm"), (3.0, 0.0, "least squares"),
                                                (1.0, 0.0, "interpolation peak"),
                                                (3.0, 1e-300, "least squares"), (0.3, 1e20, "first order")])
def test_outside_the_covered_case_the_vectorised_solver_answers(alpha, lam, regime):
    """lam = 0, the exact least-squares and strong-ridge limits: solve_point declines (None) and
    rm.solve gives the vectorised solver's numbers and message."""
    spec = SPECTRA["site"]
    assert one_point.solve_point(spec, alpha, lam) is None
    sp = rm.solve(spec, alpha=alpha, lam=lam)
    ref = root.solve_reduced(spec, np.array([alpha]), lam)
    assert regime in sp.message
    assert sp.eg == float(ref["eg"][0]) or (math.isinf(sp.eg) and math.isinf(ref["eg"][0]))


def test_a_python_float_is_still_checked():
    """The one-step check of a Python float (as_scalar) still refuses inf and NaN."""
    spec = SPECTRA["site"]
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="alpha must be finite"):
            rm.solve(spec, alpha=bad, lam=0.1)
        with pytest.raises(ValueError, match="lam must be finite"):
            rm.solve(spec, alpha=1.0, lam=bad)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        rm.solve(spec, alpha=-1.0, lam=0.1)


def test_the_table_is_numpys_geomspace():
    """The start table of the scalar path is np.geomspace(lo, hi, TABLE), node for node."""
    rng = np.random.default_rng(2)
    for lo, hi in [(1e-300, 1e300), (0.3, 0.3), (2.0, 1.0), (1.0, 1.0 + 1e-15)] + [
            tuple(10 ** rng.uniform(-200, 200, 2)) for _ in range(200)]:
        assert np.array_equal(one_point._table(lo, hi), np.geomspace(lo, hi, root.TABLE)), (lo, hi)
