"""One point of the reduced saddle point in float64, without arrays over points.

:func:`solve_point` is :func:`.root.solve_reduced` for a single ``(alpha, lam)`` with lam > 0
in the Newton regime (docs/theory.md, section "One scalar equation"), written on scalars: the
same bounds, the same start (the bisection of the same geometric table of G), the same Newton
steps, the same spectral sums, closed forms, raw-equation residual and estimation error, in the
same floating-point operations, so that it returns **the same bits** as the vectorised solver
(checked in ``tests/test_one_point.py``). What it saves is the bookkeeping of arrays of one
point (masks, broadcasting, ``np.where`` over both branches), not a single sum.

The shortcuts: the bisection only needs the *sign* of G at a node. Most nodes take it from the
tangents of G at the points already evaluated (G is convex in kappa and concave in 1/kappa, so
the two tangents bound it from both sides; :func:`_start`), where they clear the rounding by far;
the others from a cheap form of the needed sum (one division per mode and dot products); where
``|G|`` is not larger than a bound on the difference between the two forms (a few ``p eps`` of
the size of G's terms) the node is evaluated exactly as :func:`.root._count_bisect` does, so the
count of nodes with G >= 0, hence the start, is the same (``tests/test_one_point_start.py``).
The closed forms get only the sums they use (:data:`.compiled.STABLE_SUMS`: the same summands).

Anything outside the covered case (lam = 0, the strong-ridge and least-squares limits, hats
below 2^-900 that need rescaling for the residual, a non-finite number, a residual above
:data:`.root.RESIDUAL_TOL`) returns None: the caller then uses :func:`.root.solve_reduced`,
which handles it (and raises where a point does not converge).
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm.theory.solvers import root
from replica_mlm.theory.solvers.backend import NUMPY, extremes, ratios
from replica_mlm.theory.symbolic.compiled import (
    STABLE_SUMS,
    SUM_NAMES,
    compiled,
    estimation_terms,
    sum_terms,
)

EPS = root.EPS
#: a node's cheap G decides its sign where ``|G| > SLACK (p + 8) eps`` times the size of G's terms
SLACK = 4.0
#: a tangent of G decides a node's sign where it clears TRUST times that rounding bound (:func:`_start`)
TRUST = 64.0
#: the sum of an array as np.sum takes it (the same pairwise summation), without its wrapper
_total = np.add.reduce
def _max(a: float, b: float) -> float:
    """``np.maximum`` of two Python floats (NaN if either is), without a numpy call."""
    return a if (a >= b or a != a) else b


def _bounds(spec, alpha: float, lam: float, top) -> tuple:
    """:func:`.root._bounds` at one point (lam > 0), in the same operations (on Python floats:
    sqrt is correctly rounded in both; hypot is numpy's)."""
    inv_mean = spec.moment("bulk", -1)
    delta = 1.0 - alpha
    disc = float(np.hypot(delta, 2.0 * math.sqrt(inv_mean * lam)))
    kq = (delta + disc) / (2.0 * inv_mean) if delta > 0 else 0.0
    if not (delta > 0) and disc > delta:
        kq = 2.0 * lam / (disc - delta)
    t = lam + spec.mean_omega - alpha * top
    disc = float(np.hypot(t, 2.0 * math.sqrt(alpha * lam * top)))
    kb = (t + disc) / (2.0 * alpha) if t > 0 else 0.0
    if not (t > 0) and disc > t:
        kb = 2.0 * lam * top / (disc - t)
    if not math.isfinite(kb):
        kb = 0.0
    lo = _max(_max(lam / alpha, kq), kb)
    hi = (lam + spec.mean_omega) / alpha
    return lo, hi


def _table(lo, hi) -> np.ndarray:
    """``np.geomspace(lo, hi, root.TABLE)`` (the same numbers, without its general set-up)."""
    ls, le = np.log10(lo), np.log10(hi)
    y = np.arange(0, root.TABLE, dtype=float)
    step = (le - ls) / (root.TABLE - 1)
    if step == 0:
        return np.geomspace(lo, hi, root.TABLE)
    y *= step
    y += ls
    y[-1] = le
    nodes = np.power(10.0, y)
    nodes[0], nodes[-1] = lo, hi
    return nodes


def _g_exact(spec, k, direct: bool, alpha: float, lam: float):
    """G at ``k`` as :func:`.root._g` evaluates it (the compiled sums and forms)."""
    fns = compiled()
    x, y = ratios(spec, k)
    s1, s1c = sum_terms(("S_1", "S_1c"))(spec.omega, spec.bulk, spec.teacher, x, y)
    if direct:
        return fns.newton_direct(kappa=k, S_1=_total(s1), alpha=alpha, lam=lam)
    return fns.newton(kappa=k, S_1c=_total(s1c), delta=1.0 - alpha, lam=lam)


def _sign_tests(spec, direct: bool, alpha: float, lam: float) -> tuple:
    """The sign tests of :func:`_start`'s bisection, sharing their state: ``(cheap, decided,
    tangents, seen, slack)``.

    ``cheap(k)`` evaluates G at k by the cheap form (keeping its tangent in ``tangents`` and its
    value in ``seen``), ``decided(k)`` is G(k) >= 0 (True) or < 0 (False) where a kept tangent
    clears the margin ``TRUST * slack``, else None; ``slack`` is the rounding bound
    ``SLACK (p + 8) eps`` (relative to the size of G's terms).
    """
    w, b = spec.omega, spec.bulk
    bw = root._mode_products(spec)[0]  # b w
    # the cheap and the compiled sums of positive terms differ by at most ~(p + log2 p + 10) eps
    # of the sum, G's two forms by a few eps more of its terms: SLACK (p + 8) eps is safe
    slack = SLACK * (w.size + 8) * EPS
    trust = TRUST * slack
    const = 2.0 + alpha + abs(1.0 - alpha)  # bounds S_1, S_1c (<= sum b = 1) and the constants
    one_minus = 1.0 - alpha
    tangents = []  # (kappa_e, g_e, D_e, size of the terms at e)
    seen = {}  # kappa -> (G, size) of the cheap form
    buf, tmp = np.empty(w.shape), np.empty(w.shape)

    def cheap(k: float) -> tuple:
        """G at k and the size of its terms from one division per mode and dot products; its
        tangent is kept."""
        near = lam / k
        np.add(w, k, out=buf)
        inv = np.divide(1.0, buf, out=buf)  # 1 / (omega + kappa)
        if direct:
            s = float(np.dot(bw, inv))  # S_1
            g, size = near + s - alpha, near + s + alpha
        else:
            s = k * float(np.dot(b, inv))  # S_1c
            g, size = near - s + one_minus, near + s + abs(one_minus)
        d = near + k * float(np.dot(np.multiply(bw, inv, out=tmp), inv))  # lam/kappa + S_12
        if math.isfinite(g) and math.isfinite(d) and d > 0:  # (D <= lam/kappa + S_1 <= size + 1)
            tangents.append((k, g, d, size + 2.0))
        seen[k] = g, size
        return g, size

    def decided(k: float):
        """G(k) >= 0 (True) or < 0 (False) if a tangent clears the margin, else None."""
        for ke, ge, de, se in reversed(tangents):  # the last is usually the nearest to the root
            r = k / ke
            below, above = ge - de * (r - 1.0), ge + de * (1.0 / r - 1.0)  # G lies between
            if below > 0.0 or above < 0.0:
                margin = trust * (lam / k + const + se * (1.0 + abs(r - 1.0) + abs(1.0 / r - 1.0)))
                if below > margin:
                    return True
                if above < -margin:
                    return False
        return None

    return cheap, decided, tangents, seen, slack


def _start(spec, lo, hi, direct: bool, alpha: float, lam: float):
    """The start of Newton's method: the last table node with G >= 0 (bisection), else ``lo``.

    The bisection visits the same nodes as :func:`.root._count_bisect` and sees the same sign at
    each. A node's sign is decided, in this order, by (1) the tangents of G at the nodes evaluated
    so far, (2) a cheap form of the needed sum, (3) the compiled sums (as the vectorised solver).
    (1): G is convex and decreasing in kappa and concave and increasing in u = 1/kappa (b >= 0,
    omega > 0), so at an evaluated node e, with ``D = lam/kappa_e + S_12(kappa_e)``
    (``-kappa G'``), every kappa has ``G >= g_e - D (kappa/kappa_e - 1)`` (the tangent in kappa
    lies below G) and ``G <= g_e + D (kappa_e/kappa - 1)`` (the tangent in u lies above G). Past
    a margin of ``TRUST`` times the rounding bound ``SLACK (p + 8) eps`` of the size of their terms
    (and of G's at the node), these bounds decide the sign of G as any evaluation would; after a
    node or two near the root (one of them a Newton step, which lands left of it) the rest of the
    bisection is decided without a sum.
    """
    nodes = _table(lo, hi)
    cheap, decided, tangents, seen, slack = _sign_tests(spec, direct, alpha, lam)
    values = nodes.tolist()
    left, right = 0, len(values)
    while left < right:
        mid = (left + right) // 2
        k = values[mid]
        up = decided(k)
        if up is None and tangents:  # first a Newton step (it lands left of the root) for a tangent there
            probe = max(lo, max(ke + ke * (ge / de) for ke, ge, de, _ in tangents))
            if probe < hi and probe not in seen:
                cheap(probe)
                up = decided(k)
        if up is None:
            g, size = seen[k] if k in seen else cheap(k)
            if not abs(g) > slack * size:  # too close to call (or not finite): as the vectorised solver
                g = _g_exact(spec, nodes[mid], direct, alpha, lam)
            up = g >= 0
        if up:
            left = mid + 1
        else:
            right = mid
    return max(nodes[left - 1] if left > 0 else lo, lo)


def _newton(spec, alpha: float, lam: float, ext: tuple):
    """(kappa, iterations, (kappa of the last step, its ratios x, y)) as :func:`.root._newton`
    for one point, or None if it fails (``ext``: :func:`.backend.extremes` of ``spec``)."""
    fns = compiled()
    direct = alpha < 0.5
    lo, hi = _bounds(spec, alpha, lam, ext[1])
    k = _start(spec, lo, hi, direct, alpha, lam)
    terms = sum_terms(("S_1", "S_1c", "S_12"))
    newton, newton_direct, newton_scale = fns.newton, fns.newton_direct, fns.newton_scale
    w, b, c = spec.omega, spec.bulk, spec.teacher
    delta, step_tol, g_tol = 1.0 - alpha, float(NUMPY.step_tol), float(NUMPY.g_tol)
    k = float(k)  # Python floats: the same IEEE operations as numpy's, without its scalar overhead
    for it in range(1, NUMPY.max_iter + 1):
        x, y = ratios(spec, k)
        t1, t1c, t12 = terms(w, b, c, x, y)
        if direct:
            s1 = float(_total(t1))
            g = newton_direct(k, s1, alpha, lam)  # (kappa, S_1, alpha, lam)
            size = s1 + alpha
        else:
            s1c = float(_total(t1c))
            g = newton(k, s1c, delta, lam)  # (kappa, S_1c, delta, lam)
            size = s1c + abs(delta)
        s = k * (g / newton_scale(k, float(_total(t12)), lam))  # (kappa, S_12, lam)
        new = k + s
        big = lam / k
        if math.isnan(g) or math.isnan(s):
            return None  # as the vectorised solver would not stop: it raises (the caller falls back)
        done = (abs(s) <= step_tol * k) or (abs(g) <= g_tol * (big if big >= size else size))
        last = (k, x, y)
        k = new if new > 0 else 0.5 * k
        if done:  # with the ratios of the last step, which the solution reuses if kappa is unchanged
            return k, it, last
    return None


def solve_point(spec, alpha: float, lam: float) -> dict | None:
    """The saddle point at one ``(alpha, lam)``: the dict of :func:`.root.solve_reduced` for that
    point (numbers, not arrays; ``regime`` :data:`.root.NEWTON`), or None outside the covered
    case (see the module docstring), where the caller uses :func:`.root.solve_reduced`.

    Parameters
    ----------
    spec : Spectrum
        The float64 spectrum of the task.
    alpha, lam : float
        Checked by the caller: alpha > 0, lam >= 0, finite.
    """
    if not lam > 0:
        return None
    ext = extremes(spec)
    low, top = ext[:2]
    if (lam + spec.mean_omega) >= NUMPY.large * top * alpha:
        return None  # omega_max / kappa below 2^-60: the first-order limit of solve_reduced
    if alpha > 1.0 and lam <= NUMPY.tiny * low * (alpha - 1.0):
        return None  # least squares is exact
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        try:
            return _solve(spec, alpha, lam, ext)
        except ZeroDivisionError:  # a Python float divided by 0: left to the vectorised solver
            return None


def _solve(spec, alpha: float, lam: float, ext: tuple) -> dict | None:
    """:func:`solve_point` past its regime checks, under one numpy error state (``ext``:
    :func:`.backend.extremes` of ``spec``)."""
    found = _newton(spec, alpha, lam, ext)
    if found is None:
        return None
    kappa, iterations, (k_last, x, y) = found
    if lam < kappa * 2.0**-890 and np.log2(lam) - np.log2(kappa) < -900:  # (the first test: no numpy call)
        return None  # V_hat below 2^-900: the residual needs the rescaled solution
    w, b, c = spec.omega, spec.bulk, spec.teacher
    if kappa != k_last:
        x, y = ratios(spec, kappa)
    # only the sums the closed forms use (the same summands, row by row as np.sum); the others
    # are NaN: a closed form that used one would be NaN, and the vectorised solver would answer
    sums = dict.fromkeys(SUM_NAMES, math.nan)
    sums.update(zip(STABLE_SUMS, _total(np.array(sum_terms(STABLE_SUMS)(w, b, c, x, y)), axis=1).tolist(),
                    strict=True))
    v_hat = lam / kappa
    noise, args = spec.noise, tuple(sums.values())  # the closed forms take (alpha, noise, V_hat, *SUM_NAMES)
    out = {name: f(alpha, noise, v_hat, *args) for name, f in compiled().stable.items()}
    out["V"] = sums["S_1"] * kappa / lam
    out["kappa"] = kappa
    out["V_hat"] = out["m_hat"] = v_hat
    out["iterations"] = iterations
    out["regime"] = root.NEWTON
    finite = math.isfinite
    if not (v_hat != 0.0 and finite(out["eg"]) and finite(out["train_loss"]) and finite(out["m"])
            and finite(out["q"]) and finite(out["V"]) and finite(out["q_hat"]) and finite(v_hat)
            and finite(kappa)):
        return None
    out["residual"] = root.raw_residual(spec, alpha, lam, out, point=True)
    out["test_loss"] = out["eg"] / 2
    est = estimation_terms()(w, b, c, x, y, out["eg"], alpha)
    out["estimation_error"] = _total(est if getattr(est, "shape", None) == w.shape
                                     else np.broadcast_to(est, w.shape))
    if not (out["residual"] <= root.RESIDUAL_TOL and finite(out["estimation_error"])):
        return None
    return out
