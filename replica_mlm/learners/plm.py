"""plmDCA-style comparison for factored attention: a free ``q x q`` coupling block per pair.

:class:`FullCouplingPotts` is the asymmetric pseudo-likelihood fit of Ekeberg et al. (2013) with
the same objective normalisation as :meth:`replica_mlm.FactoredAttention.fit` (docs/potts.md); it
is importable from :mod:`replica_mlm.learners.attention` too.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, sparse
from scipy.special import log_softmax

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import finite_array, nonnegative, positive, positive_int
from replica_mlm.learners.fit_info import FitInfo
from replica_mlm.potts.model import check_sequences
from replica_mlm.potts.model import nll_from_logits as _nll

__all__ = ["FullCouplingPotts"]


class FullCouplingPotts:
    """Asymmetric pseudo-likelihood fit with a full ``q x q`` block per ordered pair (plmDCA-style).

    ``P(s_i = a | s_-i) = softmax_a( sum_{j != i} W_ij[a, s_j] )`` with ``W_ij`` free, not tied to
    ``W_ji^T`` (asymmetric plmDCA, Ekeberg et al. 2013). ``L (L-1) q^2`` parameters against
    ``L (L-1) + q^2`` for factored attention; the same population optimum ``beta J_ij U``.

    Objective: ``(1/M)[ sum_mu sum_i -log P + (lam p / 2) sum_{i != j} |W_ij|_F^2 ]`` (convex,
    same ``lam p / M`` scaling as :meth:`FactoredAttention.fit`), minimised by L-BFGS from zero.
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
        return np.asarray(_onehot_sparse(s, self.q) @ Mt.T).reshape(-1, self.L, self.q)

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
        """Fit by L-BFGS (analytic gradient). See the class docstring for the objective."""
        q = positive_int(q, "q")
        if q < 2:
            raise ValueError(f"q must be >= 2, got {q}")
        lam = nonnegative(lam, "lam")
        arr = _checks.real_array(seqs, "seqs")
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError(f"seqs must have shape (M, L) with L >= 2, got shape {arr.shape}")
        L = arr.shape[1]
        s = check_sequences(arr, L=L, q=q)
        problem = _PLMProblem(s, q, lam)
        x0 = np.zeros(L * q * L * q)
        res = optimize.minimize(
            problem.loss_grad,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": positive_int(max_iter, "max_iter"), "ftol": positive(tol, "tol"),
                     "gtol": 1e-8, "maxcor": 20},
        )
        gnorm = float(np.linalg.norm(res.jac))  # the objective's gradient at res.x
        W = res.x.reshape(L, q, L, q).transpose(0, 2, 1, 3).copy()
        W[np.arange(L), np.arange(L)] = 0.0
        model = cls(W)
        info = FitInfo(
            variant="full",
            method="lbfgs",
            lam=lam,
            n_iter=int(res.nit),
            converged=bool(res.success),
            message=str(res.message),
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
def _onehot_sparse(s: np.ndarray, q: int) -> sparse.csr_matrix:
    """One-hot (n, L q) sparse matrix with a 1 at column ``j q + s_j`` of row ``mu``."""
    n, L = s.shape
    cols = (np.arange(L)[None, :] * q + s).ravel()
    rows = np.repeat(np.arange(n), L)
    return sparse.csr_matrix((np.ones(n * L), (rows, cols)), shape=(n, L * q))


class _PLMProblem:
    """Objective and gradient of the full-block fit, with ``Mt[(i, a), (j, b)] = W_ij[a, b]``.

    Logits ``Z = X Mt^T`` with ``X`` the sparse (M, L q) one-hot matrix; gradient of the summed loss
    ``X^T G`` masked to off-diagonal blocks, ``G = P - onehot``.
    """

    def __init__(self, s: np.ndarray, q: int, lam: float) -> None:
        self.M, self.L = s.shape
        self.q = q
        self.coef = lam * (self.L - 1)
        self.X = _onehot_sparse(s, q)
        self.XT = self.X.T.tocsr()
        rows = np.arange(self.M)[:, None] * self.L + np.arange(self.L)[None, :]
        self.target = (rows * q + s).ravel()
        mask = np.ones((self.L, q, self.L, q))
        mask[np.arange(self.L), :, np.arange(self.L), :] = 0.0
        self.mask = mask.reshape(self.L * q, self.L * q)

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        Lq, M, q = self.L * self.q, self.M, self.q
        Mt = x.reshape(Lq, Lq) * self.mask
        Z = np.asarray(self.X @ Mt.T).reshape(M * self.L, q)
        m = Z.max(axis=1, keepdims=True)
        E = np.exp(Z - m)
        tot = E.sum(axis=1, keepdims=True)
        nll = float((m + np.log(tot)).sum() - Z.ravel()[self.target].sum())
        G = (E / tot).ravel()
        G[self.target] -= 1.0
        G = G.reshape(M, Lq)
        grad = np.asarray(self.XT @ G).T * self.mask + self.coef * Mt
        f = (nll + 0.5 * self.coef * float(np.sum(Mt * Mt))) / M
        return f, grad.ravel() / M
