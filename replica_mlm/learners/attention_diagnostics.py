"""Diagnostics of a fitted factored-attention layer at its training objective.

:func:`factored_gradient`: the gradient of the objective ``FactoredAttention.fit`` minimises, at
the fitted parameters (how stationary the fit is). :func:`finite_sample_excess`: the expected
test-loss excess of parameters fitted on ``M`` sequences, ``tr(H^-1 G) / (2 M)`` (first order in
``1/M``, the sandwich form). Both are used by the fig. 2 validation section.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.learners.attention import FactoredAttention
from replica_mlm.learners.attention_fit import FactoredAttentionProblem

__all__ = ["factored_gradient", "finite_sample_excess"]


def factored_gradient(fa: FactoredAttention, train: np.ndarray, *, lam: float) -> dict:
    """Gradient of the fitted layer's training objective ``F`` (per sequence) at its parameters.

    ``F`` is the objective ``FactoredAttention.fit`` minimises (linear variant, penalty
    ``(lam p / 2)(|A|^2 + |V|^2)`` on the summed loss); returns the Euclidean norm and the largest
    component of its gradient and the norm of the parameters ``(A off the diagonal, V)``.
    """
    L = fa.attention.shape[0]
    problem = FactoredAttentionProblem(np.asarray(train), fa.value.shape[0], lam, "linear")
    x = np.concatenate([fa.attention[~np.eye(L, dtype=bool)], fa.value.ravel()])
    _, g = problem.loss_grad(x)
    return {"norm": float(np.linalg.norm(g)), "max": float(np.abs(g).max()),
            "parameter_norm": float(np.linalg.norm(x))}


def finite_sample_excess(fa: FactoredAttention, train: np.ndarray, *, lam: float) -> dict:
    """Expected test-loss excess of a fitted linear layer at finite M: ``tr(H^-1 G) / (2 M)``.

    For a well-specified model (the Potts model of fig. 2 is one: ``A = beta J``, ``V = U``) the
    parameters fitted on ``M`` sequences have, to first order in ``1/M``, an expected test loss
    (per sequence) above the best parameters' by ``tr(H^-1 G) / (2 M)``, with ``H`` the Hessian
    of the training objective per sequence and ``G`` the covariance of the per-sequence
    gradients of the loss (the sandwich form: pseudo-likelihood is not a likelihood, so
    ``G != H`` and the trace is not the number of parameters). Both are estimated at the fit on
    the training set; ``H`` is the objective's exact Hessian
    (``attention_fit.FactoredAttentionProblem.hessian``,
    penalty included, which gives the gauge directions of zero data curvature a finite one, while
    ``G`` has no component along them).

    Returns
    -------
    dict
        ``trace`` = ``tr(H^-1 G)``, ``expected_excess`` = ``trace / (2 M)`` (nats per sequence),
        ``n_parameters`` and ``M``.
    """
    s = np.asarray(train)
    L, q = fa.attention.shape[0], fa.value.shape[0]
    problem = FactoredAttentionProblem(s, q, lam, "linear")
    M = problem.M
    A, V = fa.attention, fa.value
    x = problem.pack(A, V)
    C, P, _ = problem.forward(A, V)
    P.ravel()[problem.tgt] -= 1.0  # dloss/dz for every (site, sequence)
    G3, C3 = P.reshape(L, M, q), C.reshape(L, M, q)
    grad_V = np.einsum("ima,imc->mac", G3, C3).reshape(M, q * q)
    grad_A = np.einsum("imb,jmb->mij", G3 @ V, problem.X)[:, problem.off]
    grads = np.concatenate([grad_A, grad_V], axis=1)  # per-sequence gradients (M, n_params)
    H = problem.hessian(x)
    trace = float(np.trace(np.linalg.solve(H, np.cov(grads, rowvar=False))))
    return {"trace": trace, "expected_excess": trace / (2 * M), "n_parameters": int(x.size),
            "M": int(M), "per_sequence_gradients": grads}
