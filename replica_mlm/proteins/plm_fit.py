"""plmDCA's objective in the span of the data: ``M^2 L q`` instead of ``M (L q)^2`` per evaluation.

With ``M`` distinct sequences of normalised weights ``w`` and ``L q`` one-hot states, plmDCA's
minimiser has the form ``Mt = P_off(-G^T X / lambda_J)`` (stationarity of the penalised data term;
``G`` the weighted residuals, ``X`` the one-hot data (M, L q), ``P_off`` zeroes the diagonal blocks
``W_ii``). Writing ``D = diag(w)^{1/2}``, ``D X X^T D = U e U^T`` (rank ``r``), ``B = D^{-1} U_r
e_r^{1/2}`` (M, r) and ``Q = e_r^{-1/2} U_r^T D X`` (r, L q; orthonormal rows, ``B Q = X``), the
couplings are parametrised as

    Mt = P_off(C^T Q),    C of shape (r, L q),

which reaches every such minimiser and maps ``C`` isometrically onto the data's row space (before
``P_off``). Then, with ``T_i = Q_i^T C_i`` (q x q, the diagonal block ``i``; ``Q_i``, ``C_i`` the
columns of site ``i``),

    Z = B C - T_i[s_i^mu, :] + h,           |P_off(Mt)|^2 = |C|^2 - sum_i |T_i|^2,
    dF/dC = B^T G - Q_i (R_i + lambda_J T_i) + lambda_J C,   R_i[b, a] = sum_{mu: s_i^mu = b} G[mu, (i, a)].

The objective is exactly plmDCA's ``F`` of :mod:`replica_mlm.proteins.potts_fit` at ``(h, W)``
returned by :meth:`PLMProblem.unpack`.

*Conditioning.* The weighted basis makes ``B^T diag(w) B = diag(e)``, so the curvature of the data
term along ``C[k, (i, a)]`` is about ``v_ia e_k`` with ``v_ia = f_ia (1 - f_ia)`` (``f`` the
weighted one-site frequencies: the variance of the softmax when the conditional is near the
marginal), plus ``lambda_J`` from the penalty; along ``h_ia`` it is about ``v_ia + 2 lambda_h``.
These span several decades (``e_k`` from the data's top eigenvalue down to zero), which is what
made plain L-BFGS need hundreds of iterations. :attr:`PLMProblem.scale` holds ``1 / sqrt`` of
these curvatures: L-BFGS runs on ``y = x / scale`` (a diagonal preconditioner), see
docs/proteins.md ("Convergence of the fits"). ``v_ia`` is floored at ``1e-3``.

Measured on S1A (1448 distinct sequences, 218 columns, q = 21, one core): a function and gradient
take about 1 s instead of 3 s (0.45 s with ``dtype=float32``: the two products ``B C`` and ``B^T G``
in single precision, everything else -- the softmax, the objective's sums, the site blocks -- in
double), and L-BFGS keeps ``r L q`` instead of ``(L q)^2`` numbers per vector.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.learners.plm_objective import PseudoLikelihood

__all__ = ["PLMProblem"]

#: floor of the softmax variances ``v_ia`` in the preconditioner
V_FLOOR = 1e-3
#: rows of ``C`` (and sequences) per block of the in-place updates of :meth:`PLMProblem.loss_grad`
ROWS = 64


class PLMProblem:
    """plmDCA's ``F`` in ``x = [h.ravel() (L q), C.ravel() (r L q)]`` (module docstring)."""

    def __init__(self, data: PseudoLikelihood, lambda_h: float, lambda_J: float, *,
                 dtype=np.float64) -> None:
        self.data = data
        self.dtype = np.dtype(dtype)
        self.L, self.q, self.M = data.L, data.q, data.M
        self.lambda_h, self.lambda_J = lambda_h, lambda_J
        self.n_h = self.L * self.q
        root_w = np.sqrt(data.w)
        DX = data.X * root_w[:, None]
        e, U = np.linalg.eigh(DX @ DX.T)
        keep = e > e[-1] * 1e-10
        e, U = e[keep], U[:, keep]
        self.r = int(e.size)
        self.B = U * np.sqrt(e) / root_w[:, None]
        self.B_lo = self.B.astype(self.dtype, copy=False)  # the two big products run in this precision
        self.Q = (U / np.sqrt(e)).T @ DX
        del DX, U
        f = data.w @ data.X
        v = np.maximum(f * (1.0 - f), V_FLOOR)
        #: the diagonal preconditioner (module docstring): 1 / sqrt(curvature) per variable
        self.scale = np.concatenate([1.0 / np.sqrt(v + 2.0 * lambda_h),
                                     (1.0 / np.sqrt(np.outer(e, v) + lambda_J)).ravel()])
        self.X3 = data.X.reshape(self.M, self.L, self.q)
        self.size = self.n_h + self.r * self.n_h
        self.sites = np.arange(self.L)
        self._Z = self._Z_lo = None  # the logits' arrays, reused by every evaluation

    def release_buffers(self) -> None:
        """Drop the logits' reused arrays (the next evaluation builds them again): after the fit,
        so that the solution's large arrays do not come on top of them."""
        self._Z = self._Z_lo = None

    def set_dtype(self, dtype) -> None:
        """Precision of the two big products from now on (``float64`` for the double finish)."""
        self.dtype = np.dtype(dtype)
        self.B_lo = self.B.astype(self.dtype, copy=False)
        self._Z_lo = None

    def _logits(self, C: np.ndarray) -> np.ndarray:
        """``B C`` (M, L q) in float64, the product in :attr:`dtype`, into the reused arrays."""
        if self._Z is None:
            self._Z = np.empty((self.M, self.n_h))
        if self.dtype == np.float64:
            return np.matmul(self.B_lo, C, out=self._Z)
        if self._Z_lo is None or self._Z_lo.dtype != self.dtype:
            self._Z_lo = np.empty((self.M, self.n_h), self.dtype)
        np.matmul(self.B_lo, C.astype(self.dtype), out=self._Z_lo)
        np.copyto(self._Z, self._Z_lo)
        return self._Z

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fields (L, q) and couplings ``W[i, j, a, b]`` (L, L, q, q) with zero diagonal blocks."""
        L, q = self.L, self.q
        C = x[self.n_h:].reshape(self.r, self.n_h)
        W = (self.Q.T @ C).reshape(L, q, L, q).transpose(2, 0, 3, 1).copy()
        W[self.sites, self.sites] = 0.0
        return x[: self.n_h].reshape(L, q).copy(), W

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``F`` and its gradient at ``x`` (module docstring).

        The large arrays are written in place where the arithmetic allows (no copy of ``C`` or
        ``G`` in double precision, the penalty and site terms added to ``dF/dC`` a block of rows
        at a time): the same operations on the same numbers as the plain expressions, without
        their ``r L q``-sized temporaries (docs/proteins.md, "Convergence of the fits").
        """
        L, q, M, r = self.L, self.q, self.M, self.r
        h = x[: self.n_h].reshape(L, q)
        C = x[self.n_h:].reshape(r, self.n_h)
        C3, Q3 = C.reshape(r, L, q), self.Q.reshape(r, L, q)
        T = np.matmul(Q3.transpose(1, 2, 0), C3.transpose(1, 0, 2))  # (L, q, q)
        Z = self._logits(C)
        Z += h.reshape(1, self.n_h)
        Z3, s = Z.reshape(M, L, q), self.data.s
        for k in range(0, M, ROWS):  # minus T_i[s_i^mu, :], a block of sequences at a time
            Z3[k:k + ROWS] -= T[self.sites[None, :], s[k:k + ROWS], :]
        value, G = self.data.nll_grad(Z)
        G3 = G.reshape(M, L, q)
        R = np.matmul(self.X3.transpose(1, 2, 0), G3.transpose(1, 0, 2))  # (L, q, q)
        lam = self.lambda_J
        g = np.empty_like(x)
        g[: self.n_h] = (G.sum(axis=0) + 2.0 * self.lambda_h * h.ravel())
        dC = g[self.n_h:].reshape(r, self.n_h)
        if self.dtype == np.float64:
            np.matmul(self.B_lo.T, G, out=dC)
        else:
            dC[...] = self.B_lo.T @ G.astype(self.dtype)
        del G, G3
        RT = R + lam * T
        dC3 = dC.reshape(r, L, q)
        for k in range(0, r, ROWS):  # dC += lam C - Q_i (R_i + lam T_i), a block of rows at a time
            rows = slice(k, k + ROWS)
            dC[rows] += lam * C[rows]
            dC3[rows] -= np.matmul(Q3[rows].transpose(1, 0, 2), RT).transpose(1, 0, 2)
        cc, tt = float(C.ravel() @ C.ravel()), float(T.ravel() @ T.ravel())
        f = value + self.lambda_h * float(h.ravel() @ h.ravel()) + 0.5 * lam * (cc - tt)
        return f, g
