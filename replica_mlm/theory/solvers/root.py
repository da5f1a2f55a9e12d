"""The reduced saddle point of :func:`.potentials.reduce`, solved for many alpha at once, in
float64 or at any precision: one algorithm over a :class:`.backend.Backend`.

Everything is vectorised over the points (alpha values) of one ridge strength lam; one float64
point alone is solved on numbers instead of arrays of one point (:func:`solve_point`, the same
operations, so the same bits):

1. ``kappa = lam / V_hat`` solves ``G(kappa) = lam/kappa - S_1c(kappa) + 1 - alpha = 0``
   (see docs/theory.md, section 'One scalar equation'). G is convex and decreasing; Newton's
   method started left of the root (:func:`.start.bounds`, then, in float64, the largest node of a
   geometric table of G at which G >= 0) climbs to it monotonically and quadratically.
2. Exact limits where they hold at the working precision (:func:`solve_reduced`): lam = 0 and
   alpha > 1 is least squares, kappa = 0, and so (float64) is lam / (alpha - 1) < 2^-800
   omega_min; omega_max / kappa < 2^-(bits + 7) (lam -> infinity, alpha -> 0) is first order
   in 1/kappa; lam = 0, alpha = 1 is the interpolation peak (eg = inf, exactly, without warnings).
3. All order parameters follow from spectral sums at kappa in the cancellation-free forms of
   ``reduce().stable``; every point's raw-equation residual is returned (:func:`.residual.raw_residual`).

The backend :data:`.backend.NUMPY` (float64 arrays) serves ``method="root"``;
:func:`.backend.mpmath_backend` (object arrays of ``mpmath.mpf``) serves ``precision=``
(:mod:`.precise`).
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solvers import start
from replica_mlm.theory.solvers.backend import NUMPY, Backend, extremes, pick, ratios
from replica_mlm.theory.solvers.residual import raw_residual_point, residuals
from replica_mlm.theory.symbolic.compiled import (
    STABLE_SUMS,
    SUM_NAMES,
    compiled,
    estimation_terms,
    sum_terms,
)

#: elements of a (points x modes) block evaluated at once
CHUNK = 1 << 16
#: nodes of the table that gives Newton's method its starting points (float64)
TABLE = NUMPY.table
#: G evaluations per point of the bisection that replaces the table for few points (:func:`_newton`)
BISECT = 8
#: order parameters and diagnostics returned for every point
FIELDS = ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "iterations",
          "residual", "test_loss", "estimation_error")
EPS = np.finfo(float).eps
#: kappa >= LARGE * omega_max: the first order in 1/kappa is exact in float64 (:func:`_large_kappa`)
LARGE = NUMPY.large
#: lam / (alpha - 1) <= TINY * omega_min (alpha > 1): kappa = 0 is exact (:func:`solve_reduced`)
TINY = NUMPY.tiny
#: largest raw-equation residual of a converged float64 point (256 eps; see :func:`.residual.raw_residual`)
RESIDUAL_TOL = NUMPY.residual_tol
#: codes of the ``regime`` array of :func:`solve_reduced`
NEWTON, FLAT, LARGE_KAPPA, PEAK = 0, 1, 2, 3


class NewtonFailure(RuntimeError):
    """Raised by :func:`solve_reduced` if Newton's method exhausts its iterations."""

    def __init__(self, alpha: np.ndarray, kappa: np.ndarray, step: np.ndarray, iterations: int):
        super().__init__("Newton's method did not converge")
        self.alpha, self.kappa, self.step, self.iterations = alpha, kappa, step, iterations


def spectral_sums(spec: Spectrum, names, kappa: np.ndarray) -> dict[str, np.ndarray]:
    """``{name: sum over modes of the summand at each kappa}`` for the sums of ``reduce()``."""
    return NUMPY.sums(spec, names, np.asarray(kappa, dtype=float), CHUNK)


def _newton(B: Backend, spec, alpha: np.ndarray, lam: np.ndarray, per_point: bool = False):
    """kappa > 0 with G(kappa) = 0 for each (alpha, lam) pair (lam > 0, or alpha < 1).

    G is evaluated as ``lam/kappa - S_1c + delta`` for alpha >= 1/2 and as
    ``lam/kappa + S_1 - alpha`` below (no ``1 - alpha`` to cancel against S_1c ~ 1); the Newton
    step is ``kappa G / (lam/kappa + S_12)``. It stops at a relative step of ``B.step_tol``
    (float64: 4 eps) or where |G| is at the rounding level of its terms (``B.g_tol``: 8 eps).
    At high precision, where G's terms are much larger than ``kappa |G'|``, a step below their
    rounding level cannot be resolved; the raw-equation residual then decides convergence.
    """
    fns = B.fns
    lo, hi = start.bounds(B, spec, alpha, lam)
    direct = alpha < 0.5
    kappa = lo.copy()
    if B.table:
        if per_point:  # each point its own table from its own bounds, as if solved alone
            nodes = np.geomspace(lo, hi, B.table, axis=-1)
        else:
            nodes = np.geomspace(lo.min(), hi.max(), B.table)
        if per_point or alpha.size * BISECT < B.table:  # G at ~log2(table) nodes per point
            count = start.count_bisect(B, spec, nodes, direct, alpha, lam)
        else:
            sums = B.sums(spec, ["S_1", "S_1c"], nodes, CHUNK)
            with np.errstate(over="ignore"):  # lam / kappa = inf at a node far left: G = +inf, right sign
                g_nodes = start.g_exact(B, direct[:, None], nodes[None, :], sums["S_1"][None, :],
                             sums["S_1c"][None, :], alpha[:, None], lam[:, None])
            count = np.sum(g_nodes >= 0, axis=1)  # G decreases: G >= 0 on the first `count` nodes
        rows = np.arange(alpha.size)
        last = np.maximum(count - 1, 0)
        first = nodes[rows, last] if per_point else nodes[last]
        kappa = np.maximum(np.where(count > 0, first, lo), lo)

    iterations = np.zeros(alpha.size, dtype=int)
    active = np.arange(alpha.size)
    step = np.zeros(alpha.size, dtype=B.dtype)
    for it in range(1, B.max_iter + 1):
        k, a, lm, dr = kappa[active], alpha[active], lam[active], direct[active]
        sums = B.sums(spec, ["S_1", "S_1c", "S_12"], k, CHUNK)
        g = start.g_exact(B, dr, k, sums["S_1"], sums["S_1c"], a, lm)
        s = k * (g / B.call(fns.newton_scale, kappa=k, S_12=sums["S_12"], lam=lm))
        new = k + s
        kappa[active] = np.where(new > 0, new, 0.5 * k)
        step[active] = s
        iterations[active] = it
        # size of the terms of G, hence its rounding level (1 - alpha is exact near alpha = 1)
        scale = np.maximum(lm / k, np.where(dr, sums["S_1"] + a, sums["S_1c"] + np.abs(1.0 - a)))
        done = (np.abs(s) <= B.step_tol * k) | (np.abs(g) <= B.g_tol * scale)
        active = active[~done]
        if active.size == 0:
            return kappa, iterations
    raise NewtonFailure(alpha[active], kappa[active], step[active], B.max_iter)


def _large_kappa(B: Backend, spec, alpha: np.ndarray, lam: np.ndarray) -> dict[str, np.ndarray]:
    """The saddle point where omega_max / kappa < 2^-(bits + 7): first order in 1/kappa, exact.

    With ``eps = 1/kappa``: ``S_1 = S_12 = B_1 eps``, ``S_2 = B_2 eps^2``, ``M = C_2 eps``,
    ``Q_T = C_3 eps^2``, ``R = rho``, each to relative O(omega_max eps); G = 0 gives
    ``eps = alpha / (lam + B_1)``, ``V_hat = alpha lam / (lam + B_1)`` and ``D = V_hat + S_12 =
    alpha``, so eg = rho + sigma^2 (the estimator vanishes: lam -> infinity or alpha -> 0).
    """
    b1 = spec.mean_omega
    b2 = B.moment(spec, "bulk", 2)
    c2, c3 = B.moment(spec, "teacher", 2), B.moment(spec, "teacher", 3)
    cii = spec.rho + spec.noise
    total = lam + b1
    share = lam / total  # V_hat / alpha
    v_hat = alpha * share
    with np.errstate(divide="ignore", over="ignore"):
        return dict(
            eg=B.full(alpha.size, cii), train_loss=cii * share * share, q_hat=cii * v_hat * share,
            m=c2 * alpha / total, q=(c3 * alpha + b2 * cii) / total * alpha / total,
            V=pick(lam > 0, lambda lm: b1 / lm, B.inf, lam), V_hat=v_hat, m_hat=v_hat,
            kappa=total / alpha,
        )


def solve_reduced(spec, alpha, lam, *, backend: Backend = NUMPY,
                  per_point: bool = False) -> dict[str, np.ndarray]:
    """Saddle point at every pair of ``alpha`` (> 0) and ``lam`` (>= 0), broadcast to one 1-d shape.

    Regimes, each exact at the working precision of ``backend`` where it is used:

    * ``omega_max / kappa < 2^-(bits + 7)`` (lam -> infinity, or alpha -> 0): :func:`_large_kappa`;
    * lam = 0 and alpha > 1, or (float64) ``lam / (alpha - 1) < 2^-800 omega_min`` (where kappa
      would be below ~1e-241 omega_min, or subnormal): kappa = 0, least squares; the relative
      change of every quantity from lam is below 2^-800 (the reported ``kappa`` is ``lam / V_hat``);
    * lam = 0, alpha = 1: the interpolation peak (eg = inf, exactly);
    * otherwise Newton's method on G(kappa) = 0 (:func:`_newton`).

    With ``per_point`` every point starts Newton's method from its own table (built from its own
    bounds, as when solved alone), so each point's numbers are exactly those of a call for that
    point alone; otherwise the points share one table over all their bounds (fewer spectral sums
    for many points; a start differs, so the last bit may).

    ``spec`` is a :class:`.Spectrum` for :data:`.backend.NUMPY` and a
    :class:`.precise.PreciseSpectrum` for the mpmath backend.

    Returns
    -------
    dict
        Arrays keyed by :data:`FIELDS` and ``regime`` (:data:`NEWTON`, :data:`FLAT` (kappa = 0,
        including lam = 0 at alpha > 1), :data:`LARGE_KAPPA`, :data:`PEAK`); ``iterations``
        counts Newton steps (0 where kappa is known exactly), ``residual`` is
        :func:`.residual.raw_residual` (where V = inf: the relative violation of the V_hat equation).
    """
    if backend.name != "numpy":
        return _solve_reduced(spec, alpha, lam, backend, per_point)
    if np.size(alpha) == 1 and np.size(lam) == 1:  # one point: on numbers, the same bits
        found = solve_point(spec, float(np.ravel(alpha)[0]), float(np.ravel(lam)[0]))
        if found is not None:
            return {key: np.array([value]) for key, value in found.items()}
    # float64: one error state for the whole solve (Backend.call relies on it): a division by zero
    # or an overflow is an inf or NaN that the regimes below overwrite or the residual refuses
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _solve_reduced(spec, alpha, lam, backend, per_point)


def _solve_reduced(spec, alpha, lam, backend: Backend, per_point: bool) -> dict[str, np.ndarray]:
    """:func:`solve_reduced` inside its error state: the regimes, Newton's kappa where no exact
    limit holds, the closed forms at kappa, then the residuals and the interpolation peak."""
    B = backend
    fns = B.fns
    alpha, lam = (B.array(x) for x in np.broadcast_arrays(np.asarray(alpha, dtype=B.dtype),
                                                          np.asarray(lam, dtype=B.dtype)))
    n = alpha.size
    delta = 1.0 - alpha
    with np.errstate(over="ignore"):
        large = (lam + spec.mean_omega) >= B.large * spec.omega.max() * alpha
        flat = ~large & (alpha > 1.0) & (lam <= B.tiny * spec.omega.min() * (alpha - 1.0))
    peak = (lam == 0.0) & (alpha == 1.0)
    free = ~(peak | flat | large)
    kappa = B.full(n, 0)
    iterations = np.zeros(n, dtype=int)
    if free.any():
        kappa[free], iterations[free] = _newton(B, spec, alpha[free], lam[free], per_point)

    sums = B.sums(spec, SUM_NAMES, kappa, CHUNK)
    # V_hat: lam / kappa for lam > 0 (exact given kappa); S_1c - delta = alpha - 1 at kappa = 0;
    # 0 at lam = 0, alpha < 1 (minimum norm)
    pos = free & (lam > 0)
    v_hat = pick(~pos & (alpha > 1.0), lambda s, d: B.call(fns.v_hat_of_kappa, S_1c=s, delta=d),
                  0.0, sums["S_1c"], delta)
    v_hat = pick(pos, lambda lm, k: lm / k, v_hat, lam, kappa)
    # inf where a true value overflows (V ~ 1/lam); NaN only on the points overwritten below
    out = {name: np.array(np.broadcast_to(B.call(f, alpha=alpha, noise=spec.noise, V_hat=v_hat, **sums),
                                          (n,)), dtype=B.dtype)
           for name, f in fns.stable.items()}
    # V = S_1 / V_hat = S_1 kappa / lam (lam may be subnormal: divide by it last)
    out["V"] = pick(pos, lambda s, k, lm: s * k / lm, out["V"], sums["S_1"], kappa, lam)
    out["kappa"] = pick(flat, lambda lm, v: lm / v, kappa, lam, v_hat)
    out["V_hat"] = out["m_hat"] = v_hat  # m_hat = V_hat (reduce, step 1)
    out["V"] = np.where(v_hat == 0.0, B.inf, out["V"])
    out["iterations"] = iterations
    out["regime"] = np.select([peak, large, flat], [PEAK, LARGE_KAPPA, FLAT], NEWTON)
    if large.any():
        for name, value in _large_kappa(B, spec, alpha[large], lam[large]).items():
            out[name][large] = value

    out["residual"] = residuals(B, spec, alpha, lam, out, sums, free, large, peak)

    out["test_loss"] = out["eg"] / 2  # the square loss is (y - z)^2 / 2; eg has no factor 1/2
    out["estimation_error"] = estimation_error(spec, alpha, out["kappa"], out["eg"], backend=B)

    if peak.any():  # alpha = 1, lam = 0: the exact limit
        _peak_limit(B, spec, out, peak)
    return out


def _peak_limit(B: Backend, spec, out: dict, peak) -> None:
    """Write the exact limit at the interpolation peak (alpha = 1, lam = 0) into ``out`` where
    ``peak``: eg = inf, m = rho, the hats 0."""
    for name, value in dict(eg=B.inf, train_loss=0.0, q=B.inf, V=B.inf, m_hat=0.0,
                            q_hat=0.0, V_hat=0.0, kappa=0.0, residual=0.0, test_loss=B.inf,
                            estimation_error=B.inf).items():
        out[name][peak] = value
    out["m"][peak] = spec.rho


def converged(out: dict, *, backend: Backend = NUMPY) -> np.ndarray:
    """The converged rule, per point of :func:`solve_reduced`'s ``out``: the raw-equation residual
    is at most ``backend.residual_tol`` (float64: :data:`RESIDUAL_TOL`; mpmath at ``dps`` digits:
    ``10^-dps``) and none of the :data:`FIELDS` is NaN."""
    ok = np.asarray(out["residual"] <= backend.residual_tol, dtype=bool)
    for name in FIELDS:
        ok &= ~backend.isnan(out[name])
    return ok


def estimation_error(spec: Spectrum, alpha: np.ndarray, kappa: np.ndarray, eg: np.ndarray, *,
                     backend: Backend = NUMPY) -> np.ndarray:
    """E |w_hat - w*|^2 at each point from kappa and eg (the reduced summand of
    :func:`.potentials.estimation`, finite at lam = 0); inf where eg is."""
    out = backend.full(np.size(alpha), backend.inf)
    finite = backend.isfinite(eg)
    if backend.name == "numpy":
        idx = np.flatnonzero(finite)
        if idx.size:
            out[idx] = backend.estimation_sums(spec, np.asarray(kappa)[idx], np.asarray(eg)[idx],
                                               np.asarray(alpha)[idx])
        return out
    for i in np.flatnonzero(finite):
        out[i] = backend.estimation_sum(spec, kappa[i], eg[i], alpha[i])
    return out


# --- one point on numbers -------------------------------------------------------------------
def solve_point(spec: Spectrum, alpha: float, lam: float) -> dict | None:
    """:func:`solve_reduced` at one float64 point in the Newton regime with lam > 0, on numbers
    instead of arrays of one point: the same bounds, start, Newton steps, spectral sums, closed
    forms, residual and estimation error, in the same floating-point operations, so the same bits
    (numbers, not arrays; ``regime`` :data:`NEWTON`). What it saves is the bookkeeping of arrays
    of one point (masks, broadcasting, both branches of every ``np.where``) and most sums of the
    start's bisection (:func:`.start.point_start`); the closed forms get only the sums they use
    (:data:`.compiled.STABLE_SUMS`).

    Returns None outside that case (lam = 0, the strong-ridge and least-squares limits, hats below
    2^-900 that need rescaling for the residual, a non-finite number, a residual above
    :data:`RESIDUAL_TOL`): :func:`solve_reduced` answers there (and raises where a point fails).
    ``alpha`` > 0 and ``lam`` >= 0 finite are checked by the caller.
    """
    found = extremes(spec)
    low, top = found[:2]
    if not lam > 0 or (lam + spec.mean_omega) >= LARGE * top * alpha or (
            alpha > 1.0 and lam <= TINY * low * (alpha - 1.0)):
        return None  # lam = 0, or the strong-ridge or least-squares limit (see solve_reduced)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        try:
            out = _point_solution(spec, alpha, lam, found)
        except ZeroDivisionError:  # a Python float divided by 0: left to the vectorised solver
            return None
    if out is None or not (out["residual"] <= RESIDUAL_TOL and math.isfinite(out["estimation_error"])):
        return None
    return out


def _point_solution(spec, alpha: float, lam: float, found: tuple) -> dict | None:
    """:func:`solve_point` past its regime checks (``found``: :func:`.backend.extremes` of ``spec``):
    Newton's kappa, the closed forms at it, the residual and the estimation error; None where a
    number is not finite."""
    solved = _point_newton(spec, alpha, lam, found)
    if solved is None:
        return None
    kappa, iterations, (k_last, x, y) = solved
    if lam < kappa * 2.0**-890 and np.log2(lam) - np.log2(kappa) < -900:
        return None  # V_hat below 2^-900: the residual needs the rescaled solution
    w, b, c = spec.omega, spec.bulk, spec.teacher
    if kappa != k_last:
        x, y = ratios(spec, kappa, found)
    # only the sums the closed forms use (the same summands, row by row as np.sum); the others
    # are NaN: a closed form that used one would be NaN, and the vectorised solver would answer
    sums = dict.fromkeys(SUM_NAMES, math.nan)
    sums.update(zip(STABLE_SUMS, np.add.reduce(np.array(sum_terms(STABLE_SUMS)(w, b, c, x, y)),
                                               axis=1).tolist(), strict=True))
    v_hat, args = lam / kappa, tuple(sums.values())  # the closed forms: (alpha, noise, V_hat, *sums)
    out = {name: f(alpha, spec.noise, v_hat, *args) for name, f in compiled().stable.items()}
    out.update(V=sums["S_1"] * kappa / lam, kappa=kappa, V_hat=v_hat, m_hat=v_hat,
               iterations=iterations, regime=NEWTON)
    if not (v_hat != 0.0 and all(math.isfinite(out[k]) for k in
                                 ("eg", "train_loss", "m", "q", "V", "q_hat", "V_hat", "kappa"))):
        return None
    out["residual"] = raw_residual_point(spec, alpha, lam, out)
    out["test_loss"] = out["eg"] / 2
    est = estimation_terms()(w, b, c, x, y, out["eg"], alpha)
    out["estimation_error"] = np.add.reduce(est if getattr(est, "shape", None) == w.shape
                                            else np.broadcast_to(est, w.shape))
    return out


def _point_newton(spec, alpha: float, lam: float, found: tuple):
    """(kappa, iterations, (kappa of the last step, its ratios x, y)) as :func:`_newton` for one
    point, on Python floats (the same IEEE operations as numpy's), or None where it would raise
    (``found``: :func:`.backend.extremes` of ``spec``)."""
    fns = compiled()
    newton, newton_direct, newton_scale = fns.newton, fns.newton_direct, fns.newton_scale
    direct = alpha < 0.5
    lo, hi = start.point_bounds(spec, alpha, lam, found[1])
    k = float(start.point_start(spec, lo, hi, direct, alpha, lam))
    terms = sum_terms(("S_1", "S_1c", "S_12"))
    w, b, c = spec.omega, spec.bulk, spec.teacher
    delta, step_tol, g_tol = 1.0 - alpha, float(NUMPY.step_tol), float(NUMPY.g_tol)
    for it in range(1, NUMPY.max_iter + 1):
        x, y = ratios(spec, k, found)
        t1, t1c, t12 = terms(w, b, c, x, y)
        if direct:
            s1 = float(np.add.reduce(t1))
            g, size = newton_direct(k, s1, alpha, lam), s1 + alpha  # (kappa, S_1, alpha, lam)
        else:
            s1c = float(np.add.reduce(t1c))
            g, size = newton(k, s1c, delta, lam), s1c + abs(delta)  # (kappa, S_1c, delta, lam)
        s = k * (g / newton_scale(k, float(np.add.reduce(t12)), lam))  # (kappa, S_12, lam)
        if math.isnan(g) or math.isnan(s):
            return None  # the vectorised solver would not stop: it raises
        big = lam / k
        done = (abs(s) <= step_tol * k) or (abs(g) <= g_tol * (big if big >= size else size))
        last, k = (k, x, y), (k + s if k + s > 0 else 0.5 * k)
        if done:  # with the ratios of the last step, which the solution reuses if kappa is unchanged
            return k, it, last
    return None
