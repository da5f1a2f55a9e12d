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

__all__ = ["certificate", "plm_block_gradient", "plm_certificate"]


def plm_block_gradient(data: PseudoLikelihood, sites: np.ndarray, h: np.ndarray, W: np.ndarray,
                       lambda_h: float, lambda_J: float) -> float:
    """``|grad F|_2^2`` over the fields and the off-diagonal couplings of ``sites`` (the blocks of
    the site-by-site fit are independent: the whole gradient's square is the sum over blocks),
    in double precision from the sparse one-hot data.

    ``h`` (n, q) and ``W`` (n, L, q, q) are the fields and raw couplings ``W_ij`` of the sites
    ``i = sites[k]`` (the blocks ``W_ii`` are ignored).
    """
    n, L, q, _ = W.shape
    Mt = W.transpose(0, 2, 1, 3).reshape(n * q, L * q).copy()
    Mt.reshape(n, q, L, q)[np.arange(n), :, sites, :] = 0.0
    X = data.one_hot()
    Z = np.asarray(X @ Mt.T)
    Z += h.reshape(1, n * q)
    _, G = data.nll_grad(Z, sites=sites)
    dMt = np.asarray(X.T @ G).T
    dMt += lambda_J * Mt
    dMt.reshape(n, q, L, q)[np.arange(n), :, sites, :] = 0.0
    dh = G.sum(axis=0) + 2.0 * lambda_h * h.ravel()
    return float(np.sum(np.square(dMt, out=dMt)) + dh @ dh)


def certificate(grad_l2: float, lambda_h: float, lambda_J: float) -> dict:
    """The bounds proven by a gradient norm ``|grad F|_2`` (module docstring): ``grad_l2``, ``mu``,
    ``distance_bound`` and ``gap_bound`` (both None when ``mu == 0``)."""
    mu = min(2.0 * lambda_h, lambda_J)
    return {"grad_l2": grad_l2, "mu": mu,
            "distance_bound": grad_l2 / mu if mu > 0 else None,
            "gap_bound": grad_l2 * grad_l2 / (2.0 * mu) if mu > 0 else None}


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
    grad_sq = plm_block_gradient(data, np.arange(h.shape[0]), h, W, lambda_h, lambda_J)
    return certificate(float(np.sqrt(grad_sq)), lambda_h, lambda_J)
