"""Many bounded Brent minimisations in lockstep, one vectorised function call per round.

:func:`minimise_many` runs the algorithm of ``scipy.optimize.minimize_scalar(method="bounded")``
(Brent's fminbound: golden section with parabolic steps) for many independent problems at once.
Each problem is a generator that yields its next trial point and receives the function value,
step for step the scipy code, so each problem visits the same points and returns the same
minimiser as scipy would; the function is called once per round on the trial points of all
problems still running (e.g. one vectorised solve of the saddle point over every alpha of a phase
diagram, docs/limit.md, section "Optimal regularisation and phase diagrams").
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from math import sqrt

import numpy as np


@dataclass(frozen=True)
class Minimum:
    """One problem's result: the minimiser ``x``, ``fun`` there, function evaluations ``nfev``,
    and ``success`` (False if ``maxfun`` was reached or a value was NaN), as scipy's."""

    x: float
    fun: float
    nfev: int
    success: bool


#: scipy's constants of fminbound: sqrt of its machine epsilon, and the golden-section fraction
_SQRT_EPS = sqrt(2.2e-16)
_GOLDEN_MEAN = 0.5 * (3.0 - sqrt(5.0))


def _fminbound(x1: float, x2: float, xatol: float, maxfun: int) -> Generator[float, float, Minimum]:
    """scipy's ``_minimize_scalar_bounded`` as a generator (yields x, receives f(x))."""
    flag = 0
    a, b = x1, x2
    fulc = a + _GOLDEN_MEAN * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = yield x
    num = 1
    fu = np.inf
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * np.abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while np.abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        x, e, rat = _trial_point(a, b, xf, fx, nfc, fnfc, fulc, ffulc, xm, e, rat, tol1, tol2)
        fu = yield x
        num += 1
        a, b, xf, fx, nfc, fnfc, fulc, ffulc = _update_points(
            x, fu, a, b, xf, fx, nfc, fnfc, fulc, ffulc)
        xm = 0.5 * (a + b)
        tol1 = _SQRT_EPS * np.abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxfun:
            flag = 1
            break
    if np.isnan(xf) or np.isnan(fx) or np.isnan(fu):
        flag = 2
    return Minimum(x=float(xf), fun=float(fx), nfev=num, success=flag == 0)


def _trial_point(a, b, xf, fx, nfc, fnfc, fulc, ffulc, xm, e, rat, tol1, tol2):
    """The next trial point ``x`` of fminbound, with the updated step memory ``(e, rat)``.

    A parabolic step through the three best points ``xf``, ``nfc``, ``fulc`` when it is
    acceptable (inside ``[a, b]``, shorter than half the step before last), else a golden-section
    step into the larger part of the bracket; never closer than ``tol1`` to ``xf``.
    """
    golden = 1
    if np.abs(e) > tol1:  # parabolic fit
        golden = 0
        r = (xf - nfc) * (fx - ffulc)
        q = (xf - fulc) * (fx - fnfc)
        p = (xf - fulc) * q - (xf - nfc) * r
        q = 2.0 * (q - r)
        if q > 0.0:
            p = -p
        q = np.abs(q)
        r = e
        e = rat
        if (np.abs(p) < np.abs(0.5 * q * r)) and (p > q * (a - xf)) and (p < q * (b - xf)):
            rat = (p + 0.0) / q
            x = xf + rat
            if ((x - a) < tol2) or ((b - x) < tol2):
                si = np.sign(xm - xf) + ((xm - xf) == 0)
                rat = tol1 * si
        else:
            golden = 1
    if golden:  # golden-section step
        e = a - xf if xf >= xm else b - xf
        rat = _GOLDEN_MEAN * e
    si = np.sign(rat) + (rat == 0)
    x = xf + si * np.maximum(np.abs(rat), tol1)
    return x, e, rat


def _update_points(x, fu, a, b, xf, fx, nfc, fnfc, fulc, ffulc):
    """fminbound's bracket ``[a, b]`` and three best points after evaluating ``f(x) = fu``.

    Returns ``(a, b, xf, fx, nfc, fnfc, fulc, ffulc)``: the best point ``xf``, the second best
    ``nfc`` and the previous second best ``fulc``, with their values.
    """
    if fu <= fx:
        if x >= xf:
            a = xf
        else:
            b = xf
        fulc, ffulc = nfc, fnfc
        nfc, fnfc = xf, fx
        xf, fx = x, fu
    else:
        if x < xf:
            a = x
        else:
            b = x
        if (fu <= fnfc) or (nfc == xf):
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = x, fu
        elif (fu <= ffulc) or (fulc == xf) or (fulc == nfc):
            fulc, ffulc = x, fu
    return a, b, xf, fx, nfc, fnfc, fulc, ffulc


def minimise_many(f: Callable[[np.ndarray, np.ndarray], np.ndarray], bounds: list[tuple[float, float]],
                  *, xatol: float, maxiter: int = 500) -> list[Minimum]:
    """Minimise ``f(i, x)[k]`` over ``x`` in ``bounds[i]`` for every problem ``i``.

    ``f(idx, x)`` receives the indices of the running problems and one trial point for each,
    and returns the values there (an array like ``x``). Each problem follows scipy's bounded
    Brent method with tolerance ``xatol`` and at most ``maxiter`` evaluations.
    """
    runs = [_fminbound(float(lo), float(hi), xatol, maxiter) for lo, hi in bounds]
    return _lockstep(f, runs, nan_ok=True)


def _brentq(xa: float, xb: float, xtol: float, rtol: float, maxiter: int) -> Generator[float, float, float]:
    """scipy's ``brentq`` (its C code, step for step) as a generator (yields x, receives f(x));
    returns the root, or raises ValueError as scipy does."""
    xpre, xcur = xa, xb
    xblk = fblk = spre = scur = 0.0
    fpre = yield xpre
    fcur = yield xcur
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if np.signbit(fpre) == np.signbit(fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and np.signbit(fpre) != np.signbit(fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = yield xcur
    raise ValueError(f"brentq did not converge in {maxiter} iterations")


def roots_many(f: Callable[[np.ndarray, np.ndarray], np.ndarray], brackets: list[tuple[float, float]],
               *, xtol: float, rtol: float, maxiter: int = 100) -> list[float]:
    """A root of ``f(i, x)`` in ``brackets[i]`` for every problem ``i`` by scipy's Brent method
    (``scipy.optimize.brentq`` with ``xtol``, ``rtol``, ``maxiter``), all problems in lockstep:
    ``f(idx, x)`` receives the indices of the running problems and one point for each. A NaN
    value raises ValueError, as scipy does."""
    runs = [_brentq(float(a), float(b), xtol, rtol, maxiter) for a, b in brackets]
    return _lockstep(f, runs)


def _lockstep(f, runs: list, *, nan_ok: bool = False) -> list:
    """Drive generators that yield trial points and receive values, one call of ``f`` per round."""
    results: list = [None] * len(runs)
    idx = np.arange(len(runs))
    x = np.array([next(run) for run in runs], dtype=float)
    while idx.size:
        values = np.asarray(f(idx, x), dtype=float)
        keep, nxt = [], []
        for i, xi, v in zip(idx.tolist(), x.tolist(), values.tolist(), strict=True):
            if v != v and not nan_ok:
                raise ValueError(f"The function value at x={xi:f} is NaN; solver cannot continue.")
            try:
                nxt.append(runs[i].send(v))
                keep.append(i)
            except StopIteration as stop:
                results[i] = stop.value
        idx, x = np.array(keep, dtype=int), np.array(nxt, dtype=float)
    return results
