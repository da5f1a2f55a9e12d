"""plmDCA-style comparison for factored attention: a free ``q x q`` coupling block per pair.

:class:`FullCouplingPotts` is the asymmetric pseudo-likelihood fit of Ekeberg et al. (2013) with
the same objective normalisation as :meth:`replica_mlm.FactoredAttention.fit` (docs/potts.md); it
is importable from :mod:`replica_mlm.learners.attention` too. Its objective is the pseudo-likelihood
kernel of :mod:`replica_mlm.learners.plm_objective` (the one behind :func:`replica_mlm.fit_potts`),
with unit weights and no fields, minimised by the package's L-BFGS
(:func:`replica_mlm.learners.quasi_newton.lbfgs`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import finite_array, nonnegative, positive, positive_int
from replica_mlm.learners.fit_info import FitInfo
from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import lbfgs
from replica_mlm.potts.model import check_sequences
from replica_mlm.potts.model import nll_from_logits as _nll

__all__ = ["FullCouplingPotts"]

#: L-BFGS stops once the largest entry of the gradient is below this (or on ``tol``, see ``fit``)
GTOL = 1e-8
#: pairs kept in the L-BFGS history (double precision: these problems are small)
MEMORY = 20
#: L-BFGS's rounding allowance: 0, strong Wolfe steps only (the objective is summed in double)
ROUNDING = 0.0


class FullCouplingPotts:
    """Asymmetric pseudo-likelihood fit with a full ``q x q`` block per ordered pair (plmDCA-style).

    ``P(s_i = a | s_-i) = softmax_a( sum_{j != i} W_ij[a, s_j] )`` with ``W_ij`` free, not tied to
    ``W_ji^T`` (asymmetric plmDCA, Ekeberg et al. 2013). ``L (L-1) q^2`` parameters against
    ``L (L-1) + q^2`` for factored attention; the same population optimum ``beta J_ij U``.

    Objective: ``(1/M)[ sum_mu sum_i -log P + (lam p / 2) sum_{i != j} |W_ij|_F^2 ]`` (convex,
    same ``lam p / M`` scaling as :meth:`FactoredAttention.fit`), minimised by L-BFGS from zero
    (:func:`replica_mlm.learners.quasi_newton.lbfgs`).
    """

    def __init__(self, couplings, *, fit_info: FitInfo | None = None) -> None:
        W = finite_array(couplings, "couplings W", ndim=4)
        if W.shape[0] != W.shape[1] or W.shape[2] != W.shape[3] or W.shape[0] < 2:
            raise ValueError(f"couplings W must have shape (L, L, q, q) with L >= 2, got {W.shape}")
        idx = np.arange(W.shape[0])
        if np.any(W[idx, idx] != 0.0):
            raise ValueError("couplings W must have zero diagonal blocks W_ii")
        self._W = W
        self._W.flags.writeable = False
        self.fit_info = fit_info

    @property
    def L(self) -> int:
        return self._W.shape[0]

    @property
    def q(self) -> int:
        return self._W.shape[2]

    def couplings(self) -> np.ndarray:
        """The fitted tensor ``W`` (L, L, q, q), ``W[i, j, a, b]`` couples ``s_i = a`` to ``s_j = b``."""
        return self._W

    def logits(self, seqs) -> np.ndarray:
        s = check_sequences(seqs, L=self.L, q=self.q)
        Mt = self._W.transpose(0, 2, 1, 3).reshape(self.L * self.q, self.L * self.q)
        data = PseudoLikelihood(s, np.ones(s.shape[0]), self.q, merge=False)
        return data.logits(Mt, np.zeros((self.L, self.q))).reshape(-1, self.L, self.q)

    def conditionals(self, seqs) -> np.ndarray:
        return np.exp(log_softmax(self.logits(seqs), axis=2))

    def mlm_loss(self, seqs) -> float:
        """Negative log pseudo-likelihood per sequence (same normalisation as the others)."""
        s = check_sequences(seqs, L=self.L, q=self.q)
        return _nll(self.logits(s), s)

    @property
    def n_parameters(self) -> int:
        return self.L * (self.L - 1) * self.q**2

    @classmethod
    def fit(
        cls, seqs, q: int, lam: float = 1e-3, *, max_iter: int = 1000, tol: float = 1e-9
    ) -> FullCouplingPotts:
        """Fit by L-BFGS (analytic gradient) from zero.

        Stops at ``max|grad F| <= GTOL``, when ``F`` falls by less than ``tol * max(|F|, 1)`` in one
        iteration, or after ``max_iter`` iterations. See the class docstring for the objective.
        """
        q = positive_int(q, "q")
        if q < 2:
            raise ValueError(f"q must be >= 2, got {q}")
        lam = nonnegative(lam, "lam")
        arr = _checks.real_array(seqs, "seqs")
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError(f"seqs must have shape (M, L) with L >= 2, got shape {arr.shape}")
        L = arr.shape[1]
        s = check_sequences(arr, L=L, q=q)
        problem = FullCouplingProblem(s, q, lam)
        res = lbfgs(problem.loss_grad, np.zeros(problem.size), max_iter=positive_int(max_iter, "max_iter"),
                    tol=GTOL, ftol=positive(tol, "tol"), window=1, memory=MEMORY, history=np.float64,
                    rounding=ROUNDING)
        gnorm = float(np.linalg.norm(res.jac))  # the objective's gradient at res.x
        W = res.x.reshape(L, q, L, q).transpose(0, 2, 1, 3).copy()
        W[np.arange(L), np.arange(L)] = 0.0
        model = cls(W)
        info = FitInfo(
            variant="full",
            method="lbfgs",
            lam=lam,
            n_iter=int(res.nit),
            converged=res.stop in ("gradient", "objective"),
            message=str(res.stop),
            objective=float(res.fun),
            train_loss=model.mlm_loss(s),
            history=np.empty(0),
            monitor_history=np.empty(0),
            gradient_norm=gnorm,
            stationarity=gnorm * max(float(np.linalg.norm(res.x)), 1.0),
        )
        model.fit_info = info
        return model



# ---------------------------------------------------------------------- internals
class FullCouplingProblem:
    """Objective and gradient of the full-block fit in ``x = Mt.ravel()``, ``Mt[(i, a), (j, b)] =
    W_ij[a, b]`` (L q, L q): the kernel's data term (:class:`PseudoLikelihood`, unit weights, zero
    fields) plus ``(lam (L - 1) / 2M) |Mt|^2`` over the off-diagonal blocks (the diagonal blocks
    never enter: their gradient is zero)."""

    def __init__(self, s: np.ndarray, q: int, lam: float) -> None:
        M, L = s.shape
        self.L, self.q = L, q
        self.data = PseudoLikelihood(s, np.ones(M), q, sparse=True)
        self.coef = lam * (L - 1) / M
        self.h = np.zeros((L, q))
        self.size = (L * q) ** 2

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        L, q = self.L, self.q
        Mt = x.reshape(L * q, L * q).copy()
        Mt.reshape(L, q, L, q)[np.arange(L), :, np.arange(L), :] = 0.0
        value, dMt, _ = self.data.value_grad(Mt, self.h)
        dMt += self.coef * Mt
        return value + 0.5 * self.coef * float(Mt.ravel() @ Mt.ravel()), dMt.ravel()
