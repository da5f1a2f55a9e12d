"""The start of the scalar point path (theory/solvers/one_point.py, issue 29): the tangents of G
that decide most nodes of the start's bisection are true bounds, the start is still node for node
that of the vectorised solver's bisection, and the cheaper pieces (sorted ratios split by a cached
list, the closed forms fed only the sums they use) give the same numbers."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from test_one_point import brent_closed_form

import replica_mlm as rm
from replica_mlm.theory.solvers import backend, one_point, root
from replica_mlm.theory.solvers.backend import NUMPY
from replica_mlm.theory.symbolic.compiled import (
    STABLE_SUMS,
    SUM_NAMES,
    compiled,
    compiled_sums,
    ratios_at,
)


def _spectra() -> dict:
    rng = np.random.default_rng(11)
    w = np.geomspace(1e-8, 1e4, 300)  # ill-conditioned: 12 decades
    return {
        "site": rm.GaussianPotts.random(L=60, shift=3.0, seed=1).masked_site(0).spectrum,
        "limit 3": rm.GaussianPotts.limit(3.0).spectrum,
        "ill-conditioned": rm.Spectrum(omega=w, bulk=np.full(300, 1 / 300), teacher=rng.uniform(0, 1, 300),
                                       noise=0.1),
        "unsorted": rm.Spectrum(omega=rng.permutation(np.linspace(0.2, 4.0, 90)), bulk=np.full(90, 1 / 90),
                                teacher=rng.uniform(0, 1, 90), noise=0.2),
        "lanczos": rm.Spectrum.from_site(rm.GaussianPotts.random(L=40, shift=3.0, seed=3).masked_site(0),
                                         method="lanczos"),
    }


SPECTRA = _spectra()


def _points(seed: int, n: int = 60) -> list[tuple[float, float]]:
    """alpha log-uniform in [0.05, 10], lam log-uniform in [1e-6, 10], and the edges of both."""
    rng = np.random.default_rng(seed)
    alphas = np.exp(rng.uniform(math.log(0.05), math.log(10.0), n))
    lams = 10 ** rng.uniform(-6, 1, n)
    edges = [(0.05, 1e-6), (10.0, 1e-6), (0.05, 10.0), (10.0, 10.0), (1.0, 1e-6), (0.5, 1e-3),
             (0.49999, 1e-3), (1.0 + 1e-9, 1e-6), (2.0, 0.1), (1.0, 1e-4)]
    return [(float(a), float(lm)) for a, lm in zip(alphas, lams, strict=True)] + edges


def _reference_start(spec, alpha: float, lam: float) -> float:
    """The start of root._newton for this point alone: the bisection of root._count_bisect over
    np.geomspace(lo, hi, TABLE), every node's G from the compiled sums."""
    lo, hi = root._bounds(NUMPY, spec, np.array([alpha]), np.array([lam]))
    nodes = np.geomspace(lo[0], hi[0], root.TABLE)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        count = int(root._count_bisect(NUMPY, spec, nodes, np.array([alpha < 0.5]), np.array([alpha]),
                                       np.array([lam]))[0])
    return max(nodes[count - 1] if count > 0 else lo[0], lo[0])


@pytest.mark.parametrize("name", list(SPECTRA))
def test_the_start_is_the_vectorised_solvers_bisection(name):
    """The start found with tangents, cheap signs and exact fallbacks is the node of the vectorised
    solver's bisection, to the bit, on 70 points per spectrum (12 decades, unsorted, Lanczos)."""
    spec = SPECTRA[name]
    top = backend.extremes(spec)[1]
    for alpha, lam in _points(sum(map(ord, name))):
        lo, hi = one_point._bounds(spec, alpha, lam, top)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            got = one_point._start(spec, lo, hi, alpha < 0.5, alpha, lam)
        assert got == _reference_start(spec, alpha, lam), (name, alpha, lam)


@pytest.mark.parametrize("name", ["site", "ill-conditioned", "unsorted"])
def test_the_tangents_bound_g(name):
    """G (from the compiled sums, in the form of the point) lies above its tangent in kappa and
    below its tangent in u = 1/kappa at every evaluated node, from either side of the root: the
    convexity and concavity that let a tangent decide a node's sign."""
    spec = SPECTRA[name]
    rng = np.random.default_rng(5)
    sums = compiled_sums(("S_1", "S_1c", "S_12"))
    eps = np.finfo(float).eps

    def g_and_d(k, alpha, lam):
        s1, s1c, s12 = (float(np.sum(v)) for v in sums(spec.omega, spec.bulk, spec.teacher, np.array([[k]])))
        g = lam / k + s1 - alpha if alpha < 0.5 else lam / k - s1c + 1.0 - alpha
        return g, lam / k + s12, lam / k + s1 + s1c + alpha + abs(1 - alpha)

    checked = 0
    for alpha, lam in _points(3, 20):
        kappa = root.solve_reduced(spec, np.array([alpha]), lam)["kappa"][0]
        for ke in kappa * np.exp(rng.uniform(-3, 3, 4)):
            ge, de, _ = g_and_d(ke, alpha, lam)
            for k in kappa * np.exp(rng.uniform(-3, 3, 6)):
                g, _, size = g_and_d(k, alpha, lam)
                slack = 1e3 * eps * (size + abs(ge) + de * (abs(k / ke - 1) + abs(ke / k - 1)))
                assert g >= ge - de * (k / ke - 1) - slack, (alpha, lam, ke, k)
                assert g <= ge + de * (ke / k - 1) + slack, (alpha, lam, ke, k)
                checked += 1
    assert checked == 20 * 4 * 6 + 10 * 4 * 6


def test_a_tangent_decides_only_past_the_rounding(monkeypatch):
    """With TRUST = inf no tangent decides (every sign is evaluated): the same starts."""
    spec = SPECTRA["ill-conditioned"]
    top = backend.extremes(spec)[1]
    pts = _points(9, 25)

    def starts():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [one_point._start(spec, *one_point._bounds(spec, a, lm, top), a < 0.5, a, lm)
                    for a, lm in pts]

    fast = starts()
    monkeypatch.setattr(one_point, "TRUST", math.inf)
    assert starts() == fast


@pytest.mark.parametrize("name", ["site", "unsorted", "ill-conditioned"])
def test_a_split_at_hand_is_the_searched_split(name):
    """ratios_at with the split found by the caller (bisect on a cached list) returns the numbers
    of np.searchsorted's split, for kappa across and at the modes."""
    spec = SPECTRA[name]
    w = spec.omega
    low, top, ascending, modes = backend.extremes(spec)
    for k in [*np.quantile(w, np.linspace(0, 1, 23)), *w[::17], low, top]:
        want = ratios_at(float(k), w, low, top, ascending=ascending)
        got = backend.ratios(spec, float(k))
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), k
    assert (modes is None) == (not ascending)


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


@pytest.mark.parametrize("name", ["limit 3", "ill-conditioned", "lanczos"])
def test_eg_agrees_with_a_brent_root_on_every_spectrum(name):
    """rm.solve against the closed form of benchmarks/bench_overhead.py (test_one_point's
    brent_closed_form): within 32 eps times the condition number of eg."""
    spec = SPECTRA[name]
    eps = np.finfo(float).eps
    for alpha, lam in _points(17, 25):
        eg, k, cond = brent_closed_form(spec, alpha, lam)
        sp = rm.solve(spec, alpha=alpha, lam=lam)
        assert sp.converged and sp.residual <= root.RESIDUAL_TOL
        assert abs(sp.eg / eg - 1) <= 32 * eps * cond, (alpha, lam, sp.eg, eg, cond)
        assert abs(sp.kappa / k - 1) <= 32 * eps * cond, (alpha, lam, sp.kappa, k, cond)
