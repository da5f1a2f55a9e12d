"""The weighted pseudo-likelihood of a Potts model with fields and a free ``q x q`` block per ordered
pair: the one piece of maths behind both :func:`replica_mlm.fit_potts` methods and
:class:`replica_mlm.learners.plm.FullCouplingPotts` (docs/proteins.md, docs/potts.md).

For sequences ``s^mu`` with weights ``w_mu`` (``B_eff = sum_mu w_mu``), fields ``h_i(a)`` and
couplings ``W_ij(a, b)`` (``W_ii = 0``; ``W_ij`` need not equal ``W_ji^T``: the asymmetric
pseudo-likelihood of plmDCA, Ekeberg et al. 2013, 2014), the data term is

    D(h, W) = (1 / B_eff) sum_mu w_mu sum_i -log P_i(s_i^mu | s_-i^mu),
    P_i(a | s_-i) = softmax_a( h_i(a) + sum_{j != i} W_ij(a, s_j) ),

i.e. the weighted mean over sequences of the summed per-site negative log conditionals (the MLM
loss with every site masked in turn). All sites are computed at once: with the one-hot data
``X`` (M, L q) and ``Mt[(i, a), (j, b)] = W_ij(a, b)``, the logits are ``Z = X Mt^T + h`` and the
gradient is ``dD/dMt = G^T X``, ``dD/dh = sum_mu G_mu`` with ``G = diag(w / B_eff)(softmax(Z) -
onehot)`` (two dense matrix products of ``M (L q)^2`` operations: no loop over sites).

Identical sequences are merged (their weights added) before the fit: the objective is unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

__all__ = ["PseudoLikelihood", "pseudo_nll"]


class PseudoLikelihood:
    """Data term ``D`` and its gradient on fixed weighted data (see the module docstring).

    Parameters
    ----------
    s : ndarray of int, shape (M, L)
        Sequences with colours ``0 .. q - 1`` (checked by the caller).
    weights : ndarray, shape (M,)
        Positive sequence weights (checked by the caller); normalised here by their sum ``B_eff``.
    q : int
        Number of colours.
    merge : bool
        Merge identical rows (adding their weights). Default True.
    sparse : bool
        Run the two products with the one-hot data on a sparse copy of it (``M L`` nonzeros
        instead of ``M L q`` entries; float64 only): about ``q`` times fewer operations, faster
        on one core at ``q`` of about 20. Default False (dense BLAS, which also runs in float32).
    """

    def __init__(self, s: np.ndarray, weights: np.ndarray, q: int, *, merge: bool = True,
                 sparse: bool = False) -> None:
        self.B_eff = float(np.sum(weights))
        w = np.asarray(weights, dtype=float) / self.B_eff
        if merge:
            s, inverse = np.unique(s, axis=0, return_inverse=True)
            w = np.bincount(inverse.ravel(), weights=w, minlength=s.shape[0])
        self.s = s
        self.w = w
        self.M, self.L = s.shape
        self.q = q
        self._tgt = None
        self.diag = np.arange(self.L)
        self._dense = self._one_hot = None
        self.sparse = None
        if sparse:
            one_hot = self.one_hot()
            self.sparse = (one_hot, one_hot.T.tocsr())

    @property
    def cols(self) -> np.ndarray:
        """(M, L): the column of ``s_j`` in the one-hot data (computed when asked: each of its three
        uses builds its array once)."""
        return np.arange(self.L)[None, :] * self.q + self.s

    @property
    def tgt(self) -> np.ndarray:
        """Flat indices of the observed colours in the logits (M, L q), built on first use (the
        plm fit, which evaluates some sites at a time, builds its own: :meth:`nll_grad`'s ``sites``)."""
        if self._tgt is None:
            self._tgt = (np.arange(self.M)[:, None] * (self.L * self.q) + self.cols).ravel()
        return self._tgt

    @property
    def X(self) -> np.ndarray:
        """The one-hot data (M, L q) in float64, built on first use (the plm fit never builds it:
        it reads :meth:`one_hot`)."""
        if self._dense is None:
            self._dense = np.zeros((self.M, self.L * self.q))
            np.put_along_axis(self._dense, self.cols, 1.0, axis=1)
        return self._dense

    def one_hot(self) -> csr_matrix:
        """The one-hot data (M, L q) as a sparse float64 matrix: ``M L`` ones (built once)."""
        if self._one_hot is None:
            rows = np.repeat(np.arange(self.M), self.L)
            self._one_hot = csr_matrix((np.ones(self.M * self.L), (rows, self.cols.ravel())),
                                       shape=(self.M, self.L * self.q))
        return self._one_hot

    def _X(self, dtype) -> np.ndarray:
        """The one-hot data in ``dtype`` (exact in any float type; cached)."""
        if self.X.dtype == dtype:
            return self.X
        if getattr(self, "_X_lo", None) is None or self._X_lo.dtype != dtype:
            self._X_lo = self.X.astype(dtype)
        return self._X_lo

    def logits(self, Mt: np.ndarray, h: np.ndarray, *, dtype=np.float64) -> np.ndarray:
        """``Z`` (M, L q): ``Z[mu, (i, a)] = h_i(a) + sum_{j != i} W_ij(a, s_j^mu)``.

        The diagonal blocks of ``Mt`` never enter (their contribution is subtracted). The product
        ``X Mt^T`` runs in ``dtype`` (float32 halves its time); ``Z`` is float64.
        """
        L, q = self.L, self.q
        dtype = np.dtype(dtype)
        if self.sparse is not None:
            Z = np.asarray(self.sparse[0] @ Mt.T.astype(np.float64, copy=False))
        else:
            Z = self._X(dtype) @ Mt.T.astype(dtype, copy=False)
        Z = Z.astype(np.float64, copy=False)
        Z += h.reshape(1, L * q)
        # remove W_ii(a, s_i): Mt[(i, a), (i, s_i)] for every mu, i, a
        M4 = Mt.reshape(L, q, L, q)
        self_block = M4[self.diag, :, self.diag, :]  # (L, q, q): W_ii(a, b)
        Z.reshape(self.M, L, q)[...] -= self_block[self.diag[None, :], :, self.s].reshape(self.M, L, q)
        return Z

    def nll_grad(self, Z: np.ndarray, *, grad: bool = True, sites: np.ndarray | None = None,
                 per_site: bool = False):
        """``D`` from the logits ``Z`` (M, L q), overwritten by ``dD/dZ = G`` if ``grad``.

        ``sites``: ``Z`` holds only these sites' logits (M, len(sites) q), and ``D`` is their part
        of the sum over sites; ``per_site``: ``D``'s terms, one per site (an array), instead of
        their sum."""
        q, M = self.q, self.M
        if sites is None:
            n, tgt = self.L, self.tgt
        else:
            n = len(sites)
            tgt = (np.arange(M)[:, None] * (n * q) + np.arange(n) * q + self.s[:, sites]).ravel()
        Z3 = Z.reshape(M, n, q)
        Z3 -= Z3.max(axis=2, keepdims=True)
        picked = Z.ravel()[tgt].reshape(M, n)
        np.exp(Z3, out=Z3)
        tot = Z3.sum(axis=2, keepdims=True)
        terms = np.log(tot[:, :, 0]) - picked
        value = self.w @ terms if per_site else float(self.w @ terms.sum(axis=1))
        if not grad:
            return value, None
        Z3 /= tot
        Z.ravel()[tgt] -= 1.0
        Z *= self.w[:, None]
        return value, Z

    def value_grad(self, Mt: np.ndarray, h: np.ndarray, *, grad: bool = True, dtype=np.float64):
        """``D`` and (if ``grad``) ``dD/dMt`` (L q, L q, zero diagonal blocks) and ``dD/dh`` (L, q).

        The two products with the one-hot data run in ``dtype`` (``dD/dMt`` is returned in it);
        ``D`` and ``dD/dh`` are summed in float64.
        """
        L, q = self.L, self.q
        value, G = self.nll_grad(self.logits(Mt, h, dtype=dtype), grad=grad)
        if not grad:
            return value
        dtype = np.dtype(dtype)
        if self.sparse is not None:
            dMt = np.ascontiguousarray(np.asarray(self.sparse[1] @ G).T)  # (X^T G)^T = G^T X
        else:
            dMt = G.astype(dtype, copy=False).T @ self._X(dtype)
        dMt.reshape(L, q, L, q)[self.diag, :, self.diag, :] = 0.0
        dh = G.sum(axis=0).reshape(L, q)
        return value, dMt, dh


def pseudo_nll(couplings: np.ndarray, fields: np.ndarray, s: np.ndarray,
               weights: np.ndarray | None = None) -> float:
    """Summed per-site negative log conditional, averaged over sequences (weighted if ``weights``).

    ``couplings`` (L, L, q, q) with ``couplings[i, j, a, b] = W_ij(a, b)`` (diagonal blocks ignored),
    ``fields`` (L, q), ``s`` (M, L) checked by the caller.
    """
    L, _, q, _ = couplings.shape
    w = np.ones(s.shape[0]) if weights is None else weights
    problem = PseudoLikelihood(s, w, q, merge=False)
    Mt = couplings.transpose(0, 2, 1, 3).reshape(L * q, L * q)
    return problem.value_grad(Mt, fields, grad=False)
