"""The L-BFGS driver of :func:`replica_mlm.fit_potts` and what its convergence proves.

:func:`lbfgs` runs scipy's L-BFGS-B on ``y = x / scale`` (a diagonal preconditioner; the plm
problem supplies one, :mod:`replica_mlm.proteins.plm_fit`) and stops on the gradient in the
*original* variables ``x``, so that ``tol`` keeps its meaning (a frequency mismatch, see
:class:`replica_mlm.proteins.potts_fit.PottsFit`) whatever the scaling.

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

from replica_mlm.proteins.plm_objective import PseudoLikelihood

__all__ = ["lbfgs", "plm_certificate"]

#: L-BFGS-B history length (memory: about ``2 MAXCOR`` copies of the parameter vector)
MAXCOR = 10


class _Stop(Exception):
    """Raised by :func:`lbfgs`'s callback to stop (``reason``: "gradient" or "objective")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def lbfgs(fun, x0: np.ndarray, *, max_iter: int, tol: float, ftol: float | None = None,
          window: int = 10, scale: np.ndarray | None = None) -> optimize.OptimizeResult:
    """scipy's L-BFGS-B on ``fun(x) -> (F, grad)`` with the stopping rules of :func:`fit_potts`.

    Minimises over ``y = x / scale`` (``scale`` None: ones). Stops at ``max|grad_x| <= tol``
    (``stop="gradient"``), after ``max_iter`` iterations (``"max_iter"``), or, if ``ftol`` is
    given, when ``F`` fell by less than ``ftol * max(|F|, 1)`` over the last ``window`` iterations
    (``"objective"``; a plateau, not a convergence test); ``"other"`` is scipy's own stop (a line
    search that found no decrease, usually rounding noise in ``F``). Returns ``x``, ``fun``,
    ``jac`` (in ``x``), ``nit`` and ``stop`` of the last accepted iterate.
    """
    s = np.ones(x0.size) if scale is None else np.asarray(scale, dtype=float)
    last: dict = {}
    accepted: dict = {}
    history: list[float] = []

    def fg(y):
        f, g = fun(s * y)
        last.update(y=y.copy(), f=f, g=g)
        return f, s * g

    def callback(yk):
        if not np.array_equal(yk, last["y"]):
            fg(yk)
        accepted.update(x=s * last["y"], f=last["f"], g=last["g"])
        history.append(last["f"])
        if float(np.max(np.abs(last["g"]))) <= tol:
            raise _Stop("gradient")
        if ftol is not None and len(history) > window:
            drop = history[-window - 1] - history[-1]
            if drop < ftol * max(abs(history[-1]), 1.0):
                raise _Stop("objective")

    f0, g0 = fun(x0)
    if float(np.max(np.abs(g0))) <= tol:
        return optimize.OptimizeResult(x=x0.copy(), fun=f0, jac=g0, nit=0, stop="gradient")
    try:
        res = optimize.minimize(fg, x0 / s, jac=True, method="L-BFGS-B", callback=callback,
                                options={"maxiter": max_iter, "gtol": 0.0, "ftol": 1e-15,
                                         "maxcor": MAXCOR, "maxfun": 2 * max_iter + 20})
    except _Stop as stop:
        return optimize.OptimizeResult(x=accepted["x"], fun=accepted["f"], jac=accepted["g"],
                                       nit=len(history), stop=stop.reason)
    f, g = fun(s * res.x)
    stop = "max_iter" if res.nit >= max_iter else "other"
    return optimize.OptimizeResult(x=s * res.x, fun=f, jac=g, nit=int(res.nit), stop=stop,
                                   message=res.message)


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
