"""The two halves of the proximal operator :meth:`.losses.Loss.prox` (see the module docstring of
:mod:`.losses`): the bracket of the proximal point with its kinks (:func:`kink_bracket`), then
the safeguarded Newton method inside it (:func:`safeguarded_newton`). ``loss`` is a
:class:`.losses.Loss`; ``check`` is :mod:`.convexity` for a loss not proven convex (every node
evaluated is checked), else None; ``vv`` (``V``) a number or one per node.
"""

from __future__ import annotations

import numpy as np

EPS = np.finfo(float).eps


def kink_bracket(loss, yv, wv, vv, d, check) -> tuple:
    """``(lo, hi, at_kink, z_kink)``: a bracket of the proximal point from ``loss'(y, w) = d``,
    tightened by every kink of the loss; where the subdifferential at a genuine kink contains
    ``(w - k)/V`` the point sits on it (``at_kink``, at ``z_kink``)."""
    lo = np.where(d > 0, wv - vv * d, wv)
    hi = np.where(d > 0, wv, wv - vv * d)
    at_kink = np.zeros(yv.shape, dtype=bool)
    z_kink = np.zeros(yv.shape)
    for k in loss.kink_points(yv):
        ok = ~np.isnan(k)
        kk = np.where(ok, k, 0.0)
        left, right = loss._one_sided(yv, kk)
        g_left, g_right = (kk - wv) / vv + left, (kk - wv) / vv + right
        # a genuine kink: loss' jumps by more than its smooth change over the probe, 2 h loss''
        # (a candidate where loss' is continuous, e.g. Huber's, only bounds the bracket)
        h = 1e-9 * np.maximum(1.0, np.abs(kk))
        curv = np.abs(loss.d2(yv, kk - h)) + np.abs(loss.d2(yv, kk + h))
        if check:
            check.refuse_kinks(loss, yv, kk, ok, left, right, h)
        genuine = (right - left) > 100 * h * curv
        hit = ok & genuine & (g_left <= 0) & (g_right >= 0) & (g_right > g_left)
        at_kink |= hit
        z_kink = np.where(hit, kk, z_kink)
        lo = np.where(ok & (g_right < 0) & (kk > lo) & (kk < hi), kk, lo)
        hi = np.where(ok & (g_left > 0) & (kk < hi) & (kk > lo), kk, hi)
    return lo, hi, at_kink, z_kink


def safeguarded_newton(loss, yv, wv, vv, d, d2w, lo, hi, at_kink, check, max_iter: int):
    """The proximal point off the kinks: Newton's method on ``g(z) = (z - w)/V + loss'(y, z)``
    from its first step at ``w`` (``d``, ``d2w``: ``loss'`` and ``loss''`` there), replaced by
    bisection where it leaves the bracket ``[lo, hi]`` or fails to halve its step; RuntimeError
    after ``max_iter`` steps."""
    with np.errstate(all="ignore"):
        zv = wv - vv * d / (1.0 + vv * d2w)
    zv = np.where(np.isfinite(zv) & (zv >= lo) & (zv <= hi), zv, 0.5 * (lo + hi))
    done = at_kink | (lo == hi)
    zv = np.where(lo == hi, lo, zv)
    last_step = hi - lo
    for _ in range(max_iter):
        if done.all():
            break
        d1z, d2z = loss._d12(yv, zv)
        if check:
            check.refuse_curvature(loss, yv, zv, d1z, d2z)
        g = (zv - wv) / vv + d1z
        lo = np.where(g < 0, zv, lo)
        hi = np.where(g > 0, zv, hi)
        with np.errstate(all="ignore"):
            new = zv - g / (1.0 / vv + d2z)
        # Newton is kept only if it stays in the bracket and at least halves the step
        # (rtsafe's rule: this stops cycling between two points on a sigmoid-shaped g)
        bad = ~((new >= lo) & (new <= hi) & (np.abs(new - zv) <= 0.5 * np.abs(last_step)))
        new = np.where(bad, 0.5 * (lo + hi), new)
        tol = 4 * EPS * (np.abs(zv) + np.abs(wv) + vv * np.abs(g - (zv - wv) / vv)) + 1e-300
        finished = (g == 0) | ((np.abs(new - zv) <= tol) & ~bad) | (hi - lo <= tol)
        last_step = np.where(done, last_step, new - zv)
        zv = np.where(done, zv, new)
        done |= finished
    else:
        raise RuntimeError(f"proximal Newton did not converge in {max_iter} steps "
                           f"({int((~done).sum())} nodes left)")
    return zv
