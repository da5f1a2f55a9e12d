"""Limited-memory BFGS: the one quasi-Newton driver of the pseudo-likelihood fits.

docs/proteins.md, section "Convergence of the fits".

Used by :func:`replica_mlm.fit_potts` (plm and the factored models of protein families: parameter
vectors of 10^6-10^7 entries, single-precision history) and by
:class:`replica_mlm.learners.plm.FullCouplingPotts`. :meth:`replica_mlm.FactoredAttention.fit`
(small synthetic problems) keeps scipy's L-BFGS-B before its Newton polish
(:mod:`replica_mlm.learners.attention_fit`): on this driver (double-precision history) it reaches
the same minima (objectives equal to 1e-14, couplings to 1e-8 where the polish converges) but
leaves the polish a start from which its Newton-CG branch needs more than its 20 iterations.

:func:`minimize` is the L-BFGS method (Nocedal and Wright, *Numerical Optimization*, 2nd ed.,
algorithm 7.4 and 7.5: the two-loop recursion with the scaling ``gamma = s^T y / y^T y``) with a
line search on the directional derivative, written for the fits of
:func:`replica_mlm.fit_potts`, whose parameter vectors have 10^6-10^7 entries. Two properties
matter there and are why it replaces scipy's L-BFGS-B:

* **Cost per iteration.** scipy's L-BFGS-B handles bound constraints the fits do not have (the
  generalised Cauchy point, the subspace minimisation); at ``n = 6.6e6`` (S1A's plm problem over
  all sites at once) it costs 0.36-0.58 CPU-s per iteration, as much as the objective itself in
  single precision (benchmarks/README.md, "Real protein families"). Here the history pairs
  ``(s, y)`` are kept in single precision and the two loops are BLAS level-1 calls: about 0.1 s.
* **A line search that sees past rounding.** With the objective's big products in single precision
  its value carries rounding of about ``1e-7 |F|``, larger than the decrease an Armijo test asks
  for once ``max|grad| < 1e-4``, while the gradient stays accurate to about ``1e-8``. A step is
  therefore accepted on the *approximate Wolfe* conditions of Hager and Zhang (SIAM J. Optim. 16,
  170 (2005)): ``sigma phi'(0) <= phi'(t) <= (2 delta - 1) phi'(0)`` and ``phi(t) <= phi(0) + eps
  |phi(0)|``, tested on the derivative, or on the usual strong Wolfe conditions. Steps are found by
  safeguarded secant steps on ``phi'`` inside a bracket.

:func:`minimize` never decides convergence; :func:`lbfgs` drives it, with an optional diagonal
preconditioner, and stops on the gradient in the original variables (or on a plateau of ``F``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas

__all__ = ["MAXCOR", "LBFGSResult", "LineSearchFailed", "double_finish_steps", "drive", "lbfgs",
           "lbfgs_steps", "lbfgs_with_double_finish", "minimize", "minimize_steps"]

#: sufficient-decrease and curvature constants (Nocedal-Wright's usual choices for quasi-Newton)
C1, SIGMA = 1e-4, 0.9
#: relative rounding allowance of the approximate-Wolfe test (Hager-Zhang's epsilon)
EPS_F = 1e-6
#: evaluations of one line search at most
MAX_EVAL = 20
#: L-BFGS history length of :func:`lbfgs` (memory: about ``2 MAXCOR`` copies of the parameter vector)
MAXCOR = 10
#: iterations without a new smallest gradient nor a fall of F after which :func:`lbfgs` gives up
STALL = 25


@dataclass
class LBFGSResult:
    """What :func:`lbfgs` returns: the last accepted iterate ``x``, ``fun`` and ``jac`` there (in
    ``x``), the iterations ``nit`` and why it stopped (``stop``). (A dataclass rather than scipy's
    ``OptimizeResult``: importing scipy.optimize costs every fitting process 19 MB.)"""

    x: np.ndarray
    fun: float
    jac: np.ndarray
    nit: int
    stop: str


class LineSearchFailed(Exception):
    """No acceptable step within :data:`MAX_EVAL` evaluations (rounding noise, or not a descent)."""


@dataclass
class _History:
    """The last ``m`` pairs ``s = x_{k+1} - x_k``, ``y = g_{k+1} - g_k`` (float32 or float64)."""

    S: np.ndarray
    Y: np.ndarray
    rho: np.ndarray
    count: int = 0
    newest: int = -1
    p: np.ndarray | None = None  # the direction's float64 array, reused from one iteration to the next

    @classmethod
    def empty(cls, m: int, n: int, dtype=np.float32) -> _History:
        return cls(np.zeros((m, n), dtype), np.zeros((m, n), dtype), np.zeros(m))

    def push(self, s: np.ndarray, y: np.ndarray, sy: float) -> None:
        self.newest = (self.newest + 1) % self.S.shape[0]
        self.S[self.newest] = s
        self.Y[self.newest] = y
        self.rho[self.newest] = 1.0 / sy
        self.count = min(self.count + 1, self.S.shape[0])

    def direction(self, g: np.ndarray) -> np.ndarray:
        """``-H g`` by the two-loop recursion (vectors in the history's precision, float64 scalars).

        Written into the same float64 array at every call (the caller is done with the previous
        direction by then)."""
        m = self.S.shape[0]
        order = [(self.newest - k) % m for k in range(self.count)]  # newest first
        dot, axpy = blas.get_blas_funcs(("dot", "axpy"), dtype=self.S.dtype)
        q = g.astype(self.S.dtype)  # a copy: the in-place updates below never touch g
        a = np.zeros(m)
        for i in order:
            a[i] = self.rho[i] * float(dot(self.S[i], q))
            q = axpy(self.Y[i], q, a=-a[i])
        if self.count:
            yy = float(dot(self.Y[self.newest], self.Y[self.newest]))
            q *= self.S.dtype.type(1.0 / (self.rho[self.newest] * yy))
        for i in reversed(order):
            b = self.rho[i] * float(dot(self.Y[i], q))
            q = axpy(self.S[i], q, a=a[i] - b)
        if self.p is None:
            self.p = np.empty(q.size)
        np.copyto(self.p, q)
        del q
        return np.negative(self.p, out=self.p)


def _line_search(x, f0, g0, p, t, rounding=EPS_F):
    """A step ``t`` along ``p`` with (approximate) Wolfe conditions; returns ``(t, f, g)``.

    A generator: yields each trial point and is sent the objective and gradient there
    (:func:`minimize_steps`).

    ``rounding``: the relative rounding of ``f`` allowed by the approximate-Wolfe test; 0: the
    strong Wolfe conditions only (an objective in double precision, whose decrease is seen)."""
    d0 = float(g0 @ p)
    if not d0 < 0.0:
        raise LineSearchFailed("not a descent direction")
    lo, hi = (0.0, d0), None  # (t, phi'(t)) with phi' < 0, and the first t past the minimum
    trial = np.empty_like(x)  # x + t p, written into the same array at every evaluation
    for _ in range(MAX_EVAL):
        np.multiply(p, t, out=trial)
        f, g = yield np.add(trial, x, out=trial)
        d = float(g @ p)
        f_ok = bool(np.isfinite(f)) and f <= f0 + rounding * abs(f0)
        armijo = bool(np.isfinite(f)) and f <= f0 + C1 * t * d0
        strong_wolfe = armijo and abs(d) <= -SIGMA * d0
        approx_wolfe = rounding > 0 and f_ok and SIGMA * d0 <= d <= (2.0 * C1 - 1.0) * d0
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


def drive(steps, fun):
    """Run the generator ``steps`` (:func:`minimize_steps`, :func:`lbfgs_steps`, ...) on ``fun``:
    send it ``fun(point)`` for every point it yields; return what it returns."""
    try:
        point = next(steps)
        while True:
            point = steps.send(fun(point))
    except StopIteration as done:
        return done.value


def minimize(fg, x0: np.ndarray, *, max_iter: int, memory: int = 10, callback=None,
             history=np.float32, rounding: float = EPS_F, copy: bool = True):
    """Minimise ``fg(x) -> (f, grad)`` from ``x0`` by L-BFGS (module docstring).

    ``fg`` may overwrite its argument (it is always an array of its own: no parameter-sized copy is
    kept alive while the objective runs); ``copy=False`` iterates in ``x0`` itself (an array of
    the caller's own, overwritten).

    ``callback(x, f, g)`` after each iteration may raise to stop; ``x`` and ``g`` are
    overwritten in place by the next iteration (copy them to keep them). ``history``: the precision of
    the stored pairs (float32 for the large fits, float64 for small ones); ``rounding``: the
    relative rounding of ``f`` the line search allows (:data:`EPS_F` for objectives with products
    in single precision; 0, strong Wolfe steps only, for ones in double). Returns ``(x, f, g,
    nit, stop)`` with ``stop`` in ``{"max_iter", "other"}`` (``"other"``: the line search failed;
    the last accepted iterate is returned).
    """
    return drive(minimize_steps(x0, max_iter=max_iter, memory=memory, callback=callback,
                                history=history, rounding=rounding, copy=copy), fg)


def minimize_steps(x0: np.ndarray, *, max_iter: int, memory: int = 10, callback=None,
                   history=np.float32, rounding: float = EPS_F, copy: bool = True):
    """:func:`minimize` as a generator: yields the points where it needs ``(f, grad)`` and is sent
    them, so that a caller can evaluate several independent minimisations in one batch
    (:func:`replica_mlm.proteins.plm_fit.fit_site_by_site`); returns what :func:`minimize` returns."""
    x = np.array(x0, dtype=float, copy=copy or None)
    f, g = yield x.copy()
    hist = _History.empty(memory, x.size, history)
    for nit in range(max_iter):
        p = hist.direction(g) if hist.count else -g
        t0 = 1.0 if hist.count else min(1.0, 1.0 / max(float(np.max(np.abs(g))), 1e-300))
        try:
            t, f_new, g_new = yield from _line_search(x, f, g, p, t0, rounding)
        except LineSearchFailed:
            return x, f, g, nit, "other"
        # s = t p, y = g_new - g, x + s, written over p, g and x (no longer needed): the
        # same numbers without three parameter-sized temporaries
        s = np.multiply(p, t, out=p)
        y = np.subtract(g_new, g, out=g)
        del p, g
        sy = float(s @ y)
        if sy > 1e-12 * float(np.sqrt((s @ s) * (y @ y))):  # keep H positive definite
            hist.push(s, y, sy)
        x = np.add(x, s, out=x)  # x is minimize's own copy of x0
        del s, y
        f, g = f_new, g_new
        if callback is not None:
            callback(x, f, g)
    return x, f, g, max_iter, "max_iter"


def _max_abs_ratio(g: np.ndarray, s: np.ndarray, block: int = 1 << 16) -> float:
    """``max |g / s|``, a block at a time (no parameter-sized temporaries; the max is exact)."""
    return max(float(np.max(np.abs(g[k:k + block] / s[k:k + block]))) for k in range(0, g.size, block))


class _Stop(Exception):
    """Raised by :func:`lbfgs`'s callback to stop (``reason``: "gradient" or "objective")."""

    def __init__(self, reason: str, y, f, g, nit: int) -> None:
        super().__init__(reason)
        self.reason, self.y, self.f, self.g, self.nit = reason, y, f, g, nit


def lbfgs(fun, x0: np.ndarray, *, max_iter: int, tol: float, ftol: float | None = None,
          window: int = 10, scale: np.ndarray | None = None, memory: int = MAXCOR,
          history=np.float32, rounding: float = EPS_F, callback=None, tick=None) -> LBFGSResult:
    """L-BFGS (:func:`minimize`) on ``fun(x) -> (F, grad)``, stopped on the gradient in ``x``.

    ``fun`` must return a new gradient array at every call (it is scaled in place).

    Minimises over ``y = x / scale`` (``scale`` None: ones; a diagonal preconditioner) and stops
    on the gradient in the *original* variables ``x``, so that ``tol`` keeps its meaning whatever
    the scaling: at ``max|grad_x| <= tol`` (``stop="gradient"``), after ``max_iter`` iterations
    (``"max_iter"``), or, if ``ftol`` is given, when ``F`` fell by less than ``ftol * max(|F|,
    1)`` over the last ``window`` iterations (``"objective"``; a plateau, not a convergence
    test; ``window=1`` is scipy's ``ftol`` rule); ``"other"`` is a line search that found no
    acceptable step, or :data:`STALL` iterations without a new smallest ``max|grad_x|`` over which
    ``F`` fell by less than its rounding allowance ``rounding |F|`` (default :data:`EPS_F`, the
    rounding of ``F`` and ``grad`` in single precision: the caller then finishes in double; a
    non-convex fit whose gradient wanders while ``F`` still falls goes on). ``memory``,
    ``history`` and ``rounding``: the number and precision of the stored pairs and the line
    search's rounding allowance (:func:`minimize`). ``callback(x)`` is called with every
    accepted iterate (in ``x``); ``tick()`` too, without it (a progress bar: no parameter-sized
    array is built for it).
    Returns ``x``, ``fun``, ``jac`` (in ``x``), ``nit`` and ``stop`` of the last accepted iterate.
    """
    return drive(lbfgs_steps(x0, max_iter=max_iter, tol=tol, ftol=ftol, window=window, scale=scale,
                             memory=memory, history=history, rounding=rounding, callback=callback,
                             tick=tick), fun)


def lbfgs_steps(x0: np.ndarray, *, max_iter: int, tol: float, ftol: float | None = None,
                window: int = 10, scale: np.ndarray | None = None, memory: int = MAXCOR,
                history=np.float32, rounding: float = EPS_F, callback=None, tick=None):
    """:func:`lbfgs` as a generator (:func:`minimize_steps`): yields points in ``x``, is sent
    ``(F, grad)`` there (a new gradient array each time: it is scaled in place), returns the
    :class:`LBFGSResult`."""
    s = np.ones(x0.size) if scale is None else np.asarray(scale, dtype=float)
    trace: list[float] = []
    best = {"g": np.inf, "at": 0}

    def watch(y, f, gy):
        trace.append(f)
        if tick is not None:
            tick()
        if callback is not None:
            callback(s * y)
        gmax = _max_abs_ratio(gy, s)
        if gmax <= tol:
            raise _Stop("gradient", y, f, gy, len(trace))
        if gmax < best["g"]:
            best.update(g=gmax, at=len(trace))
        elif len(trace) - best["at"] >= STALL and trace[-STALL - 1] - f <= rounding * abs(f):
            raise _Stop("other", y, f, gy, len(trace))
        if ftol is not None and len(trace) > window:
            drop = trace[-window - 1] - trace[-1]
            if drop < ftol * max(abs(trace[-1]), 1.0):
                raise _Stop("objective", y, f, gy, len(trace))

    f0, g0 = yield x0
    if float(np.max(np.abs(g0))) <= tol:
        return LBFGSResult(x=x0.copy(), fun=f0, jac=g0, nit=0, stop="gradient")
    del g0  # not needed by the iterations: one parameter-sized array less while they run
    steps = minimize_steps(x0 / s, max_iter=max_iter, memory=memory, copy=False, callback=watch,
                           history=history, rounding=rounding)
    try:  # minimize's trial point y and the new gradient g scaled in place (the same numbers
        y = next(steps)  # as s * y and s * g)
        while True:
            f, g = yield np.multiply(y, s, out=y)
            y = steps.send((f, np.multiply(g, s, out=g)))
    except StopIteration as done:
        y, f, gy, nit, stop = done.value
    except _Stop as halt:
        y, f, gy, nit, stop = halt.y, halt.f, halt.g, halt.nit, halt.reason
    return LBFGSResult(x=s * y, fun=f, jac=gy / s, nit=int(nit), stop=stop)


def lbfgs_with_double_finish(problem, x0: np.ndarray, scale, dtype, *, max_iter: int, tol: float,
                             ftol: float | None, memory: int = MAXCOR, tick=None) -> tuple:
    """``(result, iterations in double)``: :func:`lbfgs` on ``problem.loss_grad`` from ``x0``.

    ``problem`` computes its big products in ``dtype`` and switches with ``set_dtype``: a
    single-precision run gets its final objective and gradient in double, and is finished in
    double with the iterations left if it stopped short of ``tol`` (:func:`double_finish_steps`).
    ``tick()`` after every iteration (a progress bar).
    """
    def fun(request):
        x, precision = request
        problem.set_dtype(precision)
        return problem.loss_grad(x)

    return drive(double_finish_steps(x0, scale, dtype, max_iter=max_iter, tol=tol, ftol=ftol,
                                     memory=memory, tick=tick), fun)


def double_finish_steps(x0: np.ndarray, scale, dtype, *, max_iter: int, tol: float,
                        ftol: float | None, memory: int = MAXCOR, tick=None):
    """:func:`lbfgs_with_double_finish` as a generator: yields ``(x, precision)``, the point and
    the precision (a ``numpy.dtype``) of the products the objective is wanted in, and is sent
    ``(F, grad)``."""
    dtype = np.dtype(dtype)

    def in_precision(steps, precision):
        try:
            x = next(steps)
            while True:
                x = steps.send((yield x, precision))
        except StopIteration as done:
            return done.value

    double = np.dtype(np.float64)
    res = yield from in_precision(lbfgs_steps(x0, max_iter=max_iter, tol=tol, ftol=ftol, scale=scale,
                                              memory=memory, tick=tick), dtype)
    n_double = 0
    if dtype != double:  # the reported gradient is in double; finish there if needed
        res.jac = None  # replaced by the gradient in double: one parameter-sized array less meanwhile
        res.fun, res.jac = yield res.x, double
        if res.stop in ("other", "gradient") and float(np.max(np.abs(res.jac))) > tol and res.nit < max_iter:
            first = res.nit
            res = yield from in_precision(lbfgs_steps(res.x, max_iter=max_iter - first, tol=tol, ftol=ftol,
                                                      scale=scale, memory=memory, tick=tick), double)
            n_double = int(res.nit)
            res.nit = first + n_double
    return res, n_double
