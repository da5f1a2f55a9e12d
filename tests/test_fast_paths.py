"""Issue 29: the fast paths give the numbers of the plain ones, and the Lanczos spectrum those of
the full eigendecomposition."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

import replica_mlm as rm
from replica_mlm.tasks import lanczos
from replica_mlm.theory.solvers import root
from replica_mlm.theory.studies import brent, phase

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site():
    return rm.GaussianPotts.random(L=300, shift=3.0, seed=0).masked_site(0)


# ------------------------------------------------------------------ Spectrum.from_site
def test_lanczos_spectrum_gives_the_eigh_numbers(site):
    """eg and the estimation error of the Lanczos spectrum equal those of the full
    eigendecomposition to 1e-10 (measured: ~1e-15) over curves at three ridges and lam = 0."""
    full = rm.Spectrum.from_site(site, method="eigh")
    assert full is site.spectrum
    lan = rm.Spectrum.from_site(site, method="lanczos")
    steps = lan.omega.size - site.p
    assert 5 <= steps < 60  # condition number ~5: the rule settles in a few tens of steps
    assert lan.rho == pytest.approx(site.rho, rel=1e-13)
    alphas = np.linspace(0.05, 4.0, 40)
    alphas = alphas[np.abs(alphas - 1.0) > 1e-3]
    for lam in (0.0, 1e-4, 1e-2, 1.0):
        a = rm.learning_curve(lan, alpha=alphas, lam=lam)
        b = rm.learning_curve(full, alpha=alphas, lam=lam)
        assert a.converged and b.converged
        np.testing.assert_allclose(a.eg, b.eg, rtol=1e-10, atol=0)
        np.testing.assert_allclose(a.estimation_error, b.estimation_error, rtol=1e-10, atol=0)


def test_gauss_rule_is_exact_for_low_moments(site):
    """r Lanczos steps give the Gauss rule of the teacher's measure: exact for w*^T Sigma^k w*,
    k < 2r, computed here by repeated matrix-vector products."""
    r = 3
    spec = rm.Spectrum.from_site(site, method="lanczos", rank=r)
    nodes, weights = spec.omega[site.p:], spec.teacher[site.p:]
    assert nodes.size == r and np.all(spec.bulk[site.p:] == 0) and np.all(spec.teacher[:site.p] == 0)
    v = np.asarray(site.teacher, dtype=float)
    for k in range(2 * r):
        assert np.dot(weights, nodes**k) == pytest.approx(float(site.teacher @ v), rel=1e-12)
        v = site.covariance @ v
    exact = float(site.teacher @ np.linalg.solve(site.covariance, site.teacher))
    assert np.dot(weights, 1.0 / nodes) != pytest.approx(exact, rel=1e-10)  # 3 nodes: not yet 1/omega


def test_gauss_rule_stops_when_the_krylov_space_is_exhausted():
    """A teacher in a 2-d invariant subspace: two steps, exact nodes (the two eigenvalues)."""
    cov = np.diag([0.5, 1.0, 2.0, 3.0])
    rule = lanczos.gauss_rule(cov, np.array([1.0, 0.0, 2.0, 0.0]))
    assert rule.exhausted and rule.steps == 2
    np.testing.assert_allclose(rule.nodes, [0.5, 2.0], rtol=1e-14)
    np.testing.assert_allclose(rule.weights, [1.0, 4.0], rtol=1e-14)


@pytest.mark.parametrize("kwargs, error", [
    (dict(method="qr"), ValueError), (dict(method=3), TypeError), (dict(method="eigh", rank=3), ValueError),
    (dict(method="lanczos", rank=0), ValueError), (dict(method="lanczos", rank=2.5), TypeError),
])
def test_from_site_refuses_bad_options(site, kwargs, error):
    with pytest.raises(error, match=r"method|rank"):
        rm.Spectrum.from_site(site, **kwargs)


def test_from_site_names_what_a_site_lacks():
    with pytest.raises(TypeError, match="covariance, teacher and noise"):
        rm.Spectrum.from_site(rm.GaussianPotts.random(L=4, seed=0), method="lanczos")


# ------------------------------------------------------------------ the reduced solver
def test_bisection_start_equals_the_table(site):
    """One point alone (bisection over the start table) and the same point 16 times (the full
    table: 16 x 8 >= 128 nodes) give the same bits; so does per_point=True on mixed points."""
    spec = site.spectrum
    rng = np.random.default_rng(3)
    alphas = rng.uniform(0.05, 4.0, 12)
    lams = 10 ** rng.uniform(-10, 2, 12)
    single = [root.solve_reduced(spec, np.array([a]), lm) for a, lm in zip(alphas, lams, strict=True)]
    for (a, lm), one in zip(zip(alphas, lams, strict=True), single, strict=True):
        many = root.solve_reduced(spec, np.full(root.TABLE // root.BISECT, a), lm)
        for key in ("kappa", "eg", "V", "iterations", "residual"):
            assert np.all(many[key] == one[key][0]), key
    together = root.solve_reduced(spec, alphas, lams, per_point=True)
    for i, one in enumerate(single):
        for key in root.FIELDS:
            assert together[key][i] == one[key][0], key


def _scipy_rosen(x):
    return (1 - x) ** 2 + 100 * (x * x - 0.5) ** 2 + math.sin(5 * x)


def test_lockstep_brent_is_scipy_step_for_step():
    """minimise_many / roots_many return scipy's minimisers, evaluation counts and roots exactly."""
    bounds = [(-2.0, 2.0), (0.0, 1.5), (-1.0, 0.3), (0.5, 0.50001)]
    got = brent.minimise_many(lambda idx, x: np.array([_scipy_rosen(v) for v in x]), bounds,
                              xatol=1e-9, maxiter=500)
    for (lo, hi), m in zip(bounds, got, strict=True):
        ref = optimize.minimize_scalar(_scipy_rosen, bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-9, "maxiter": 500})
        assert (m.x, m.fun, m.nfev, m.success) == (ref.x, ref.fun, ref.nfev, ref.success)
    shifts = np.array([0.1, 0.7, 1.3, 2.9])
    roots = brent.roots_many(lambda idx, x: np.cos(x) - shifts[idx] / 3, [(0.0, 3.0)] * 4,
                             xtol=1e-14, rtol=1e-13)
    for s, r in zip(shifts, roots, strict=True):
        assert r == optimize.brentq(lambda x, s=s: math.cos(x) - s / 3, 0.0, 3.0, xtol=1e-14, rtol=1e-13)


def test_vectorised_phase_lines_equal_the_scalar_searches():
    """The optimal-lam and peak lines of a fast-path diagram equal one scipy search per alpha /
    per lam row with single-point solves, to the bit."""
    task = rm.GaussianPotts.limit(3.0)
    alphas, lams = np.linspace(0.1, 3.0, 15), np.geomspace(1e-4, 1.0, 8)
    pd = rm.phase_diagram(task, alpha=alphas, lam=lams)
    spec = task.spectrum
    for i, lm in enumerate(lams):
        assert phase.peak_alpha(task, spec, alphas, float(lm), pd.deg_dalpha[i]) == pd.peak_alpha[i] or (
            np.isnan(pd.peak_alpha[i]) and np.isnan(phase.peak_alpha(task, spec, alphas, float(lm),
                                                                     pd.deg_dalpha[i])))
    logs = np.linspace(math.log(phase.LAM_BOUNDS[0]), math.log(phase.LAM_BOUNDS[1]), 41)
    for a, lam_opt in zip(alphas, pd.optimal_lam, strict=True):
        scan = [rm.solve(task, alpha=float(a), lam=float(math.exp(x))).eg for x in logs]
        j = int(np.argmin(scan))
        if j in (0, logs.size - 1):
            continue
        res = optimize.minimize_scalar(lambda x, a=a: rm.solve(task, alpha=float(a), lam=math.exp(x)).eg,
                                       bounds=(logs[j - 1], logs[j + 1]), method="bounded",
                                       options={"xatol": 1e-9, "maxiter": 500})
        assert math.exp(res.x) == lam_opt


# ------------------------------------------------------------------ warm cache: no sympy
GENERAL = [("logistic", "sign"), ("hinge", "sign"), ("absolute", "gaussian"), ("huber", "gaussian"),
           ("logistic", "logit"), ("square", "sign")]
CHILD = """
import json, sys, replica_mlm as rm
lim = rm.GaussianPotts.limit(3.0)
out = [rm.solve(lim, alpha=2.0, lam=0.1).eg,
       rm.solve(rm.GaussianPotts.random(L=20, seed=0).masked_site(0), alpha=0.5, lam=1e-3).eg]
for loss, channel in PAIRS:
    r = rm.solve(lim, alpha=1.5, lam=0.05, loss=loss, channel=channel)
    out += [r.eg, r.train_loss, r.test_loss, r.m, r.q, r.V]
print(json.dumps({"sympy": "sympy" in sys.modules, "values": out}))
"""


def _child() -> dict:
    import json
    code = f"PAIRS = {GENERAL!r}\n" + CHILD
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ), check=True, timeout=300)
    return json.loads(out.stdout)


def test_a_fresh_process_with_a_warm_cache_imports_no_sympy():
    """With a warm cache, import + first solves (the square loss on the reduced path; the built-in
    losses and channels on the general engine) import no sympy, and give the numbers of a
    process that derives everything with sympy (the cache is filled by the first child)."""
    first = _child()  # fills the cache where it lacks the built-in losses and channels
    second = _child()
    assert second["sympy"] is False
    assert second["values"] == first["values"]
    lim = rm.GaussianPotts.limit(3.0)
    for (loss, channel), i in zip(GENERAL, range(2, len(first["values"]), 6), strict=True):
        r = rm.solve(lim, alpha=1.5, lam=0.05, loss=loss, channel=channel)
        assert [r.eg, r.train_loss, r.test_loss, r.m, r.q, r.V] == first["values"][i:i + 6]


#: what the square loss's fast path on a Gaussian site has no use for (scipy.stats alone took 0.4 s
#: of a fresh process's first curve when the site's validity check imported it at module level)
UNUSED_ON_THE_FAST_PATH = ("scipy.stats", "scipy.optimize", "scipy.integrate", "scipy.interpolate",
                           "scipy.sparse", "matplotlib", "pandas", "sklearn", "torch")


def test_a_fresh_process_s_first_curve_imports_nothing_the_fast_path_does_not_use():
    """A fresh process that solves a point and draws a curve of a Gaussian site with the square loss
    loads none of :data:`UNUSED_ON_THE_FAST_PATH` (the planner's validity step and the tasks it
    reaches import the heavy parts of scipy only where they are used)."""
    import json
    code = ("import json, sys\nimport replica_mlm as rm\n"
            "site = rm.GaussianPotts.random(L=31, shift=3.0, seed=0).masked_site(0)\n"
            "rm.solve(site, alpha=1.5, lam=0.1)\n"
            "rm.learning_curve(site, alpha=[0.5, 1.0, 2.0], lam=0.1)\n"
            f"print(json.dumps(sorted(m for m in {UNUSED_ON_THE_FAST_PATH!r} if m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ), check=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_corrupt_loss_entry_is_derived_afresh(tmp_path, monkeypatch):
    """An entry of the built-in losses that fails to load is derived again with sympy, with the
    same functions."""
    from replica_mlm.theory.sides import losses
    from replica_mlm.theory.symbolic import compiled_cache
    monkeypatch.setenv(compiled_cache.ENV, str(tmp_path))
    monkeypatch.setattr(compiled_cache, "_memory", {})
    compiled_cache.store("numeric", {"loss:logistic": {"value": "import os", "d1": "", "d2": "",
                                                       "kinks": [], "d12": ""}})
    fresh = losses.Logistic()
    yv, zv = np.array([1.0, -1.0, 1.0]), np.array([0.3, 2.0, -40.0])
    np.testing.assert_array_equal(fresh.value(yv, zv), np.logaddexp(0.0, -yv * zv))
    assert "def _lambdifygenerated" in compiled_cache.fetch("numeric", dict)["loss:logistic"]["value"]


def test_a_cold_cache_says_so_once_on_a_terminal(monkeypatch):
    """Deriving with sympy is announced once per process on a terminal, never elsewhere."""
    import io as stdio

    from replica_mlm.theory.symbolic import compiled_cache

    class Terminal(stdio.StringIO):
        def isatty(self):
            return True

    for stream, lines in ((Terminal(), 1), (stdio.StringIO(), 0)):
        monkeypatch.setattr(compiled_cache, "_noticed", False)
        monkeypatch.setattr(sys, "stderr", stream)
        compiled_cache.notice("the saddle-point equations (numpy)")
        compiled_cache.notice("the numerical functions of loss:logistic")
        assert stream.getvalue().count("deriving") == lines
        if lines:
            assert stream.getvalue().startswith("replica_mlm: deriving the saddle-point equations")
