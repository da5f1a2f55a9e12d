"""The reduced saddle point of :func:`.potentials.reduce`, solved for many alpha at once, in
float64 or at any precision: one algorithm over a :class:`.backend.Backend`.

Everything is vectorised over the points (alpha values) of one ridge strength lam:

1. ``kappa = lam / V_hat`` solves ``G(kappa) = lam/kappa - S_1c(kappa) + 1 - alpha = 0``
   (see docs/theory.md, section 'One scalar equation'). G is convex and decreasing; Newton's
   method started left of the root (:func:`_bounds`, then, in float64, the largest node of a
   geometric table of G at which G >= 0) climbs to it monotonically and quadratically.
2. Exact limits where they hold at the working precision (:func:`solve_reduced`): lam = 0 and
   alpha > 1 is least squares, kappa = 0, and so (float64) is lam / (alpha - 1) < 2^-800
   omega_min; omega_max / kappa < 2^-(bits + 7) (lam -> infinity, alpha -> 0) is first order
   in 1/kappa; lam = 0, alpha = 1 is the interpolation peak (eg = inf, exactly, without warnings).
3. All order parameters follow from spectral sums at kappa in the cancellation-free forms of
   ``reduce().stable``; every point's raw-equation residual is returned (:func:`raw_residual`).

The backend :data:`.backend.NUMPY` (float64 arrays) serves ``method="root"``;
:func:`.backend.mpmath_backend` (object arrays of ``mpmath.mpf``) serves ``precision=``
(:mod:`.precise`).
"""

from __future__ import annotations

import weakref

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solvers.backend import NUMPY, Backend
from replica_mlm.theory.solvers.point_residual import raw_residual_point
from replica_mlm.theory.symbolic.compiled import SUM_NAMES

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
#: largest raw-equation residual of a converged float64 point (256 eps; see :func:`raw_residual`)
RESIDUAL_TOL = NUMPY.residual_tol
#: relative residuals are taken against max(|a|, |b|, FLOOR), FLOOR = 2^-1022 the smallest
#: normal number: a subnormal result is exact only to ~2^-1074 = eps FLOOR absolute
FLOOR = np.finfo(float).tiny
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


def _pick(cond: np.ndarray, fn, other, *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)`` where ``cond``, ``other`` elsewhere, with ``fn`` evaluated only where
    ``cond`` holds (an mpmath division by zero raises where numpy would return inf)."""
    out = np.array(np.broadcast_to(other, cond.shape), dtype=arrays[0].dtype)
    if cond.any():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out[cond] = fn(*(a[cond] for a in arrays))
    return out


def _bounds(B: Backend, spec, alpha: np.ndarray, lam: np.ndarray):
    """A start ``lo`` with G(lo) >= 0 (left of the root) and ``hi`` with G(hi) <= 0, per point.

    ``G = lam/kappa + S_1 - alpha >= lam/kappa - alpha`` gives ``lo >= lam/alpha``; since
    ``S_1c <= kappa B_{-1}`` (``B_{-1} = sum b / omega``), ``G >= lam/kappa - kappa B_{-1} + delta``,
    whose positive root (written without cancellation for either sign of delta) is a second lower
    bound, sharp at the peak (kappa ~ sqrt(lam / B_{-1})); a third one (sharp at small alpha)
    comes from ``S_1 >= B_1 / (kappa + omega_max)``. ``S_1 <= B_1 / kappa`` gives ``hi``.
    Where a bound is not finite (float64 overflow, or 0/0 at lam = 0) it is dropped.
    """
    inv_mean = B.moment(spec, "bulk", -1)
    top = spec.omega.max()
    delta = 1.0 - alpha
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = B.hypot(delta, 2.0 * B.sqrt(inv_mean * lam))
        kq = _pick(delta > 0, lambda d, s: (d + s) / (2.0 * inv_mean), 0.0, delta, disc)
        kq = _pick(~(delta > 0) & (disc > delta), lambda d, s, lm: 2.0 * lm / (s - d), kq,
                   delta, disc, lam)
        # S_1 >= B_1 / (kappa + omega_max): G >= lam/kappa + B_1/(kappa + omega_max) - alpha,
        # whose positive root is sharp at small alpha or large lam
        t = lam + spec.mean_omega - alpha * top
        disc = B.hypot(t, 2.0 * B.sqrt(alpha * lam * top))
        kb = _pick(t > 0, lambda t_, s, a: (t_ + s) / (2.0 * a), 0.0, t, disc, alpha)
        kb = _pick(~(t > 0) & (disc > t), lambda t_, s, lm: 2.0 * lm * top / (s - t_), kb,
                   t, disc, lam)
        kb = np.where(B.isfinite(kb), kb, 0.0)
        lo = np.maximum(np.maximum(lam / alpha, kq), kb)
        hi = (lam + spec.mean_omega) / alpha
    return lo, hi


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
    lo, hi = _bounds(B, spec, alpha, lam)
    direct = alpha < 0.5
    kappa = lo.copy()
    if B.table:
        if per_point:  # each point its own table from its own bounds, as if solved alone
            nodes = np.geomspace(lo, hi, B.table, axis=-1)
        else:
            nodes = np.geomspace(lo.min(), hi.max(), B.table)
        if per_point or alpha.size * BISECT < B.table:  # G at ~log2(table) nodes per point
            count = _count_bisect(B, spec, nodes, direct, alpha, lam)
        else:
            sums = B.sums(spec, ["S_1", "S_1c"], nodes, CHUNK)
            with np.errstate(over="ignore"):  # lam / kappa = inf at a node far left: G = +inf, right sign
                g_nodes = _g(B, direct[:, None], nodes[None, :], sums["S_1"][None, :],
                             sums["S_1c"][None, :], alpha[:, None], lam[:, None])
            count = np.sum(g_nodes >= 0, axis=1)  # G decreases: G >= 0 on the first `count` nodes
        rows = np.arange(alpha.size)
        last = np.maximum(count - 1, 0)
        start = nodes[rows, last] if per_point else nodes[last]
        kappa = np.maximum(np.where(count > 0, start, lo), lo)

    iterations = np.zeros(alpha.size, dtype=int)
    active = np.arange(alpha.size)
    step = np.zeros(alpha.size, dtype=B.dtype)
    for it in range(1, B.max_iter + 1):
        k, a, lm, dr = kappa[active], alpha[active], lam[active], direct[active]
        sums = B.sums(spec, ["S_1", "S_1c", "S_12"], k, CHUNK)
        g = _g(B, dr, k, sums["S_1"], sums["S_1c"], a, lm)
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


def _count_bisect(B: Backend, spec, nodes: np.ndarray, direct, alpha, lam) -> np.ndarray:
    """Per point, the number of ``nodes`` (shared, 1-d, or one row per point) at which G >= 0, by
    bisection: G decreases, so it is the first node where G < 0. The same G at the same nodes as
    the full table (the same sums, node by node), evaluated at ``ceil(log2(len(nodes) + 1))``
    nodes per point."""
    left = np.zeros(alpha.size, dtype=int)  # G >= 0 on nodes[:left]
    right = np.full(alpha.size, nodes.shape[-1])  # G < 0 on nodes[right:]
    while True:
        open_ = np.flatnonzero(left < right)
        if open_.size == 0:
            return left
        mid = (left[open_] + right[open_]) // 2
        k = nodes[open_, mid] if nodes.ndim == 2 else nodes[mid]
        sums = B.sums(spec, ["S_1", "S_1c"], k, CHUNK)
        with np.errstate(over="ignore"):
            g = _g(B, direct[open_], k, sums["S_1"], sums["S_1c"], alpha[open_], lam[open_])
        up = g >= 0
        left[open_] = np.where(up, mid + 1, left[open_])
        right[open_] = np.where(up, right[open_], mid)


def _g(B: Backend, direct, kappa, s1, s1c, alpha, lam):
    """G(kappa) in the form exact for each alpha (see :func:`_newton`)."""
    fns = B.fns
    return np.where(direct, B.call(fns.newton_direct, kappa=kappa, S_1=s1, alpha=alpha, lam=lam),
                    B.call(fns.newton, kappa=kappa, S_1c=s1c, delta=1.0 - alpha, lam=lam))


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
            V=_pick(lam > 0, lambda lm: b1 / lm, B.inf, lam), V_hat=v_hat, m_hat=v_hat,
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
        :func:`raw_residual` (where V = inf: the relative violation of the V_hat equation).
    """
    if backend.name != "numpy":
        return _solve_reduced(spec, alpha, lam, backend, per_point)
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
    v_hat = _pick(~pos & (alpha > 1.0), lambda s, d: B.call(fns.v_hat_of_kappa, S_1c=s, delta=d),
                  0.0, sums["S_1c"], delta)
    v_hat = _pick(pos, lambda lm, k: lm / k, v_hat, lam, kappa)
    # inf where a true value overflows (V ~ 1/lam); NaN only on the points overwritten below
    out = {name: np.array(np.broadcast_to(B.call(f, alpha=alpha, noise=spec.noise, V_hat=v_hat, **sums),
                                          (n,)), dtype=B.dtype)
           for name, f in fns.stable.items()}
    # V = S_1 / V_hat = S_1 kappa / lam (lam may be subnormal: divide by it last)
    out["V"] = _pick(pos, lambda s, k, lm: s * k / lm, out["V"], sums["S_1"], kappa, lam)
    out["kappa"] = _pick(flat, lambda lm, v: lm / v, kappa, lam, v_hat)
    out["V_hat"] = out["m_hat"] = v_hat  # m_hat = V_hat (reduce, step 1)
    out["V"] = np.where(v_hat == 0.0, B.inf, out["V"])
    out["iterations"] = iterations
    out["regime"] = np.select([peak, large, flat], [PEAK, LARGE_KAPPA, FLAT], NEWTON)
    if large.any():
        for name, value in _large_kappa(B, spec, alpha[large], lam[large]).items():
            out[name][large] = value

    out["residual"] = _residuals(B, spec, alpha, lam, out, sums, free, large, peak)

    out["test_loss"] = out["eg"] / 2  # the square loss is (y - z)^2 / 2; eg has no factor 1/2
    out["estimation_error"] = estimation_error(spec, alpha, out["kappa"], out["eg"], backend=B)

    if peak.any():  # alpha = 1, lam = 0: the exact limit
        _peak_limit(B, spec, out, peak)
    return out


def _residuals(B: Backend, spec, alpha, lam, out: dict, sums: dict, free, large, peak) -> np.ndarray:
    """Every point's residual for :func:`solve_reduced`: where V is finite, :func:`raw_residual`
    of the six raw equations (on the :func:`_rescaled` solution if the backend rescales); where
    V = inf (minimum norm), the relative violation of the V_hat equation in its exact form; 0 at
    the peak."""
    n = alpha.size
    residual = B.full(n, 0)
    checked = (lam > 0) | (alpha > 1.0)  # V finite: all six raw equations
    if checked.any():
        if B.rescale:
            x, scale = _rescaled(spec, alpha, lam, out, sums, free, large)
        else:
            x, scale = out, np.ones(n)
        residual[checked] = raw_residual(spec, alpha[checked], lam[checked],
                                         {k: v[checked] for k, v in x.items()}, scale[checked],
                                         backend=B)
    min_norm = ~checked & ~peak
    if min_norm.any():  # V = inf: the V_hat equation V_hat(kappa) = 0, in its exact form
        a = alpha[min_norm]
        s = B.sums(spec, ["S_1", "S_1c"], out["kappa"][min_norm], CHUNK)
        v = np.where(a < 0.5, B.call(B.fns.v_hat_direct, S_1=s["S_1"], alpha=a),
                     B.call(B.fns.v_hat_of_kappa, S_1c=s["S_1c"], delta=1.0 - a))
        residual[min_norm] = np.abs(v) / a
    return residual


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


def _rescaled(spec, alpha, lam, out, sums, free, large):
    """The solution with hats scaled by ``2^k`` (V by ``2^-k``) where V_hat < 2^-900, for the residual.

    The mode equations are invariant under ``(lam, V_hat, m_hat, q_hat, V) -> (2^k lam, 2^k V_hat,
    2^k m_hat, 4^k q_hat, 2^-k V)``; scaled, a V_hat that is subnormal (or a V that overflows) in
    the result is a normal number whose equations can be checked to rounding, so the residual
    is that of the solution before its rounding to the float range. k <= 1000.
    """
    x = {k: out[k].copy() for k in ("V", "q", "m", "V_hat", "q_hat", "m_hat")}
    v_hat = out["V_hat"]
    cii = spec.rho + spec.noise
    share = lam / (lam + spec.mean_omega)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_v = np.where(large, np.log2(alpha) + np.log2(share),
                         np.log2(lam) - np.log2(np.where(free, out["kappa"], 1.0)))
        tiny = (free | large) & (lam > 0) & (log_v < -900)
    if not tiny.any():  # nothing to rescale (the usual case): the solution as it is
        return x, np.ones(alpha.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.where(tiny, 2.0 ** np.clip(np.floor(-log_v) - 100, 0, 1000), 1.0)
        lam_s = lam * scale
        d = v_hat + sums["S_12"]
        v_hat_s = np.where(large, np.where(share > 2.0**-900, alpha * scale * share,
                                           alpha * (lam_s / (lam + spec.mean_omega))),
                           lam_s / out["kappa"])
        q_hat_s = np.where(large, cii * v_hat_s * (v_hat_s / alpha),
                           (sums["R"] + spec.noise) * (v_hat_s / d) * v_hat_s)
        v_s = np.where(large, spec.mean_omega / lam_s, sums["S_1"] * out["kappa"] / lam_s)
    for name, value in (("V_hat", v_hat_s), ("m_hat", v_hat_s), ("q_hat", q_hat_s), ("V", v_s)):
        x[name] = np.where(tiny, value, x[name])
    return x, scale


def raw_residual(spec: Spectrum, alpha, lam, x: dict, scale=1.0, *, backend: Backend = NUMPY,
                 point: bool = False) -> np.ndarray:
    """Largest relative violation of the six raw saddle-point equations of ``derive()`` at ``x``.

    ``x`` maps V, q, m, V_hat, q_hat, m_hat to arrays (or scalars) over points; with ``scale``
    (powers of two, see :func:`_rescaled`) its hats are ``scale`` (q_hat: ``scale^2``) times, and
    its V ``1/scale`` times, those of the solution at ridge ``lam``. The equations
    are evaluated as grouped here (equal to ``derive()``, checked by sympy in the tests) so that
    no intermediate overflows: with ``g = 1/(lam + V_hat omega)`` per mode,
    ``V = sum b omega g``, ``m = sum c omega^2 (m_hat g)``,
    ``q = sum c omega^3 (m_hat g)^2 + b omega^2 q_hat g^2``, and ``V_hat = m_hat = alpha/(1+V)``,
    ``q_hat = (alpha/(1+V)) (eg/(1+V))`` with ``eg = rho + sigma^2 - 2m + q``. In the q equation
    q_hat is taken from its own equation, ``q_hat g^2 = (alpha g/(1+V)) (eg/(1+V)) g``, which
    stays finite where q_hat itself underflows (V_hat -> 0, below the minimum-norm limit). Each
    violation is
    relative to the size of the terms of its equation (for q_hat: ``rho + sigma^2 + 2|m| + q``
    in place of eg), floored at :data:`FLOOR` in float64 (mpmath ``backend``: object arrays, no
    floor). ``point``: one point of finite Python floats (:mod:`.point_residual`, the same bits).
    """
    if point:
        return raw_residual_point(spec, alpha, lam, x, _mode_products(spec))
    dtype = backend.dtype
    alpha = np.asarray(alpha, dtype=dtype)
    get = {k: np.asarray(x[k], dtype=dtype) for k in ("V", "q", "m", "V_hat", "q_hat", "m_hat")}
    scale = np.broadcast_to(np.asarray(scale, dtype=float), alpha.shape)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        one_plus_v = 1.0 / scale + get["V"]  # (1 + V) / scale
        share = alpha / one_plus_v  # scale alpha / (1 + V)
        eg = spec.rho + spec.noise - 2.0 * get["m"] + get["q"]
        eg_scale = spec.rho + spec.noise + 2.0 * np.abs(get["m"]) + np.abs(get["q"])
        worst = np.maximum(_rel(get["V_hat"], share), _rel(get["m_hat"], share))
        q_hat = share * (eg / one_plus_v)
        q_hat_scale = share * (eg_scale / one_plus_v)
        worst = np.maximum(worst, _rel(get["q_hat"], q_hat, q_hat_scale))
        lam = (np.broadcast_to(np.asarray(lam, dtype=dtype), alpha.shape) * scale)[..., None]
        w = spec.omega
        bw, cw2, cw3, bw2 = _mode_products(spec)  # b w, c w^2, c w^3, b w^2 (as multiplied here)
        g = 1.0 / (lam + get["V_hat"][..., None] * w)
        mg = get["m_hat"][..., None] * g
        totals = {
            "V": np.sum(bw * g, axis=-1),
            "m": np.sum(cw2 * mg, axis=-1),
            "q": np.sum(cw3 * mg**2 + bw2 * (share[..., None] * g)
                        * (eg[..., None] / one_plus_v[..., None]) * g, axis=-1),
        }
    for name, total in totals.items():
        worst = np.maximum(worst, _rel(get[name], total))
    return worst


#: per spectrum, the products of weights and powers of omega of :func:`raw_residual`
_PRODUCTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _mode_products(spec) -> tuple:
    """``(b w, c w^2, c w^3, b w^2)`` of ``spec``, computed once per float64 spectrum (its arrays
    are read-only); the same numbers as the products written out (left to right)."""
    w, b, c = spec.omega, spec.bulk, spec.teacher
    if w.dtype == object:
        return b * w, c * w**2, c * w**3, b * w**2
    found = _PRODUCTS.get(spec)
    if found is None:
        found = _PRODUCTS[spec] = (b * w, c * w**2, c * w**3, b * w**2)
    return found


def _rel(a, b, scale=None):
    """|a - b| / max(|a|, |b|, |scale|, FLOOR), 0 where a == b, inf where it is NaN."""
    if np.asarray(a).dtype != object and np.asarray(b).dtype != object:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        big = np.maximum(np.abs(a), np.abs(b))
        scale = big if scale is None else np.maximum(big, np.abs(scale))
        with np.errstate(invalid="ignore"):
            out = np.abs(a - b) / np.maximum(scale, FLOOR)
        return np.where(a == b, 0.0, np.where(np.isnan(out), np.inf, out))
    a, b = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    big = np.maximum(np.abs(a), np.abs(b))
    scale = big if scale is None else np.maximum(big, np.abs(scale))
    return _pick(a != b, lambda x, y, s: np.abs(x - y) / s, 0.0, a, b,
                 np.broadcast_to(scale, a.shape))
