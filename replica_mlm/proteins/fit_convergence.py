"""What the convergence of :func:`replica_mlm.fit_potts`'s plm fit proves.

The fits are driven by :func:`replica_mlm.learners.quasi_newton.lbfgs`. :func:`plm_certificate`
turns a plmDCA gradient into a bound on the distance to the optimum: the penalised objective
``F(h, W)`` (W off the diagonal blocks) is strongly convex with modulus ``mu = min(2 lambda_h,
lambda_J)`` (a sum of log-sum-exp of linear forms, convex, plus the two quadratic
penalties), so at any point

    |(h, W) - (h*, W*)|_2 <= |grad F|_2 / mu,        F - F* <= |grad F|_2^2 / (2 mu),

with the gradient taken over all of ``(h, W)``. Symmetrising and the zero-sum gauge are orthogonal
projections, so the same bound holds for ``J - J*`` and, through the triangle inequality, for the
vector of the pairs' Frobenius scores before the APC (docs/proteins.md, "Convergence of the fits").
"""

from __future__ import annotations

import numpy as np

from replica_mlm.learners.plm_objective import PseudoLikelihood

__all__ = ["plm_certificate"]


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
    grad = float(np.sqrt(np.sum(np.square(dMt, out=dMt)) + np.sum(dh * dh)))  # dMt squared in place
    mu = min(2.0 * lambda_h, lambda_J)
    return {"grad_l2": grad, "mu": mu,
            "distance_bound": grad / mu if mu > 0 else None,
            "gap_bound": grad * grad / (2.0 * mu) if mu > 0 else None}
