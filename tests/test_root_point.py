"""One square-loss point of the reduced solver (theory/solvers/root.py, solve_point): the same
bits as the vectorised algorithm on arrays, the start's shortcuts (tangents of G, cheap signs)
decide as the full bisection would, and the numbers agree with two independent solutions: a
Brent root of the scalar equation and the mpmath solution at 40 digits."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from scipy.optimize import brentq

import replica_mlm as rm
from replica_mlm.theory.solvers import backend, root, start
from replica_mlm.theory.solvers.backend import NUMPY
from replica_mlm.theory.symbolic.compiled import (
    STABLE_SUMS,
    SUM_NAMES,
    compiled,
    compiled_sums,
    ratios_at,
    sum_terms,
)

KEYS = ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "residual", "test_loss",
        "estimation_error")


def _spectra() -> dict:
    rng = np.random.default_rng(7)
    w = np.geomspace(1e-8, 1e4, 200)  # ill-conditioned: 12 decades
    return {
        "site": rm.GaussianPotts.random(L=80, shift=3.0, seed=0).masked_site(0).spectrum,
        "limit 3": rm.GaussianPotts.limit(3.0).spectrum,
        "limit 2.05": rm.GaussianPotts.limit(2.05).spectrum,
        "ill-conditioned": rm.Spectrum(omega=w, bulk=np.full(200, 1 / 200), teacher=rng.uniform(0, 1, 200),
                                       noise=0.3),
        "unsorted": rm.Spectrum(omega=np.linspace(0.1, 3.0, 120)[rng.permutation(120)],  # masked ratios
                                bulk=np.full(120, 1 / 120), teacher=rng.uniform(0, 2, 120), noise=0.0),
        "lanczos": rm.Spectrum.from_site(rm.GaussianPotts.random(L=40, shift=3.0, seed=2).masked_site(0),
                                         method="lanczos"),
    }


SPECTRA = _spectra()


def _points(seed: int, n: int = 40) -> list[tuple[float, float]]:
    """alpha log-uniform in [0.05, 10], lam log-uniform in [1e-6, 10], and edges of both."""
    rng = np.random.default_rng(seed)
    alphas = np.exp(rng.uniform(math.log(0.05), math.log(10.0), n))
    lams = 10 ** rng.uniform(-6, 1, n)
    edges = [(1.0, 1e-6), (0.5, 0.1), (0.49999, 1e-3), (10.0, 1e-6), (0.05, 10.0), (1.0, 1e-9),
             (1.0 + 1e-9, 1e-6), (10.0, 10.0)]
    return [(float(a), float(lm)) for a, lm in zip(alphas, lams, strict=True)] + edges


def _on_arrays(spec, pts) -> list[dict]:
    """Each point by the vectorised algorithm on arrays: the points solved together with
    per_point=True (every point from its own table, as if alone; more than one point, so the
    point path is not taken), one dict of numbers per point."""
    a, lm = (np.array(v) for v in zip(*pts, strict=True))
    out = root.solve_reduced(spec, a, lm, per_point=True)
    return [{k: v[i] for k, v in out.items()} for i in range(len(pts))]


@pytest.mark.parametrize("name", list(SPECTRA))
def test_one_point_is_the_vectorised_algorithm_to_the_bit(name):
    """Every field of solve_point, of solve_reduced on one point and of rm.solve equals that of the
    vectorised algorithm for the same point (48 points per spectrum, all in the covered case)."""
    spec = SPECTRA[name]
    pts = _points(sum(map(ord, name)))
    for (alpha, lam), ref in zip(pts, _on_arrays(spec, pts), strict=True):
        one = root.solve_point(spec, alpha, lam)
        assert one is not None, (alpha, lam)
        alone = root.solve_reduced(spec, np.array([alpha]), lam)
        for key in (*root.FIELDS, "regime"):
            assert one[key] == ref[key] == alone[key][0], (key, alpha, lam, one[key], ref[key])
        sp = rm.solve(spec, alpha=alpha, lam=lam)
        assert sp.converged and sp.method == "root" and sp.iterations == ref["iterations"]
        for key in KEYS:
            assert getattr(sp, key) == float(ref[key]), (key, alpha, lam)


def _bisection_start(spec, alpha: float, lam: float) -> float:
    """The start of the vectorised algorithm for one point: count_bisect over np.geomspace(lo, hi,
    TABLE), every node's G from the compiled sums."""
    a, lm = np.array([alpha]), np.array([lam])
    lo, hi = start.bounds(NUMPY, spec, a, lm)
    nodes = np.geomspace(lo[0], hi[0], root.TABLE)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        count = int(start.count_bisect(NUMPY, spec, nodes, a < 0.5, a, lm)[0])
    return max(nodes[count - 1] if count > 0 else lo[0], lo[0])


@pytest.mark.parametrize("name", ["site", "ill-conditioned", "unsorted", "lanczos"])
def test_the_start_does_not_depend_on_its_shortcuts(name, monkeypatch):
    """point_start's node is count_bisect's, to the bit; so it stays with no tangent trusted
    (TRUST = inf) and with no cheap sign trusted (SLACK = inf: every node from the compiled sums)."""
    spec = SPECTRA[name]
    top = backend.extremes(spec)[1]
    pts = _points(9, 25)

    def starts():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [start.point_start(spec, *start.point_bounds(spec, a, lm, top), a < 0.5, a, lm)
                    for a, lm in pts]

    fast = starts()
    assert fast == [_bisection_start(spec, a, lm) for a, lm in pts]
    monkeypatch.setattr(start, "TRUST", math.inf)
    assert starts() == fast
    monkeypatch.setattr(start, "SLACK", math.inf)
    assert starts() == fast


@pytest.mark.parametrize("name", ["site", "ill-conditioned", "unsorted"])
def test_the_tangents_bound_g(name):
    """G (from the compiled sums, in the form of the point) lies above its tangent in kappa and
    below its tangent in u = 1/kappa at every evaluated kappa, from either side of the root: the
    convexity and concavity that let a tangent decide a node's sign."""
    spec = SPECTRA[name]
    rng = np.random.default_rng(5)
    sums = compiled_sums(("S_1", "S_1c", "S_12"))
    eps = np.finfo(float).eps

    def g_and_d(k, alpha, lam):
        s1, s1c, s12 = (float(np.sum(v)) for v in sums(spec.omega, spec.bulk, spec.teacher, np.array([[k]])))
        g = lam / k + s1 - alpha if alpha < 0.5 else lam / k - s1c + 1.0 - alpha
        return g, lam / k + s12, lam / k + s1 + s1c + alpha + abs(1 - alpha)

    for alpha, lam in _points(3, 20):
        kappa = root.solve_point(spec, alpha, lam)["kappa"]
        for ke in kappa * np.exp(rng.uniform(-3, 3, 4)):
            ge, de, _ = g_and_d(ke, alpha, lam)
            for k in kappa * np.exp(rng.uniform(-3, 3, 6)):
                g, _, size = g_and_d(k, alpha, lam)
                slack = 1e3 * eps * (size + abs(ge) + de * (abs(k / ke - 1) + abs(ke / k - 1)))
                assert g >= ge - de * (k / ke - 1) - slack, (alpha, lam, ke, k)
                assert g <= ge + de * (ke / k - 1) + slack, (alpha, lam, ke, k)


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


@pytest.mark.parametrize("name", ["site", "limit 3", "ill-conditioned", "lanczos"])
def test_eg_agrees_with_an_independent_brent_root(name):
    """rm.solve's eg and kappa against :func:`brent_closed_form`: both exact to rounding amplified
    by the condition number of eg (9e3 at alpha = 1, lam = 1e-9), so within 32 eps of it."""
    spec = SPECTRA[name]
    eps = np.finfo(float).eps
    for alpha, lam in _points(11, 25):
        eg, k, cond = brent_closed_form(spec, alpha, lam)
        sp = rm.solve(spec, alpha=alpha, lam=lam)
        assert sp.converged and sp.residual <= root.RESIDUAL_TOL
        assert abs(sp.eg / eg - 1) <= 32 * eps * cond, (alpha, lam, sp.eg, eg, cond)
        assert abs(sp.kappa / k - 1) <= 32 * eps * cond, (alpha, lam, sp.kappa, k, cond)


def test_every_field_agrees_with_the_mpmath_solution():
    """Every field of one float64 point against the same point at 40 digits (the mpmath backend:
    no table, Newton from the lower bound, sums in mpmath): within 64 eps times the condition
    number of eg (the fields share kappa, whose error eg's condition amplifies)."""
    task = rm.GaussianPotts.random(L=30, shift=3.0, seed=4).masked_site(0)
    spec = task.spectrum
    eps = np.finfo(float).eps
    for alpha, lam in [(0.3, 1e-3), (0.5, 0.1), (1.0, 1e-5), (2.0, 0.1), (6.0, 2.0)]:
        assert root.solve_point(spec, alpha, lam) is not None
        lo, hi = rm.solve(task, alpha=alpha, lam=lam), rm.solve(task, alpha=alpha, lam=lam, precision=40)
        cond = brent_closed_form(spec, alpha, lam)[2]
        for key in ("eg", "train_loss", "m", "q", "V", "V_hat", "q_hat", "kappa", "estimation_error"):
            want = float(getattr(hi, key))
            assert abs(getattr(lo, key) - want) <= 64 * eps * cond * abs(want), (key, alpha, lam)


@pytest.mark.parametrize("alpha, lam, regime", [(0.5, 0.0, "minimum-norm"), (3.0, 0.0, "least squares"),
                                                (1.0, 0.0, "interpolation peak"),
                                                (3.0, 1e-300, "least squares"), (0.3, 1e20, "first order")])
def test_outside_the_covered_case_the_arrays_answer(alpha, lam, regime):
    """lam = 0, the exact least-squares and strong-ridge limits: solve_point declines (None), and
    rm.solve and solve_reduced on one point give the vectorised algorithm's numbers and message."""
    spec = SPECTRA["site"]
    assert root.solve_point(spec, alpha, lam) is None
    sp = rm.solve(spec, alpha=alpha, lam=lam)
    ref = _on_arrays(spec, [(alpha, lam), (2.0, 0.1)])[0]
    alone = root.solve_reduced(spec, np.array([alpha]), lam)
    assert regime in sp.message
    for key in KEYS:
        assert getattr(sp, key) == float(ref[key]) == float(alone[key][0]) or (
            math.isinf(getattr(sp, key)) and math.isinf(ref[key])), key


def test_a_python_float_is_still_checked():
    """rm.solve's check of a Python float refuses inf, NaN and alpha <= 0 before any solver."""
    spec = SPECTRA["site"]
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="alpha must be finite"):
            rm.solve(spec, alpha=bad, lam=0.1)
        with pytest.raises(ValueError, match="lam must be finite"):
            rm.solve(spec, alpha=1.0, lam=bad)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        rm.solve(spec, alpha=-1.0, lam=0.1)


def test_the_table_is_numpys_geomspace():
    """The start table of one point is np.geomspace(lo, hi, TABLE), node for node."""
    rng = np.random.default_rng(2)
    for lo, hi in [(1e-300, 1e300), (0.3, 0.3), (2.0, 1.0), (1.0, 1.0 + 1e-15)] + [
            tuple(10 ** rng.uniform(-200, 200, 2)) for _ in range(200)]:
        assert np.array_equal(start.table(lo, hi), np.geomspace(lo, hi, root.TABLE)), (lo, hi)


@pytest.mark.parametrize("name", ["site", "unsorted", "ill-conditioned"])
def test_the_ratios_of_one_kappa_are_those_of_the_compiled_sums(name):
    """Sums from ratios_at and backend.ratios (the sorted modes split by bisect on a cached list),
    below, inside and above the spectrum, equal those of compiled_sums."""
    spec = SPECTRA[name]
    w, b, c = spec.omega, spec.bulk, spec.teacher
    _, _, ascending, modes = backend.extremes(spec)
    assert (modes is None) == (not ascending)
    for k in (w.min() / 3, w.min(), float(np.median(w)), w.max(), 5 * w.max(), 1e-300, 1e300, *w[::17]):
        x, y = ratios_at(k, w, w.min(), w.max(), ascending=ascending)
        assert all(np.array_equal(u, v) for u, v in zip(backend.ratios(spec, float(k)), (x, y), strict=True))
        ref = compiled_sums(SUM_NAMES)(w, b, c, np.array([[k]]))
        for got, want in zip(sum_terms(SUM_NAMES)(w, b, c, x, y), ref, strict=True):
            assert np.array_equal(np.broadcast_to(got, w.shape), np.broadcast_to(want, (1, w.size))[0])


@pytest.mark.parametrize("name", ["site", "unsorted", "ill-conditioned", "lanczos"])
def test_backend_sums_at_a_few_kappas_are_those_of_the_block(name):
    """NUMPY.sums at up to backend.FEW kappas (one kappa at a time) equals, to the bit, the same
    kappas summed among many (the block of points x modes)."""
    spec = SPECTRA[name]
    w = spec.omega
    kappas = np.array([w.min() / 3, w.min(), float(np.median(w)), w.max(), 5 * w.max(), 1e-300, 1e300,
                       0.0, np.inf])
    block = NUMPY.sums(spec, SUM_NAMES, kappas)
    for i in range(kappas.size):
        few = NUMPY.sums(spec, SUM_NAMES, kappas[i:i + backend.FEW])
        for key in SUM_NAMES:
            np.testing.assert_array_equal(few[key], block[key][i:i + backend.FEW], err_msg=key)


def test_the_closed_forms_take_only_the_stable_sums():
    """The closed forms of reduce().stable are finite with every sum outside STABLE_SUMS NaN (the
    point path feeds them NaN there), and the compiled functions the point path calls by position
    take their arguments in the order it assumes."""
    fns = compiled()
    rng = np.random.default_rng(1)
    for _ in range(20):
        args = {n: (float(rng.uniform(0.1, 2.0)) if n in STABLE_SUMS else math.nan) for n in SUM_NAMES}
        for name, f in fns.stable.items():
            assert list(inspect.signature(f).parameters) == ["alpha", "noise", "V_hat", *SUM_NAMES], name
            assert math.isfinite(f(0.7, 0.1, 0.3, *args.values())), name
    assert list(inspect.signature(fns.newton).parameters) == ["kappa", "S_1c", "delta", "lam"]
    assert list(inspect.signature(fns.newton_direct).parameters) == ["kappa", "S_1", "alpha", "lam"]
    assert list(inspect.signature(fns.newton_scale).parameters) == ["kappa", "S_12", "lam"]
