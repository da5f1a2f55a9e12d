"""The two number systems of the reduced solver: float64 numpy arrays, and mpmath at any precision.

:func:`.root.solve_reduced` is written once, over arrays of points; a :class:`Backend` supplies
what differs between the two systems: the array type (float64, or numpy object arrays of
``mpmath.mpf``), the few elementwise functions numpy has no object version of, how compiled
functions and spectral sums are evaluated, and the constants that say when a number is exact
at the working precision (unit roundoff, the strong-ridge and least-squares thresholds, the
Newton stopping rule and the residual of a converged point).
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from replica_mlm.theory.symbolic.compiled import (
    compiled,
    compiled_estimation,
    compiled_sums,
    ratios_at,
    sum_terms,
)

EPS = np.finfo(float).eps
#: float64 sums at up to this many kappa values are taken one kappa at a time (:meth:`Backend.sums`)
FEW = 4
#: per float64 spectrum: (omega_min, omega_max, ascending, omega as a list if ascending)
_EXTREMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def extremes(spec) -> tuple:
    """``(omega.min(), omega.max(), ascending, modes)`` of a (read-only) float64 spectrum, computed
    once, as Python floats; ``ascending``: omega sorted from small to large (as ``eigh`` returns
    it); ``modes``: then omega as a list (to find where a kappa splits it), else None."""
    found = _EXTREMES.get(spec)
    if found is None:
        w = spec.omega
        ascending = bool(np.all(w[1:] >= w[:-1]))
        found = _EXTREMES[spec] = (float(w.min()), float(w.max()), ascending,
                                   w.tolist() if ascending else None)
    return found


def ratios(spec, k: float, found: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ratios ``(x, y)`` of the summands at one float64 ``k`` (:func:`.compiled.ratios_at`,
    the same numbers as :func:`.compiled.compiled_sums` uses), with the spectrum's extremes cached
    (``found``: :func:`extremes` of ``spec`` where the caller holds them, saving the lookup)."""
    low, top, ascending, modes = extremes(spec) if found is None else found
    if ascending and low < k <= top:
        return ratios_at(k, spec.omega, low, top, ascending=True, split=bisect.bisect_left(modes, k))
    return ratios_at(k, spec.omega, low, top, ascending=ascending)


def pick(cond: np.ndarray, fn, other, *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)`` where ``cond``, ``other`` elsewhere, with ``fn`` evaluated only where
    ``cond`` holds (an mpmath division by zero raises where numpy would return inf)."""
    out = np.array(np.broadcast_to(other, cond.shape), dtype=arrays[0].dtype)
    if cond.any():
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out[cond] = fn(*(a[cond] for a in arrays))
    return out


@dataclass(frozen=True)
class Backend:
    """Numbers and constants of one precision (see the module docstring).

    Attributes
    ----------
    name : {"numpy", "mpmath"}
        The module the compiled functions are lambdified for.
    dtype : type
        ``float`` or ``object`` (``mpmath.mpf`` elements).
    eps : number
        Unit roundoff at the working precision.
    large : number
        ``kappa >= large * omega_max``: the first order in 1/kappa is exact (``2^(bits + 7)``).
    tiny : number
        ``lam / (alpha - 1) <= tiny * omega_min`` (alpha > 1): kappa = 0 is exact (float64: a
        change of relative size 2^-800; mpmath, with no exponent range: lam = 0 only).
    step_tol, g_tol : number
        Newton stops at a relative step ``<= step_tol`` or ``|G| <= g_tol`` times its largest term.
    residual_tol : number
        Largest raw-equation residual of a converged point.
    table : int
        Nodes of the geometric table of G that gives Newton its starting points (0: start at the
        lower bound; at high precision each node costs a full spectral sum).
    max_iter : int
        Newton steps before :class:`.root.NewtonFailure`.
    rescale : bool
        Whether hats below 2^-900 are rescaled for the residual (float64 only: mpmath has no
        underflow).
    """

    name: str
    dtype: Any
    eps: Any
    large: Any
    tiny: Any
    step_tol: Any
    g_tol: Any
    residual_tol: Any
    table: int
    max_iter: int
    rescale: bool

    @property
    def inf(self):
        return np.inf if self.name == "numpy" else mpmath.inf

    @property
    def fns(self):
        """The compiled equations (:func:`.compiled.compiled`) for this backend."""
        return compiled(self.name)

    def array(self, x) -> np.ndarray:
        """``x`` as a 1-d array of this backend's numbers."""
        if self.name == "numpy":
            return np.array(x, dtype=float).ravel()
        return np.array([mpmath.mpf(v) for v in np.ravel(np.asarray(x, dtype=object))], dtype=object)

    def full(self, n: int, value) -> np.ndarray:
        if self.name == "numpy":
            return np.full(n, float(value))
        out = np.empty(n, dtype=object)
        out[:] = [mpmath.mpf(value)] * n
        return out

    def call(self, fn: Callable, **args) -> np.ndarray:
        """A compiled function elementwise over broadcast arrays, by keyword; a division by zero
        (which numpy turns into inf or NaN) is NaN in both backends and overwritten by the caller.
        float64: the caller holds ``np.errstate`` with divide, invalid and over ignored
        (:func:`.root.solve_reduced` does, for the whole solve)."""
        if self.name == "numpy":
            return fn(**args)
        names = list(args)

        def one(*values):
            try:
                return fn(**dict(zip(names, values, strict=True)))
            except ZeroDivisionError:
                return mpmath.nan

        return np.frompyfunc(one, len(names), 1)(*args.values())

    def _map(self, fn: Callable, *x):
        return np.frompyfunc(fn, len(x), 1)(*x)

    def sqrt(self, x):
        return np.sqrt(x) if self.name == "numpy" else self._map(mpmath.sqrt, x)

    def hypot(self, x, y):
        return np.hypot(x, y) if self.name == "numpy" else self._map(mpmath.hypot, x, y)

    def isfinite(self, x):
        if self.name == "numpy":
            return np.isfinite(x)
        return np.asarray(self._map(mpmath.isfinite, x), dtype=bool)

    def isnan(self, x):
        if self.name == "numpy":
            return np.isnan(x)
        return np.asarray(self._map(mpmath.isnan, x), dtype=bool)

    def moment(self, spec, weights: str, k: int):
        """``sum_j weight_j omega_j^k`` for ``weights`` in {"bulk", "teacher"}."""
        if self.name == "numpy":
            return spec.moment(weights, k)  # cached on the (read-only) spectrum
        ws = spec.bulk if weights == "bulk" else spec.teacher
        return mpmath.fsum(x * w**k for x, w in zip(ws, spec.omega, strict=True))

    def sums(self, spec, names, kappa: np.ndarray, chunk: int = 1 << 16) -> dict[str, np.ndarray]:
        """``{name: sum over modes of the summand at each kappa}`` for the sums of ``reduce()``."""
        names = tuple(names)
        fn = compiled_sums(names, self.name)
        out = {name: np.empty(kappa.shape, dtype=self.dtype) for name in names}
        if self.name == "numpy" and kappa.size <= FEW:  # one kappa at a time: no broadcasting
            terms, w, b, c = sum_terms(names), spec.omega, spec.bulk, spec.teacher
            for i, k in enumerate(kappa.ravel().tolist()):
                x, y = ratios(spec, k)
                for name, val in zip(names, terms(w, b, c, x, y), strict=True):
                    if np.shape(val) != w.shape:
                        val = np.broadcast_to(val, w.shape)
                    out[name].flat[i] = np.add.reduce(val)  # as a row of the block below
            return out
        if self.name == "numpy":
            rows = max(1, chunk // spec.omega.size)
            for start in range(0, kappa.size, rows):
                k = kappa[start:start + rows, None]
                shape = (k.shape[0], spec.omega.size)
                for name, val in zip(names, fn(spec.omega, spec.bulk, spec.teacher, k), strict=True):
                    if np.shape(val) != shape:
                        val = np.broadcast_to(val, shape)
                    out[name][start:start + rows] = val.sum(axis=1)
            return out
        for i, k in enumerate(kappa):
            totals = [mpmath.mpf(0)] * len(names)
            for w, b, c in zip(spec.omega, spec.bulk, spec.teacher, strict=True):
                totals = [t + v for t, v in zip(totals, fn(w, b, c, k), strict=True)]
            for name, total in zip(names, totals, strict=True):
                out[name][i] = total
        return out

    def estimation_sum(self, spec, kappa, eg, alpha):
        """Sum over modes of the reduced estimation-error summand at one point."""
        fn = compiled_estimation(self.name)[1]
        if self.name == "numpy":
            return np.sum(np.broadcast_to(fn(spec.omega, spec.bulk, spec.teacher, kappa, eg, alpha),
                                          spec.omega.shape))
        return mpmath.fsum(fn(w, b, c, kappa, eg, alpha)
                           for w, b, c in zip(spec.omega, spec.bulk, spec.teacher, strict=True))

    def estimation_sums(self, spec, kappa, eg, alpha, chunk: int = 1 << 16) -> np.ndarray:
        """:meth:`estimation_sum` at every point of the 1-d arrays ``kappa``, ``eg``, ``alpha``
        (float64: a block of points at a time, the same sums row by row; mpmath: point by point)."""
        if self.name != "numpy":
            return np.array([self.estimation_sum(spec, *v) for v in zip(kappa, eg, alpha, strict=True)],
                            dtype=object)
        fn = compiled_estimation(self.name)[1]
        out = np.empty(np.size(kappa))
        rows = max(1, chunk // spec.omega.size)
        for start in range(0, out.size, rows):
            sl = slice(start, start + rows)
            shape = (out[sl].size, spec.omega.size)
            val = fn(spec.omega, spec.bulk, spec.teacher, kappa[sl, None], eg[sl, None], alpha[sl, None])
            out[sl] = np.broadcast_to(val, shape).sum(axis=1)
        return out


#: float64, vectorised over points and modes
NUMPY = Backend(name="numpy", dtype=float, eps=EPS, large=2.0**60, tiny=2.0**-800,
                step_tol=4 * EPS, g_tol=8 * EPS, residual_tol=256 * EPS, table=128, max_iter=100,
                rescale=True)


def mpmath_backend(dps: int, guard: int) -> Backend:
    """The mpmath backend for ``dps`` significant digits with ``guard`` more digits of working
    precision; call it (and the solver) inside ``mpmath.workdps(dps + guard)``."""
    eps = mpmath.eps
    return Backend(name="mpmath", dtype=object, eps=eps, large=mpmath.mpf(2) ** (mpmath.mp.prec + 7),
                   tiny=mpmath.mpf(0), step_tol=mpmath.mpf(10) ** (-(dps + guard // 2)),
                   g_tol=8 * eps, residual_tol=mpmath.mpf(10) ** -dps, table=0, max_iter=2000,
                   rescale=False)
