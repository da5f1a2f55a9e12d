"""The L-BFGS driver of :func:`replica_mlm.fit_potts` and what its convergence proves.

:func:`lbfgs` runs L-BFGS (:mod:`replica_mlm.proteins.quasi_newton`) on ``y = x / scale`` (a
diagonal preconditioner; the plm problem supplies one, :mod:`replica_mlm.proteins.plm_fit`) and
stops on the gradient in the *original* variables ``x``, so that ``tol`` keeps its meaning (a
frequency mismatch, see :class:`replica_mlm.proteins.potts_fit.PottsFit`) whatever the scaling.

:func:`plm_certificate` turns a plmDCA gradient into a bound on the distance to the optimum: the
penalised objective ``F(h, W)`` (W off the diagonal blocks) is strongly convex with modulus ``mu =
min(2 lambda_h, lambda_J)`` (a sum of log-sum-exp of linear forms, convex, plus the two quadratic
penalties), so at any point

    |(h, W) - (h*, W*)|_2 <= |grad F|_2 / mu,        F - F* <= |grad F|_2^2 / (2 mu),

with the gradient taken over all of ``(h, W)``. Symmetrising and the zero-sum gauge are orthogonal
projections, so the same bound holds for ``J - J*`` and, through the triangle inequality, for the
vector of the pairs' Frobenius scores before the APC (docs/proteins.md, "Convergence of the fits").
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from replica_mlm.proteins import quasi_newton
from replica_mlm.proteins.plm_objective import PseudoLikelihood

__all__ = ["lbfgs", "plm_certificate"]

#: L-BFGS history length (memory: about ``2 MAXCOR`` copies of the parameter vector)
MAXCOR = 10
#: iterations without a new smallest gradient nor a fall of F after which :func:`lbfgs` gives up
STALL = 25


class _Stop(Exception):
    """Raised by :func:`lbfgs`'s callback to stop (``reason``: "gradient" or "objective")."""

    def __init__(self, reason: str, y, f, g, nit: int) -> None:
        super().__init__(reason)
        self.reason, self.y, self.f, self.g, self.nit = reason, y, f, g, nit


def lbfgs(fun, x0: np.ndarray, *, max_iter: int, tol: float, ftol: float | None = None,
          window: int = 10, scale: np.ndarray | None = None) -> optimize.OptimizeResult:
    """L-BFGS (:func:`replica_mlm.proteins.quasi_newton.minimize`) on ``fun(x) -> (F, grad)``.

    Minimises over ``y = x / scale`` (``scale`` None: ones). Stops at ``max|grad_x| <= tol``
    (``stop="gradient"``), after ``max_iter`` iterations (``"max_iter"``), or, if ``ftol`` is
    given, when ``F`` fell by less than ``ftol * max(|F|, 1)`` over the last ``window`` iterations
    (``"objective"``; a plateau, not a convergence test); ``"other"`` is a line search that found
    no acceptable step, or :data:`STALL` iterations without a new smallest ``max|grad_x|`` over
    which ``F`` fell by less than its rounding allowance ``quasi_newton.EPS_F |F|`` (the rounding
    of ``F`` and ``grad`` in single precision: the caller then finishes in double; a non-convex
    fit whose gradient wanders while ``F`` still falls goes on).
    Returns ``x``, ``fun``, ``jac`` (in ``x``), ``nit`` and ``stop`` of the last accepted iterate.
    """
    s = np.ones(x0.size) if scale is None else np.asarray(scale, dtype=float)
    history: list[float] = []
    best = {"g": np.inf, "at": 0}

    def fg(y):
        f, g = fun(s * y)
        return f, s * g

    def callback(y, f, gy):
        history.append(f)
        gmax = float(np.max(np.abs(gy / s)))
        if gmax <= tol:
            raise _Stop("gradient", y, f, gy, len(history))
        if gmax < best["g"]:
            best.update(g=gmax, at=len(history))
        elif (len(history) - best["at"] >= STALL
              and history[-STALL - 1] - f <= quasi_newton.EPS_F * abs(f)):
            raise _Stop("other", y, f, gy, len(history))
        if ftol is not None and len(history) > window:
            drop = history[-window - 1] - history[-1]
            if drop < ftol * max(abs(history[-1]), 1.0):
                raise _Stop("objective", y, f, gy, len(history))

    f0, g0 = fun(x0)
    if float(np.max(np.abs(g0))) <= tol:
        return optimize.OptimizeResult(x=x0.copy(), fun=f0, jac=g0, nit=0, stop="gradient")
    try:
        y, f, gy, nit, stop = quasi_newton.minimize(fg, x0 / s, max_iter=max_iter, memory=MAXCOR,
                                                    callback=callback)
    except _Stop as halt:
        y, f, gy, nit, stop = halt.y, halt.f, halt.g, halt.nit, halt.reason
    return optimize.OptimizeResult(x=s * y, fun=f, jac=gy / s, nit=int(nit), stop=stop)


def plm_certificate(data: PseudoLikelihood, h: np.ndarray, W: np.ndarray, lambda_h: float,
                    lambda_J: float) -> dict:
    """Gradient norm of plmDCA's ``F`` at ``(h, W)`` in double precision and the bounds it proves.

    Parameters
    ----------
    data : PseudoLikelihood
    h : ndarray (L, q)
        Fields.
    W : ndarray (L, L, q, q)
        Raw (asymmetric) couplings, diagonal blocks ignored.
    lambda_h, lambda_J : float
        The penalties of :func:`replica_mlm.fit_potts`.

    Returns
    -------
    dict
        ``grad_l2`` (|grad F|_2 over all of h and the off-diagonal W), ``mu`` (the strong
        convexity modulus ``min(2 lambda_h, lambda_J)``), ``distance_bound`` (``grad_l2 / mu``)
        and ``gap_bound`` (``grad_l2^2 / (2 mu)``), module docstring; both bounds are None when
        ``mu == 0`` (no strong convexity: no bound).
    """
    L, q = h.shape
    Mt = W.transpose(0, 2, 1, 3).reshape(L * q, L * q).copy()
    Mt.reshape(L, q, L, q)[np.arange(L), :, np.arange(L), :] = 0.0
    _, dMt, dh = data.value_grad(Mt, h)
    dMt += lambda_J * Mt  # diagonal blocks of both are zero
    dh = dh + 2.0 * lambda_h * h
    grad = float(np.sqrt(np.sum(dMt * dMt) + np.sum(dh * dh)))
    mu = min(2.0 * lambda_h, lambda_J)
    return {"grad_l2": grad, "mu": mu,
            "distance_bound": grad / mu if mu > 0 else None,
            "gap_bound": grad * grad / (2.0 * mu) if mu > 0 else None}
