"""Factored attention with ``H`` heads on the weighted pseudo-likelihood (Bhattacharya et al. 2020).

Couplings ``W_ij(a, b) = sum_h A^h_ij V^h_ab`` with ``A^h`` an L x L matrix with zero diagonal (the
linear positional attention of head ``h``) and ``V^h`` a free q x q matrix, plus fields ``h_i``. The
objective is plmDCA's, :mod:`replica_mlm.learners.plm_objective` with the penalty

    lambda_h sum_i |h_i|^2 + (lambda_J / 2) sum_{i != j} |W_ij|_F^2,

on the couplings themselves, so that ``lambda_J`` means what it means for ``method="plm"`` and the
factored model is plm restricted to couplings of rank ``H`` when reshaped to an ``(L^2, q^2)``
matrix: with ``H >= q^2`` it *is* plm (docs/proteins.md, "Factored attention"). Only ``W`` is
identifiable (``A^h -> c A^h, V^h -> V^h / c`` changes nothing, the objective included). The
gradient goes through the coupling tensor: ``Mt`` is built from the factors (``(L^2, H) (H, q^2)``,
one matrix product), the data term's gradient ``dD/dMt`` comes from
:class:`~replica_mlm.learners.plm_objective.PseudoLikelihood`, ``dF/dW = dD/dW + lambda_J W``, and
``dF/dA^h_ij = sum_ab dF/dW_ij(a, b) V^h_ab``, ``dF/dV^h = sum_ij A^h_ij dF/dW_ij`` (two more
products of ``H L^2 q^2``).
"""

from __future__ import annotations

import numpy as np

from replica_mlm.learners.plm_objective import PseudoLikelihood

__all__ = ["FactoredProblem"]


class FactoredProblem:
    """Objective ``F = D + penalty`` and its gradient in the packed factors.

    Packing: ``x = [h.ravel() (L q), A[:, off] (H L (L - 1)), V.ravel() (H q^2)]``.
    """

    def __init__(self, data: PseudoLikelihood, heads: int, lambda_h: float, lambda_J: float, *,
                 dtype=np.float64) -> None:
        self.data = data
        self.dtype = np.dtype(dtype)  # of the two products with the one-hot data
        self.L, self.q, self.H = data.L, data.q, heads
        self.lambda_h, self.lambda_J = lambda_h, lambda_J
        self.off = ~np.eye(self.L, dtype=bool)
        self.n_h = self.L * self.q
        self.n_A = heads * self.L * (self.L - 1)
        self.size = self.parameter_count(self.L, self.q, heads)

    @staticmethod
    def parameter_count(L: int, q: int, heads: int) -> int:
        """Length of the packed vector: fields, off-diagonal attention, values."""
        return L * q + heads * (L * (L - 1) + q * q)

    def set_dtype(self, dtype) -> None:
        """Precision of the two big products from now on (``float64`` for the double finish)."""
        self.dtype = np.dtype(dtype)

    def init(self, gen: np.random.Generator, scale: float) -> np.ndarray:
        """Zero fields, ``A`` and ``V`` with i.i.d. ``N(0, scale^2)`` entries (zero is a saddle)."""
        x = np.zeros(self.size)
        x[self.n_h:] = gen.standard_normal(self.size - self.n_h) * scale
        return x

    def from_couplings(self, couplings: np.ndarray, fields: np.ndarray, *,
                       gen: np.random.Generator | None = None) -> np.ndarray:
        """Packed start from couplings (L, L, q, q): their best rank-``H`` factorisation.

        The couplings reshaped to an ``(L^2, q^2)`` matrix (diagonal blocks zeroed) are cut to their
        ``H`` largest singular triplets ``s_h u_h v_h^T`` (Eckart-Young: the closest factored model
        in Frobenius norm), split evenly, ``A^h = sqrt(s_h) u_h``, ``V^h = sqrt(s_h) v_h`` (equal
        norms); the fields are taken as given. Deterministic: ``gen`` is not used (it is there for
        the interface :class:`~replica_mlm.proteins.softmax_factored.SoftmaxFactoredProblem` shares).
        """
        L, q, H = self.L, self.q, self.H
        J = np.array(couplings, dtype=float).reshape(L, L, q, q)
        J[np.arange(L), np.arange(L)] = 0.0
        u, sv, vt = np.linalg.svd(J.reshape(L * L, q * q), full_matrices=False)
        k = min(H, sv.size)
        A = np.zeros((H, L, L))
        V = np.zeros((H, q, q))
        A[:k] = (u[:, :k] * np.sqrt(sv[:k])).T.reshape(k, L, L)
        V[:k] = (vt[:k] * np.sqrt(sv[:k])[:, None]).reshape(k, q, q)
        x = np.zeros(self.size)
        x[: self.n_h] = np.asarray(fields, dtype=float).ravel()
        x[self.n_h: self.n_h + self.n_A] = A[:, self.off].ravel()
        x[self.n_h + self.n_A:] = V.ravel()
        return x

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fields (L, q), attention (H, L, L) with zero diagonals, values (H, q, q)."""
        L, q, H = self.L, self.q, self.H
        h = x[: self.n_h].reshape(L, q)
        A = np.zeros((H, L, L))
        A[:, self.off] = x[self.n_h: self.n_h + self.n_A].reshape(H, L * (L - 1))
        V = x[self.n_h + self.n_A:].reshape(H, q, q)
        return h, A, V

    def factors(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fields (L, q), attention (H, L, L) and values (H, q, q) at ``x``: :meth:`unpack`."""
        return self.unpack(x)

    def couplings(self, A: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``W[i, j, a, b] = sum_h A[h, i, j] V[h, a, b]`` (L, L, q, q)."""
        L, q, H = self.L, self.q, self.H
        return (A.reshape(H, L * L).T @ V.reshape(H, q * q)).reshape(L, L, q, q)

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        L, q, H = self.L, self.q, self.H
        h, A, V = self.unpack(x)
        dt = self.dtype  # the (L q)^2 arrays live in it (no float64 copies at float32)
        W = A.reshape(H, L * L).T.astype(dt) @ V.reshape(H, q * q).astype(dt)  # (L^2, q^2)
        ww = float(np.dot(W.ravel(), W.ravel()))  # the diagonal blocks are zero (A^h_ii = 0)
        Mt = W.reshape(L, L, q, q).transpose(0, 2, 1, 3).reshape(L * q, L * q)
        value, dMt, dh = self.data.value_grad(Mt, h, dtype=dt)
        del Mt
        dW = dMt.reshape(L, q, L, q).transpose(0, 2, 1, 3).reshape(L * L, q * q)
        del dMt
        dW += self.lambda_J * W
        del W
        dA = (V.reshape(H, q * q).astype(dt) @ dW.T).astype(np.float64).reshape(H, L, L)
        dV = (A.reshape(H, L * L).astype(dt) @ dW).astype(np.float64)
        f = value + self.lambda_h * float(h.ravel() @ h.ravel()) + 0.5 * self.lambda_J * ww
        g = np.concatenate([(dh + 2.0 * self.lambda_h * h).ravel(), dA[:, self.off].ravel(),
                            dV.ravel()])
        return f, g
