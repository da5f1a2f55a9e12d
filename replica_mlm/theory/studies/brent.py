"""Many bounded Brent minimisations in lockstep, one vectorised function call per round.

:func:`minimise_many` runs the algorithm of ``scipy.optimize.minimize_scalar(method="bounded")``
(Brent's fminbound: golden section with parabolic steps) for many independent problems at once.
Each problem is a generator that yields its next trial point and receives the function value,
step for step the scipy code, so each problem visits the same points and returns the same
minimiser as scipy would; the function is called once per round on the trial points of all
problems still running (e.g. one vectorised solve of the saddle point over every alpha of a phase
diagram, docs/theory.md, section "Phase diagrams").
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


def _fminbound(x1: float, x2: float, xatol: float, maxfun: int) -> Generator[float, float, Minimum]:
    """scipy's ``_minimize_scalar_bounded`` as a generator (yields x, receives f(x))."""
    flag = 0
    sqrt_eps = sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - sqrt(5.0))
    a, b = x1, x2
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = yield x
    num = 1
    fu = np.inf
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while np.abs(xf - xm) > (tol2 - 0.5 * (b - a)):
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
            rat = golden_mean * e
        si = np.sign(rat) + (rat == 0)
        x = xf + si * np.maximum(np.abs(rat), tol1)
        fu = yield x
        num += 1
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
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * np.abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxfun:
            flag = 1
            break
    if np.isnan(xf) or np.isnan(fx) or np.isnan(fu):
        flag = 2
    return Minimum(x=float(xf), fun=float(fx), nfev=num, success=flag == 0)


def minimise_many(f: Callable[[np.ndarray, np.ndarray], np.ndarray], bounds: list[tuple[float, float]],
                  *, xatol: float, maxiter: int = 500) -> list[Minimum]:
    """Minimise ``f(i, x)[k]`` over ``x`` in ``bounds[i]`` for every problem ``i``.

    ``f(idx, x)`` receives the indices of the running problems and one trial point for each,
    and returns the values there (an array like ``x``). Each problem follows scipy's bounded
    Brent method with tolerance ``xatol`` and at most ``maxiter`` evaluations.
    """
    runs = [_fminbound(float(lo), float(hi), xatol, maxiter) for lo, hi in bounds]
    results: list[Minimum | None] = [None] * len(runs)
    idx = np.arange(len(runs))
    x = np.array([next(run) for run in runs], dtype=float)
    while idx.size:
        values = np.asarray(f(idx, x), dtype=float)
        keep, nxt = [], []
        for i, v in zip(idx.tolist(), values.tolist(), strict=True):
            try:
                nxt.append(runs[i].send(v))
                keep.append(i)
            except StopIteration as stop:
                results[i] = stop.value
        idx, x = np.array(keep, dtype=int), np.array(nxt, dtype=float)
    return results  # type: ignore[return-value]
