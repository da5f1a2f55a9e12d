"""Factored attention with softmax-normalised positional attention (Bhattacharya et al. 2020).

docs/proteins.md, "Factored attention".

Couplings ``J = sym(W)``, ``W_ij(a, b) = sum_h A^h_ij V^h_ab``, with, per head ``h``, per-site
queries and keys ``Q^h, K^h`` (L x d) and

    A^h_ij = softmax_{j != i}( Q^h_i . K^h_j / sqrt(d) )        (rows positive, summing to one),

``V^h`` a free q x q matrix, and ``sym(W)_ij = (W_ij + W_ji^T) / 2`` (the Potts model is symmetric).
The objective is the weighted pseudo-likelihood of :mod:`replica_mlm.learners.plm_objective` at
``(h, J)`` plus plmDCA's own penalty on the couplings,

    lambda_h sum_i |h_i|^2 + (lambda_J / 2) sum_{i != j} |J_ij|_F^2,

so that ``lambda_J`` means what it means for ``method="plm"`` and the factored model is plm
restricted to couplings of this form. The queries and keys are not penalised: the rows of ``A^h``
sum to one, so the scale of the couplings is carried, and penalised, by ``V^h``.

Gradient (all heads at once; the products with the one-hot data are those of the plm objective):
``G = sym(dD/dJ) + lambda_J J``, ``dA^h_ij = sum_ab G_ij(a, b) V^h_ab``, ``dV^h = sum_ij A^h_ij
G_ij``, through the softmax ``dS^h_ij = A^h_ij (dA^h_ij - sum_k A^h_ik dA^h_ik)``, then ``dQ^h =
dS^h K^h / sqrt(d)``, ``dK^h = dS^h^T Q^h / sqrt(d)``.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.learners.attention import zero_sum_gauge
from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.proteins.contacts import coupling_scores

__all__ = ["HEAD_SIZE", "SoftmaxFactoredProblem"]

#: dimension ``d`` of each head's queries and keys
HEAD_SIZE = 16
#: start from couplings: attention logits ``SHARPNESS`` times the standardised contact scores
SHARPNESS = 3.0
#: start from couplings: standard deviation of the noise that tells the heads apart
NOISE = 0.3


class SoftmaxFactoredProblem:
    """Objective ``F = D + penalty`` and its gradient in the packed parameters.

    Packing: ``x = [h.ravel() (L q), Q.ravel() (H L d), K.ravel() (H L d), V.ravel() (H q^2)]``.
    """

    def __init__(self, data: PseudoLikelihood, heads: int, lambda_h: float, lambda_J: float, *,
                 head_size: int = HEAD_SIZE, dtype=np.float64) -> None:
        self.data = data
        self.dtype = np.dtype(dtype)
        self.L, self.q, self.H, self.d = data.L, data.q, heads, head_size
        self.lambda_h, self.lambda_J = lambda_h, lambda_J
        self.n_h = self.L * self.q
        self.n_qk = heads * self.L * head_size
        self.size = self.parameter_count(self.L, self.q, heads, head_size=head_size)
        self.sites = np.arange(self.L)

    @staticmethod
    def parameter_count(L: int, q: int, heads: int, *, head_size: int = HEAD_SIZE) -> int:
        """Length of the packed vector: fields, queries and keys, values."""
        return L * q + heads * (2 * L * head_size + q * q)

    def set_dtype(self, dtype) -> None:
        """Precision of the big products from now on (``float64`` for the double finish)."""
        self.dtype = np.dtype(dtype)

    def init(self, gen: np.random.Generator, scale: float) -> np.ndarray:
        """Fields of the independent-site model, ``Q, K`` i.i.d. ``N(0, 1)`` (random attention:
        ``Q = K = 0`` is a saddle), ``V`` i.i.d. ``N(0, scale^2)``."""
        x = np.zeros(self.size)
        f = self.data.w @ self.data.X  # weighted one-site frequencies (L q)
        logf = np.log(f.reshape(self.L, self.q) + 1e-3)
        x[: self.n_h] = (logf - logf.mean(axis=1, keepdims=True)).ravel()
        x[self.n_h: self.n_h + 2 * self.n_qk] = gen.standard_normal(2 * self.n_qk)
        x[self.n_h + 2 * self.n_qk:] = gen.standard_normal(self.H * self.q * self.q) * scale
        return x

    def from_couplings(self, couplings: np.ndarray, fields: np.ndarray, *,
                       gen: np.random.Generator) -> np.ndarray:
        """Packed start near couplings (L, L, q, q), e.g. mean-field DCA's.

        Every head's attention logits start at the rank-``d`` truncation of ``SHARPNESS`` times
        the couplings' standardised contact scores (Frobenius + APC,
        :func:`~replica_mlm.proteins.contacts.coupling_scores`), plus ``N(0, NOISE^2)`` noise to
        tell the heads apart; each ``V^h`` is then the least-squares fit of the zero-sum couplings
        by ``A^h``, divided by ``H``. Fields as given.
        """
        L, d, H = self.L, self.d, self.H
        J = np.asarray(couplings, dtype=float)
        score = coupling_scores(J)
        off = ~np.eye(L, dtype=bool)
        z = np.where(off, (score - score[off].mean()) / max(float(score[off].std()), 1e-300), 0.0)
        u, sv, vt = np.linalg.svd(SHARPNESS * z)
        k = min(d, L)
        x = np.zeros(self.size)
        x[: self.n_h] = np.asarray(fields, dtype=float).ravel()
        _, Q, K, V = self.unpack(x)
        Q[:, :, :k] = u[:, :k] * np.sqrt(sv[:k]) * d**0.25
        K[:, :, :k] = vt[:k].T * np.sqrt(sv[:k]) * d**0.25
        Q += NOISE * gen.standard_normal(Q.shape)
        K += NOISE * gen.standard_normal(K.shape)
        A = self.attention(Q, K)
        Jz = zero_sum_gauge(J).reshape(L * L, -1)
        V[...] = ((A.reshape(H, L * L) @ Jz) / np.sum(A**2, axis=(1, 2))[:, None] / H).reshape(V.shape)
        return x

    def unpack(self, x: np.ndarray):
        """Fields (L, q), queries (H, L, d), keys (H, L, d), values (H, q, q)."""
        L, q, H, d, n_h, n_qk = self.L, self.q, self.H, self.d, self.n_h, self.n_qk
        return (x[:n_h].reshape(L, q), x[n_h: n_h + n_qk].reshape(H, L, d),
                x[n_h + n_qk: n_h + 2 * n_qk].reshape(H, L, d), x[n_h + 2 * n_qk:].reshape(H, q, q))

    def factors(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fields (L, q), attention (H, L, L; :meth:`attention`) and values (H, q, q) at ``x``."""
        h, Q, K, V = self.unpack(x)
        return h, self.attention(Q, K), V

    def attention(self, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
        """``A^h`` (H, L, L): row softmax of ``Q^h K^h^T / sqrt(d)`` over ``j != i`` (zero diagonal)."""
        S = np.matmul(Q, K.transpose(0, 2, 1)) / np.sqrt(self.d)
        S[:, self.sites, self.sites] = -np.inf
        S -= S.max(axis=2, keepdims=True)
        A = np.exp(S)
        A /= A.sum(axis=2, keepdims=True)
        return A

    def couplings(self, A: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``W[i, j, a, b] = sum_h A[h, i, j] V[h, a, b]`` (L, L, q, q), before symmetrising."""
        L, q, H = self.L, self.q, self.H
        return (A.reshape(H, L * L).T @ V.reshape(H, q * q)).reshape(L, L, q, q)

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        L, q, H, d, dt = self.L, self.q, self.H, self.d, self.dtype
        h, Q, K, V = self.unpack(x)
        A = self.attention(Q, K)
        W = (A.reshape(H, L * L).T.astype(dt) @ V.reshape(H, q * q).astype(dt)).reshape(L, L, q, q)
        J = W + W.transpose(1, 0, 3, 2)
        J *= 0.5
        del W
        Mt = np.ascontiguousarray(J.transpose(0, 2, 1, 3)).reshape(L * q, L * q)
        value, dMt, dh = self.data.value_grad(Mt, h, dtype=dt)
        del Mt
        G = dMt.reshape(L, q, L, q).transpose(0, 2, 1, 3)
        G = G + G.transpose(1, 0, 3, 2)
        G *= 0.5
        del dMt
        G += self.lambda_J * J  # J is symmetric: sym(lambda_J J) = lambda_J J
        jj = float(np.dot(J.ravel(), J.ravel()))
        del J
        G2 = G.reshape(L * L, q * q)
        dA = (V.reshape(H, q * q).astype(dt) @ G2.T).astype(np.float64).reshape(H, L, L)
        dV = (A.reshape(H, L * L).astype(dt) @ G2).astype(np.float64)
        del G, G2
        dS = A * (dA - np.sum(A * dA, axis=2, keepdims=True))
        dQ = np.matmul(dS, K) / np.sqrt(d)
        dK = np.matmul(dS.transpose(0, 2, 1), Q) / np.sqrt(d)
        f = value + self.lambda_h * float(h.ravel() @ h.ravel()) + 0.5 * self.lambda_J * jj
        g = np.concatenate([(dh + 2.0 * self.lambda_h * h).ravel(), dQ.ravel(), dK.ravel(),
                            dV.ravel()])
        return f, g
