"""plmDCA's objective in the span of the data, fitted one block of sites at a time.

With ``M`` distinct sequences of normalised weights ``w`` and ``L q`` one-hot states, plmDCA's
minimiser has the form ``Mt = P_off(-G^T X / lambda_J)`` (stationarity of the penalised data term;
``G`` the weighted residuals, ``X`` the one-hot data (M, L q), ``P_off`` zeroes the diagonal blocks
``W_ii``). Writing ``D = diag(w)^{1/2}``, ``D X X^T D = U e U^T`` (rank ``r``), ``B = D^{-1} U_r
e_r^{1/2}`` (M, r) and ``Q = e_r^{-1} B^T D^2 X`` (r, L q; orthonormal rows, ``B Q = X``), the
couplings are parametrised as

    Mt = P_off(C^T Q),    C of shape (r, L q),

which reaches every such minimiser and maps ``C`` isometrically onto the data's row space (before
``P_off``). Then, with ``T_i = Q_i^T C_i`` (q x q, the diagonal block ``i``; ``Q_i``, ``C_i`` the
columns of site ``i``),

    Z = B C - T_i[s_i^mu, :] + h,           |P_off(Mt)|^2 = |C|^2 - sum_i |T_i|^2,
    dF/dC = B^T G - Q_i (R_i + lambda_J T_i) + lambda_J C,   R_i[b, a] = sum_{mu: s_i^mu = b} G[mu, (i, a)].

The objective is exactly plmDCA's ``F`` of :mod:`replica_mlm.proteins.potts_fit` at ``(h, W)``
returned by :meth:`PLMProblem.unpack`.

*Blocks of sites.* Site ``i``'s terms involve only ``h_i`` and ``C_i`` (the columns of its own
states): ``F`` is a sum over sites of independent objectives, as in plmDCA, which fits one site at a
time. :func:`fit_by_blocks` minimises :data:`SITES_PER_BLOCK` sites at a time, each block with its
own L-BFGS run and its own stopping test, so that the optimiser's vectors hold one block's variables
(``r q`` per site) instead of the whole model's: the fit's memory is the basis and the couplings
it returns (docs/proteins.md, "Convergence of the fits"). ``Q`` is never held whole: a block's
columns are ``e^{-1} B^T D^2 X_b`` and its couplings ``C_b^T Q = (X^T D^2 B e^{-1} C_b)^T``, products
with the sparse one-hot data; with more distinct sequences than one-hot states the basis is ``V``
of ``X^T D^2 X = V e V^T``, ``B = X V`` and ``Q = V^T`` (:class:`RowBasis`).

*Conditioning.* The weighted basis makes ``B^T diag(w) B = diag(e)``, so the curvature of the data
term along ``C[k, (i, a)]`` is about ``v_ia e_k`` with ``v_ia = f_ia (1 - f_ia)`` (``f`` the
weighted one-site frequencies: the variance of the softmax when the conditional is near the
marginal), plus ``lambda_J`` from the penalty; along ``h_ia`` it is about ``v_ia + 2 lambda_h``.
These span several decades (``e_k`` from the data's top eigenvalue down to zero), which is what
made plain L-BFGS need hundreds of iterations. :attr:`PLMProblem.scale` holds ``1 / sqrt`` of
these curvatures: L-BFGS runs on ``y = x / scale`` (a diagonal preconditioner), see
docs/proteins.md ("Convergence of the fits"). ``v_ia`` is floored at ``1e-3``.

With ``dtype=float32`` the two products ``B C`` and ``B^T G`` run in single precision, everything
else -- the softmax, the objective's sums, the site blocks -- in double.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import lbfgs_with_double_finish
from replica_mlm.proteins.fit_convergence import plm_block_gradient

__all__ = ["PLMProblem", "RowBasis", "fit_by_blocks"]

#: floor of the softmax variances ``v_ia`` in the preconditioner
V_FLOOR = 1e-3
#: sites per block of :func:`fit_by_blocks`. Rhomboid, one thread: 4, 8 and 16 sites take 52-54
#: CPU-s (the smaller products run slower per operation, the smaller blocks stop sooner) with
#: peaks of 294, 318 and 378 MB (docs/proteins.md, "Convergence of the fits")
SITES_PER_BLOCK = 4
#: rows of a Gram matrix per sparse product while it is built (and columns of ``B = X V``)
GRAM_ROWS = 256
#: stops of a block, worst first: the fit's ``stop`` is the worst of its blocks'
STOPS = ("max_iter", "other", "objective", "gradient")


class RowBasis:
    """The weighted row space of the one-hot data (module docstring), shared by every block.

    The smaller of the two Gram matrices is built densely a band of rows at a time and diagonalised
    in place. With fewer distinct sequences than one-hot states, ``D X X^T D = U e U^T`` (M x M)
    and the basis holds ``B = D^{-1} U e^{1/2}`` (M, r). With more, ``X^T D^2 X = V e V^T`` (L q x
    L q): then ``B = X V`` and ``Q = V^T``, and the basis holds ``V`` (L q, r), smaller than ``B``,
    the products with ``B`` going through the sparse one-hot data (``B C = X (V C)``, ``B^T G = V^T
    (X^T G)``: about the same operations). Also ``e`` (r), the one-site variances ``v`` (L q) of the
    preconditioner, and float32 copies of what the products use once asked for.
    """

    def __init__(self, data: PseudoLikelihood) -> None:
        self.data = data
        one_hot = data.one_hot()
        #: ``(D^2 X)^T`` (L q, M), sparse
        self.XTw = one_hot.multiply(data.w[:, None]).T.tocsr()
        self.X = one_hot
        self.B = self.V = None
        if data.M <= one_hot.shape[1]:
            self.e, self.B = self._from_rows(one_hot, data.w)
        else:
            self.e, self.V = _top_eigen(lambda: _dense_gram(self.XTw, one_hot.tocsc()))
        self.r = int(self.e.size)
        f = np.asarray(data.w @ one_hot).ravel()
        self.v = np.maximum(f * (1.0 - f), V_FLOOR)
        self._factors = {}

    @staticmethod
    def _from_rows(X, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(e, B)`` from ``D X X^T D = U e U^T`` (M x M): ``B = D^{-1} U e^{1/2}``."""
        root_w = np.sqrt(w)
        DX = X.multiply(root_w[:, None]).tocsr()
        e, U = _top_eigen(lambda: _dense_gram(DX, DX.T.tocsr()))
        B = U  # scaled in place
        B *= np.sqrt(e)
        B /= root_w[:, None]
        return e, B

    def _in(self, dtype) -> tuple:
        """``(B,)`` or ``(V, X, X^T)`` in ``dtype`` (float32 copies made once)."""
        dtype = np.dtype(dtype)
        if dtype not in self._factors:
            if self.V is None:
                self._factors[dtype] = (self.B.astype(dtype, copy=False),)
            else:  # float64: the one-hot data itself and its transpose's view (the rare double
                # evaluations); float32: copies, the transpose row-major for speed
                X = self.X.astype(dtype, copy=False)
                XT = X.T if dtype == np.float64 else X.T.tocsr()
                self._factors[dtype] = (self.V.astype(dtype, copy=False), X, XT)
        return self._factors[dtype]

    def times(self, C: np.ndarray, dtype) -> np.ndarray:
        """``B C`` (M, n) in ``dtype``."""
        factors = self._in(dtype)
        C = C.astype(dtype, copy=False)
        if self.V is None:
            return factors[0] @ C
        V, X, _ = factors
        return np.asarray(X @ (V @ C))

    def transpose_times(self, G: np.ndarray, dtype) -> np.ndarray:
        """``B^T G`` (r, n) in ``dtype``."""
        factors = self._in(dtype)
        G = G.astype(dtype, copy=False)
        if self.V is None:
            return factors[0].T @ G
        V, _, XT = factors
        return V.T @ np.asarray(XT @ G)

    def Q(self, cols: np.ndarray, X_cols: np.ndarray) -> np.ndarray:
        """The columns ``cols`` of ``Q = e^{-1} B^T D^2 X`` (r, n), whose one-hot data are ``X_cols``
        (M, n) (``V^T``'s columns on the columns' side; a dense product on the rows' side: ``B`` is
        Fortran-ordered, which a sparse product would copy)."""
        if self.V is not None:
            return self.V[cols].T.copy()
        Q = self.B.T @ (self.data.w[:, None] * X_cols)
        Q /= self.e[:, None]
        return Q

    def couplings(self, C: np.ndarray) -> np.ndarray:
        """``C^T Q`` (C: (r, n) -> (n, L q)), without ``Q``."""
        if self.V is not None:
            return (self.V @ C).T
        return np.asarray(self.XTw @ (self.B @ (C / self.e[:, None]))).T


def _dense_gram(left, right) -> np.ndarray:
    """``left @ right`` (both sparse) as a dense array, :data:`GRAM_ROWS` rows at a time."""
    K = np.empty((left.shape[0], right.shape[1]))
    for k in range(0, left.shape[0], GRAM_ROWS):
        K[k:k + GRAM_ROWS] = (left[k:k + GRAM_ROWS] @ right).toarray()
    return K


def _top_eigen(gram) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues above ``1e-10`` times the largest, and their eigenvectors (Fortran-ordered), of
    the symmetric matrix ``gram()`` (built here and overwritten, so that it is freed before the
    kept eigenvectors are copied; the Gram matrices are rank-deficient: the one-hot columns of a
    site sum to one)."""
    K = gram()
    e, U = linalg.eigh(K.T, overwrite_a=True, check_finite=False, driver="evr")  # K.T: Fortran, no copy
    del K
    first = int(np.searchsorted(e, e[-1] * 1e-10, side="right"))  # e ascending: keep the top
    # U's last columns are contiguous; copied so that the dropped ones are freed
    return e[first:], (U[:, first:].copy(order="F") if first else U)


class PLMProblem:
    """plmDCA's ``F`` restricted to ``sites`` (default all) in ``x = [h_b.ravel(), C_b.ravel()]``
    (module docstring); ``basis`` shared between the blocks of one fit (default: built here)."""

    def __init__(self, data: PseudoLikelihood, lambda_h: float, lambda_J: float, *,
                 dtype=np.float64, sites=None, basis: RowBasis | None = None) -> None:
        self.data = data
        self.basis = RowBasis(data) if basis is None else basis
        self.L, self.q, self.M, self.r = data.L, data.q, data.M, self.basis.r
        self.sites = np.arange(self.L) if sites is None else np.asarray(sites)
        self.n = len(self.sites)
        self.lambda_h, self.lambda_J = lambda_h, lambda_J
        self.cols = (self.sites[:, None] * self.q + np.arange(self.q)).ravel()
        self.n_h = self.n * self.q
        self.s = data.s[:, self.sites]
        self.X3 = np.zeros((self.M, self.n, self.q))  # this block's one-hot data
        np.put_along_axis(self.X3, self.s[:, :, None], 1.0, axis=2)
        self.Q = self.basis.Q(self.cols, self.X3.reshape(self.M, self.n_h))  # (r, n q)
        v = self.basis.v[self.cols]
        #: the diagonal preconditioner (module docstring): 1 / sqrt(curvature) per variable
        self.scale = np.concatenate([1.0 / np.sqrt(v + 2.0 * lambda_h),
                                     (1.0 / np.sqrt(np.outer(self.basis.e, v) + lambda_J)).ravel()])
        self.size = self.n_h + self.r * self.n_h
        self.set_dtype(dtype)

    def set_dtype(self, dtype) -> None:
        """Precision of the two big products from now on (``float64`` for the double finish)."""
        self.dtype = np.dtype(dtype)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fields (n, q) and couplings ``W[k, j, a, b]`` of the block's sites ``i = sites[k]``
        (n, L, q, q), zero at ``j = i``; with every site, (L, q) and (L, L, q, q)."""
        L, q, n = self.L, self.q, self.n
        C = x[self.n_h:].reshape(self.r, self.n_h)
        W = self.basis.couplings(C).reshape(n, q, L, q).transpose(0, 2, 1, 3).copy()
        W[np.arange(n), self.sites] = 0.0
        return x[: self.n_h].reshape(n, q).copy(), W

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The block's part of ``F`` and its gradient at ``x`` (module docstring)."""
        n, q, M, r = self.n, self.q, self.M, self.r
        h = x[: self.n_h].reshape(n, q)
        C = x[self.n_h:].reshape(r, self.n_h)
        C3, Q3 = C.reshape(r, n, q), self.Q.reshape(r, n, q)
        T = np.matmul(Q3.transpose(1, 2, 0), C3.transpose(1, 0, 2))  # (n, q, q)
        Z = self.basis.times(C, self.dtype).astype(np.float64, copy=False)
        Z += h.reshape(1, self.n_h)
        Z.reshape(M, n, q)[...] -= T[np.arange(n)[None, :], self.s, :]
        value, G = self.data.nll_grad(Z, sites=self.sites)
        R = np.matmul(self.X3.transpose(1, 2, 0), G.reshape(M, n, q).transpose(1, 0, 2))  # (n, q, q)
        lam = self.lambda_J
        g = np.empty_like(x)
        g[: self.n_h] = G.sum(axis=0) + 2.0 * self.lambda_h * h.ravel()
        dC = g[self.n_h:].reshape(r, self.n_h)
        dC[...] = self.basis.transpose_times(G, self.dtype)
        dC += lam * C
        dC.reshape(r, n, q)[...] -= np.matmul(Q3.transpose(1, 0, 2), R + lam * T).transpose(1, 0, 2)
        cc, tt = float(C.ravel() @ C.ravel()), float(T.ravel() @ T.ravel())
        f = value + self.lambda_h * float(h.ravel() @ h.ravel()) + 0.5 * lam * (cc - tt)
        return f, g


@dataclass(frozen=True)
class BlocksFit:
    """What :func:`fit_by_blocks` returns: the raw fit and its convergence, summed over blocks.

    ``fields`` (L, q) and ``couplings`` ``W[i, j, a, b]`` (L, L, q, q) with zero diagonal blocks;
    ``objective`` ``F`` (the sum of the blocks' parts); ``gradient_norm`` the largest gradient
    component over all blocks (in ``x``, double precision); ``grad_l2`` ``|grad F|_2`` over all of
    ``(h, W)`` (:func:`replica_mlm.proteins.fit_convergence.plm_block_gradient`); ``iterations``
    and ``iterations_double`` the most of any block; ``stop`` the worst of the blocks' (:data:`STOPS`).
    """

    fields: np.ndarray
    couplings: np.ndarray
    objective: float
    gradient_norm: float
    grad_l2: float
    iterations: int
    iterations_double: int
    stop: str


def fit_by_blocks(data: PseudoLikelihood, lambda_h: float, lambda_J: float, *, dtype, max_iter: int,
                  tol: float, ftol: float | None, memory: int, tick=None) -> BlocksFit:
    """Minimise plmDCA's ``F`` by L-BFGS, :data:`SITES_PER_BLOCK` sites at a time (module docstring).

    Each block starts at zero, runs :func:`replica_mlm.learners.quasi_newton.lbfgs_with_double_finish`
    with the diagonal preconditioner and writes its fields and couplings into the result; its
    gradient over ``(h, W)`` is then computed in double precision from the data (the certificate's
    part). ``tick(n)`` after each block of ``n`` sites (the progress bar).
    """
    L, q = data.L, data.q
    basis = RowBasis(data)
    h = np.empty((L, q))
    W = np.empty((L, L, q, q))
    objective = grad_sq = 0.0
    gnorms, iterations, n_double, worst = [], 0, 0, len(STOPS) - 1
    for start in range(0, L, SITES_PER_BLOCK):
        sites = np.arange(start, min(start + SITES_PER_BLOCK, L))
        problem = PLMProblem(data, lambda_h, lambda_J, dtype=dtype, sites=sites, basis=basis)
        res, doubled = lbfgs_with_double_finish(problem, np.zeros(problem.size), problem.scale, dtype,
                                                max_iter=max_iter, tol=tol, ftol=ftol, memory=memory)
        h_block, W_block = problem.unpack(res.x)
        h[sites], W[sites] = h_block, W_block
        objective += float(res.fun)
        gnorms.append(float(np.max(np.abs(res.jac))))
        iterations, n_double = max(iterations, int(res.nit)), max(n_double, doubled)
        worst = min(worst, STOPS.index(res.stop))
        grad_sq += plm_block_gradient(data, sites, h_block, W_block, lambda_h, lambda_J)
        del problem, res, h_block, W_block
        if tick is not None:
            tick(len(sites))
    return BlocksFit(fields=h, couplings=W, objective=objective,
                     gradient_norm=float(np.max(gnorms)),  # a NaN in any block stays NaN
                     grad_l2=float(np.sqrt(grad_sq)), iterations=iterations, iterations_double=n_double,
                     stop=STOPS[worst])
