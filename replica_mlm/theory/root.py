"""The reduced saddle point of :func:`.potentials.reduce`, solved for many alpha at once.

Everything is vectorised over the points (alpha values) of one ridge strength lam:

1. ``kappa = lam / V_hat`` solves ``G(kappa) = lam/kappa - S_1c(kappa) + 1 - alpha = 0``
   (THEORY.md section 4). G is convex and decreasing, and ``G(kappa_lo) >= 0`` at
   ``kappa_lo = max(lam/alpha, (1 - alpha)^+ / <1/omega>)`` (because ``S_1c <= 1`` and
   ``S_1c(kappa) <= kappa <1/omega>``), while ``G <= 0`` at ``(lam + <omega>)/alpha``. Newton's
   method started anywhere left of the root climbs to it monotonically and quadratically; the
   start is the largest node of a geometric table of G on that bracket at which G >= 0, which is
   within a factor of about 2 of the root, so a handful of steps reach machine precision.
2. lam = 0 and alpha > 1 is least squares, kappa = 0 exactly; lam = 0, alpha = 1 is the
   interpolation peak (eg = inf, exactly, without warnings).
3. All order parameters follow in closed form from spectral sums at kappa.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.models.spectrum import Spectrum
from replica_mlm.theory import potentials as P
from replica_mlm.theory.compiled import compiled, compiled_estimation, compiled_sums

#: elements of a (points x modes) block evaluated at once
CHUNK = 1 << 16
#: nodes of the table that gives Newton's method its starting points
TABLE = 128
#: order parameters and diagnostics returned for every point
FIELDS = ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "iterations",
          "residual", "test_loss", "estimation_error")
EPS = np.finfo(float).eps


class NewtonFailure(RuntimeError):
    """Raised by :func:`solve_reduced` if Newton's method exhausts its iterations."""

    def __init__(self, alpha: np.ndarray, kappa: np.ndarray, step: np.ndarray, iterations: int):
        super().__init__("Newton's method did not converge")
        self.alpha, self.kappa, self.step, self.iterations = alpha, kappa, step, iterations


def spectral_sums(spec: Spectrum, names, kappa: np.ndarray) -> dict[str, np.ndarray]:
    """``{name: sum over modes of the summand at each kappa}`` for the sums of ``reduce()``."""
    names = tuple(names)
    fn = compiled_sums(names)
    kappa = np.asarray(kappa, dtype=float)
    out = {name: np.empty(kappa.shape) for name in names}
    rows = max(1, CHUNK // spec.omega.size)
    for start in range(0, kappa.size, rows):
        k = kappa[start:start + rows, None]
        shape = (k.shape[0], spec.omega.size)
        for name, val in zip(names, fn(spec.omega, spec.bulk, spec.teacher, k), strict=True):
            out[name][start:start + rows] = np.broadcast_to(val, shape).sum(axis=1)
    return out


def _newton(spec: Spectrum, alpha: np.ndarray, lam: np.ndarray, max_iter: int = 100):
    """kappa > 0 with G(kappa) = 0 for each (alpha, lam) pair (lam > 0, or alpha < 1)."""
    fns = compiled()
    inv_mean = float(np.dot(spec.bulk, 1.0 / spec.omega))
    lo = np.maximum(lam / alpha, np.maximum(1.0 - alpha, 0.0) / inv_mean)
    hi = (lam + spec.mean_omega) / alpha
    nodes = np.geomspace(lo.min(), hi.max(), TABLE)
    s1c_nodes = spectral_sums(spec, ["S_1c"], nodes)["S_1c"]
    g_nodes = fns.newton(nodes[None, :], s1c_nodes[None, :], 1.0 - alpha[:, None], lam[:, None])
    count = np.sum(g_nodes >= 0, axis=1)  # G decreases: G >= 0 on the first `count` nodes
    kappa = np.maximum(np.where(count > 0, nodes[np.maximum(count - 1, 0)], lo), lo)

    iterations = np.zeros(alpha.size, dtype=int)
    active = np.arange(alpha.size)
    step = np.zeros(alpha.size)
    for it in range(1, max_iter + 1):
        k, a, lm = kappa[active], alpha[active], lam[active]
        sums = spectral_sums(spec, ["S_1c", "S_1c'"], k)
        g = fns.newton(k, sums["S_1c"], 1.0 - a, lm)
        dg = fns.newton_slope(k, sums["S_1c'"], lm)
        s = -g / dg
        new = k + s
        kappa[active] = np.where(new > 0, new, 0.5 * k)
        step[active] = s
        iterations[active] = it
        # size of the terms of G, hence its rounding level (1 - alpha is exact near alpha = 1)
        scale = lm / k + sums["S_1c"] + np.abs(1.0 - a)
        done = (np.abs(s) <= 4 * EPS * k) | (np.abs(g) <= 4 * EPS * scale)
        active = active[~done]
        if active.size == 0:
            return kappa, iterations
    raise NewtonFailure(alpha[active], kappa[active], step[active], max_iter)


def solve_reduced(spec: Spectrum, alpha: np.ndarray, lam) -> dict[str, np.ndarray]:
    """Saddle point at every pair of ``alpha`` (> 0) and ``lam`` (>= 0), broadcast to one 1-d shape.

    Returns
    -------
    dict
        Arrays keyed by :data:`FIELDS`; ``iterations`` counts Newton steps (0 where kappa is
        known exactly), ``residual`` is the largest relative violation of the six raw
        saddle-point equations (at lam = 0, alpha < 1, where V = inf: of the V_hat equation).
    """
    fns = compiled()
    alpha, lam = (np.array(x, dtype=float).ravel() for x in np.broadcast_arrays(alpha, lam))
    n = alpha.size
    peak = (lam == 0.0) & (alpha == 1.0)
    exact = (lam == 0.0) & (alpha > 1.0)
    free = ~(peak | exact)
    kappa = np.zeros(n)
    iterations = np.zeros(n, dtype=int)
    if free.any():
        kappa[free], iterations[free] = _newton(spec, alpha[free], lam[free])

    names = [str(s) for s in P.SUMS]
    sums = spectral_sums(spec, names, kappa)
    # lam > 0: V_hat = lam / kappa; lam = 0: V_hat = S_1c - (1 - alpha), exactly 0 for alpha <= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        v_hat = np.where(lam > 0, fns.v_hat_from_root(kappa, lam),
                         np.where(alpha > 1.0, fns.v_hat_of_kappa(sums["S_1c"], 1.0 - alpha), 0.0))
    args = (alpha, 1.0 - alpha, kappa, spec.noise, v_hat, *(sums[name] for name in names))
    with np.errstate(divide="ignore", invalid="ignore"):  # V = S_1 / V_hat = inf at lam = 0
        out = {name: np.broadcast_to(f(*args), (n,)).astype(float)
               for name, f in fns.values.items()}
    out["V_hat"] = out["m_hat"] = np.asarray(v_hat, dtype=float)  # m_hat = V_hat (reduce, step 1)
    out["V"] = np.where(v_hat == 0.0, np.inf, out["V"])
    out["kappa"], out["iterations"] = kappa, iterations

    residual = np.zeros(n)
    finite = np.isfinite(out["V"])
    if finite.any():
        residual[finite] = raw_residual(spec, alpha[finite], lam[finite],
                                        {k: v[finite] for k, v in out.items()})
    min_norm = (lam == 0.0) & (alpha < 1.0)
    residual[min_norm] = (np.abs(fns.v_hat_of_kappa(sums["S_1c"][min_norm], 1.0 - alpha[min_norm]))
                          / alpha[min_norm])
    out["residual"] = residual

    out["test_loss"] = out["eg"] / 2  # the square loss is (y - z)^2 / 2; eg has no factor 1/2
    out["estimation_error"] = estimation_error(spec, alpha, kappa, out["eg"])

    if peak.any():  # alpha = 1, lam = 0: the exact limit
        for name, value in dict(eg=np.inf, train_loss=0.0, q=np.inf, V=np.inf, m_hat=0.0,
                                q_hat=0.0, V_hat=0.0, kappa=0.0, residual=0.0, test_loss=np.inf,
                                estimation_error=np.inf).items():
            out[name][peak] = value
        out["m"][peak] = spec.rho
    return out


def estimation_error(spec: Spectrum, alpha: np.ndarray, kappa: np.ndarray, eg: np.ndarray) -> np.ndarray:
    """E |w_hat - w*|^2 at each point from kappa and eg (the reduced summand of
    :func:`.potentials.estimation`, finite at lam = 0); inf where eg is."""
    fn = compiled_estimation()[1]
    out = np.empty(np.shape(alpha))
    finite = np.isfinite(eg)
    for i in np.flatnonzero(finite):
        out[i] = np.sum(np.broadcast_to(fn(spec.omega, spec.bulk, spec.teacher, kappa[i], eg[i],
                                           alpha[i]), spec.omega.shape))
    out[~finite] = np.inf
    return out


def alpha_derivative(spec: Spectrum, alpha: np.ndarray, lam, kappa: np.ndarray) -> np.ndarray:
    """d eg / d alpha along the saddle point at each alpha, given the solved ``kappa``.

    Implicit differentiation of G(kappa; alpha) = 0 (``potentials.reduce``). Where kappa stays
    0 (lam = 0, alpha > 1) only the explicit derivative remains; at the interpolation peak
    (lam = 0, alpha = 1) the derivative does not exist and NaN is returned there.
    """
    fns = compiled()
    alpha, lam = (np.array(x, dtype=float) for x in np.broadcast_arrays(alpha, lam))
    names = ("R", "S_2", "S_2c", "S_1c'", "R'", "S_2c'")
    sums = spectral_sums(spec, names, kappa)
    args = (alpha, 1.0 - alpha, kappa, lam, spec.noise, *(sums[n] for n in names))
    fixed = (lam == 0.0) & (alpha >= 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(fixed, fns.deg_dalpha_fixed_kappa(*args), fns.deg_dalpha(*args))
    return np.where((lam == 0.0) & (alpha == 1.0), np.nan, out)


def raw_residual(spec: Spectrum, alpha, lam, x: dict) -> np.ndarray:
    """Largest relative violation of the six raw saddle-point equations of ``derive()`` at ``x``.

    ``x`` maps V, q, m, V_hat, q_hat, m_hat to arrays (or scalars) over points.
    """
    fns = compiled()
    alpha = np.asarray(alpha, dtype=float)
    hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
    worst = np.zeros(alpha.shape)
    for name, f in fns.hat.items():
        worst = np.maximum(worst, _rel(x[name], f(*hat_args)))
    hats = [np.asarray(x[h], dtype=float)[..., None] for h in ("V_hat", "q_hat", "m_hat")]
    lam = np.broadcast_to(np.asarray(lam, dtype=float), alpha.shape)[..., None]
    modes = fns.modes_together(spec.omega, spec.bulk, spec.teacher, lam, *hats)
    for name, val in zip(("V", "q", "m"), modes, strict=True):
        total = np.broadcast_to(val, (*alpha.shape, spec.omega.size)).sum(axis=-1)
        worst = np.maximum(worst, _rel(x[name], total))
    return worst


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale == 0, 0.0, np.abs(a - b) / scale)
