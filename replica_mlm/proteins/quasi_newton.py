"""Limited-memory BFGS for the Potts fits at millions of variables.

docs/proteins.md, section "Convergence of the fits".

:func:`minimize` is the L-BFGS method (Nocedal and Wright, *Numerical Optimization*, 2nd ed.,
algorithm 7.4 and 7.5: the two-loop recursion with the scaling ``gamma = s^T y / y^T y``) with a
line search on the directional derivative, written for the fits of
:func:`replica_mlm.fit_potts`, whose parameter vectors have 10^6-10^7 entries. Two properties
matter there and are why it replaces scipy's L-BFGS-B:

* **Cost per iteration.** scipy's L-BFGS-B handles bound constraints the fits do not have (the
  generalised Cauchy point, the subspace minimisation); at ``n = 6.6e6`` (S1A's plm problem) it
  costs 0.36-0.58 CPU-s per iteration, as much as the objective itself in single precision
  (benchmarks/README.md, "Real protein families"). Here the history pairs ``(s, y)`` are kept in
  single precision and the two loops are BLAS level-1 calls: about 0.1 s.
* **A line search that sees past rounding.** With the objective's big products in single precision
  its value carries rounding of about ``1e-7 |F|``, larger than the decrease an Armijo test asks
  for once ``max|grad| < 1e-4``, while the gradient stays accurate to about ``1e-8``. A step is
  therefore accepted on the *approximate Wolfe* conditions of Hager and Zhang (SIAM J. Optim. 16,
  170 (2005)): ``sigma phi'(0) <= phi'(t) <= (2 delta - 1) phi'(0)`` and ``phi(t) <= phi(0) + eps
  |phi(0)|``, tested on the derivative, or on the usual strong Wolfe conditions. Steps are found by
  safeguarded secant steps on ``phi'`` inside a bracket.

Convergence is decided by the caller on the gradient (:func:`replica_mlm.proteins.fit_convergence
.lbfgs`), never by this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas

__all__ = ["LineSearchFailed", "minimize"]

#: sufficient-decrease and curvature constants (Nocedal-Wright's usual choices for quasi-Newton)
C1, SIGMA = 1e-4, 0.9
#: relative rounding allowance of the approximate-Wolfe test (Hager-Zhang's epsilon)
EPS_F = 1e-6
#: evaluations of one line search at most
MAX_EVAL = 20


class LineSearchFailed(Exception):
    """No acceptable step within :data:`MAX_EVAL` evaluations (rounding noise, or not a descent)."""


@dataclass
class _History:
    """The last ``m`` pairs ``s = x_{k+1} - x_k``, ``y = g_{k+1} - g_k`` in single precision."""

    S: np.ndarray
    Y: np.ndarray
    rho: np.ndarray
    count: int = 0
    newest: int = -1

    @classmethod
    def empty(cls, m: int, n: int) -> _History:
        return cls(np.zeros((m, n), np.float32), np.zeros((m, n), np.float32), np.zeros(m))

    def push(self, s: np.ndarray, y: np.ndarray, sy: float) -> None:
        self.newest = (self.newest + 1) % self.S.shape[0]
        self.S[self.newest] = s
        self.Y[self.newest] = y
        self.rho[self.newest] = 1.0 / sy
        self.count = min(self.count + 1, self.S.shape[0])

    def direction(self, g: np.ndarray) -> np.ndarray:
        """``-H g`` by the two-loop recursion (float32 vectors, float64 scalars)."""
        m = self.S.shape[0]
        order = [(self.newest - k) % m for k in range(self.count)]  # newest first
        q = g.astype(np.float32)
        a = np.zeros(m)
        for i in order:
            a[i] = self.rho[i] * float(blas.sdot(self.S[i], q))
            q = blas.saxpy(self.Y[i], q, a=-a[i])
        if self.count:
            yy = float(blas.sdot(self.Y[self.newest], self.Y[self.newest]))
            q *= np.float32(1.0 / (self.rho[self.newest] * yy))
        for i in reversed(order):
            b = self.rho[i] * float(blas.sdot(self.Y[i], q))
            q = blas.saxpy(self.S[i], q, a=a[i] - b)
        return -q.astype(np.float64)


def _line_search(fg, x, f0, g0, p, t):
    """A step ``t`` along ``p`` with (approximate) Wolfe conditions; returns ``(t, f, g)``."""
    d0 = float(g0 @ p)
    if not d0 < 0.0:
        raise LineSearchFailed("not a descent direction")
    lo, hi = (0.0, d0), None  # (t, phi'(t)) with phi' < 0, and the first t past the minimum
    for _ in range(MAX_EVAL):
        f, g = fg(x + t * p)
        d = float(g @ p)
        f_ok = bool(np.isfinite(f)) and f <= f0 + EPS_F * abs(f0)
        armijo = bool(np.isfinite(f)) and f <= f0 + C1 * t * d0
        strong_wolfe = armijo and abs(d) <= -SIGMA * d0
        approx_wolfe = f_ok and SIGMA * d0 <= d <= (2.0 * C1 - 1.0) * d0
        if strong_wolfe or approx_wolfe:
            return t, f, g
        if d < 0.0 and (armijo or f_ok):
            lo = (t, d)  # still going down: the minimum along p lies further
        else:
            hi = (t, d if np.isfinite(f) else np.inf)
        if hi is None:
            t *= 4.0
            continue
        # secant step on phi' between lo and hi, kept inside the middle of the bracket
        (ta, da), (tb, db) = lo, hi
        t_sec = ta - da * (tb - ta) / (db - da) if np.isfinite(db) and db > da else 0.5 * (ta + tb)
        width = tb - ta
        t = min(max(t_sec, ta + 0.1 * width), tb - 0.1 * width)
    raise LineSearchFailed(f"no acceptable step in {MAX_EVAL} evaluations")


def minimize(fg, x0: np.ndarray, *, max_iter: int, memory: int = 10, callback=None):
    """Minimise ``fg(x) -> (f, grad)`` from ``x0`` by L-BFGS (module docstring).

    ``callback(x, f, g)`` after each iteration may raise to stop. Returns ``(x, f, g, nit,
    stop)`` with ``stop`` in ``{"max_iter", "other"}`` (``"other"``: the line search failed; the
    last accepted iterate is returned).
    """
    x = np.array(x0, dtype=float)
    f, g = fg(x)
    hist = _History.empty(memory, x.size)
    for nit in range(max_iter):
        p = hist.direction(g) if hist.count else -g
        t0 = 1.0 if hist.count else min(1.0, 1.0 / max(float(np.max(np.abs(g))), 1e-300))
        try:
            t, f_new, g_new = _line_search(fg, x, f, g, p, t0)
        except LineSearchFailed:
            return x, f, g, nit, "other"
        s = t * p
        y = g_new - g
        sy = float(s @ y)
        if sy > 1e-12 * float(np.sqrt((s @ s) * (y @ y))):  # keep H positive definite
            hist.push(s, y, sy)
        x = x + s
        f, g = f_new, g_new
        if callback is not None:
            callback(x, f, g)
    return x, f, g, max_iter, "max_iter"
