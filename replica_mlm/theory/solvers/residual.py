"""The residual of the reduced saddle point: how far a solution of :func:`.root.solve_reduced`
(or any (V, q, m) and hats) is from the six raw saddle-point equations of ``derive()``
(docs/theory.md, section "One scalar equation").

:func:`raw_residual` takes the largest relative violation, over arrays of points (float64 or
mpmath) or on the numbers of one point
(:func:`raw_residual_point`); :func:`residuals` gives every point of a solve its
residual by regime (the raw equations where V is finite, the V_hat equation at minimum norm),
checking hats below 2^-900 on a rescaled solution (:func:`_rescaled`).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solvers.backend import NUMPY, Backend, pick

#: relative residuals are taken against max(|a|, |b|, FLOOR), FLOOR = 2^-1022 the smallest
#: normal number: a subnormal result is exact only to ~2^-1074 = eps FLOOR absolute
FLOOR = float(np.finfo(float).tiny)


def residuals(B: Backend, spec, alpha, lam, out: dict, sums: dict, free, large, peak) -> np.ndarray:
    """Every point's residual for :func:`.root.solve_reduced`: where V is finite, :func:`raw_residual`
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
        s = B.sums(spec, ["S_1", "S_1c"], out["kappa"][min_norm])
        v = np.where(a < 0.5, B.call(B.fns.v_hat_direct, S_1=s["S_1"], alpha=a),
                     B.call(B.fns.v_hat_of_kappa, S_1c=s["S_1c"], delta=1.0 - a))
        residual[min_norm] = np.abs(v) / a
    return residual


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


def raw_residual(spec: Spectrum, alpha, lam, x: dict, scale=1.0, *,
                 backend: Backend = NUMPY) -> np.ndarray:
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
    floor). :func:`raw_residual_point` is the same on the numbers of one point.
    """
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
    return pick(a != b, lambda x, y, s: np.abs(x - y) / s, 0.0, a, b,
                 np.broadcast_to(scale, a.shape))


def _rel_point(a: float, b: float, scale: float = 0.0) -> float:
    """:func:`_rel` of two numbers (``|a - b|`` over the largest size, 0 if equal; inf if NaN)."""
    if a == b:
        return 0.0
    out = abs(a - b) / max(abs(a), abs(b), abs(scale), FLOOR)
    return math.inf if math.isnan(out) else out


def raw_residual_point(spec: Spectrum, alpha: float, lam: float, x: dict) -> float:
    """:func:`raw_residual` of one point (scale 1) whose numbers are finite Python floats, in the
    same floating-point operations (so the same bits) on numbers instead of arrays of one point."""
    one_plus_v = 1.0 + x["V"]
    share = alpha / one_plus_v
    eg = spec.rho + spec.noise - 2.0 * x["m"] + x["q"]
    eg_scale = spec.rho + spec.noise + 2.0 * abs(x["m"]) + abs(x["q"])
    bw, cw2, cw3, bw2 = _mode_products(spec)
    g = 1.0 / (lam + x["V_hat"] * spec.omega)
    mg = x["m_hat"] * g
    rows = np.empty((3, g.size))  # the summands of V, m and q, summed row by row in one call
    np.multiply(bw, g, out=rows[0])
    np.multiply(cw2, mg, out=rows[1])
    np.add(cw3 * mg**2, bw2 * (share * g) * (eg / one_plus_v) * g, out=rows[2])
    total_v, total_m, total_q = np.add.reduce(rows, axis=1).tolist()
    return max(_rel_point(x["V_hat"], share), _rel_point(x["m_hat"], share),
               _rel_point(x["q_hat"], share * (eg / one_plus_v), share * (eg_scale / one_plus_v)),
               _rel_point(x["V"], total_v), _rel_point(x["m"], total_m), _rel_point(x["q"], total_q))
