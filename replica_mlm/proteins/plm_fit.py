"""plmDCA's objective in the span of the data, fitted site by site.

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

*Site by site.* Site ``i``'s terms involve only ``h_i`` and ``C_i`` (the columns of its own
states): ``F`` is a sum over sites of independent objectives, as in plmDCA, which fits one site at a
time. :func:`fit_site_by_site` runs one L-BFGS per site, each with its own stopping test, so that the
optimiser's vectors hold one site's variables (``r q``) instead of the whole model's: the fit's
memory is the basis and the couplings it returns (docs/proteins.md, "Convergence of the fits").
:data:`SITES_AT_ONCE` sites run together: their evaluations are one batch (the products ``B C`` and
``B^T G`` with ``SITES_AT_ONCE q`` columns, faster per column than one site's), and a site that
stops is replaced by the next, so that no site iterates longer than its own test asks. ``Q`` is
never held whole: a site's columns are ``e^{-1} B^T D^2 X_i`` and its couplings ``C_i^T Q = (X^T D^2
B e^{-1} C_i)^T``, products with the sparse one-hot data; with more distinct sequences than one-hot
states the basis is ``V`` of ``X^T D^2 X = V e V^T``, ``B = X V`` and ``Q = V^T`` (:class:`RowBasis`).

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
from functools import cached_property
from itertools import pairwise

import numpy as np
from scipy import linalg, sparse

from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import double_finish_steps
from replica_mlm.proteins.fit_convergence import plm_block_gradient

__all__ = ["PLMProblem", "RowBasis", "SitesFit", "fit_site_by_site"]

#: floor of the softmax variances ``v_ia`` in the preconditioner
V_FLOOR = 1e-3
#: sites whose evaluations :func:`fit_site_by_site` batches. Rhomboid, one thread, tol 2e-3: 4, 8 and
#: 16 sites take 49.3, 45.8 and 44.9 fit CPU-s and peak at 286, 321 and 385 MB; four keeps DHFR's
#: peak below pydca's (benchmarks/README.md, "plm site by site, four sites batched")
SITES_AT_ONCE = 4
#: rows of a Gram matrix per sparse product while it is built (and columns of ``B = X V``)
GRAM_ROWS = 256
#: stops of a site, worst first: the fit's ``stop`` is the worst of its sites'
STOPS = ("max_iter", "other", "objective", "gradient")


class RowBasis:
    """The weighted row space of the one-hot data (module docstring), shared by every site.

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

    def Q(self, cols: np.ndarray, X_cols) -> np.ndarray:
        """The columns ``cols`` of ``Q = e^{-1} B^T D^2 X`` (r, n), whose one-hot data (M, n) are
        ``X_cols()`` (``V^T``'s columns on the columns' side; a dense product on the rows' side:
        ``B`` is Fortran-ordered, which a sparse product would copy)."""
        if self.V is not None:  # a view of V where the columns are one range (consecutive sites)
            return self.V[cols[0]:cols[-1] + 1].T if np.all(np.diff(cols) == 1) else self.V[cols].T.copy()
        Q = self.B.T @ (self.data.w[:, None] * X_cols())
        Q /= self.e[:, None]
        return Q

    def couplings(self, C: np.ndarray) -> np.ndarray:
        """``C^T Q`` (C: (r, n) -> (n, L q)), without ``Q``."""
        if self.V is not None:
            return (self.V @ C).T
        return np.asarray(self.XTw @ (self.B @ (C / self.e[:, None]))).T


def _gather(parts: list[np.ndarray], r: int) -> np.ndarray:
    """The ``x`` of the sites of ``parts`` together (:meth:`PLMProblem.gather`); ``r`` the rank."""
    widths = [(part.size // (r + 1)) for part in parts]  # n_k q of each
    h = [part[:w] for part, w in zip(parts, widths, strict=True)]
    C = [part[w:].reshape(r, w) for part, w in zip(parts, widths, strict=True)]
    return np.concatenate([np.concatenate(h), np.concatenate(C, axis=1).ravel()])


def _unpack(basis: RowBasis, sites: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fields and couplings of ``sites`` at ``x`` (:meth:`PLMProblem.unpack`)."""
    L, q, n, r = basis.data.L, basis.data.q, len(sites), basis.r
    C = x[n * q:].reshape(r, n * q)
    W = basis.couplings(C).reshape(n, q, L, q).transpose(0, 2, 1, 3).copy()
    W[np.arange(n), sites] = 0.0
    return x[: n * q].reshape(n, q).copy(), W


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
    (module docstring); ``basis`` shared between the sites of one fit (default: built here)."""

    def __init__(self, data: PseudoLikelihood, lambda_h: float, lambda_J: float, *,
                 dtype=np.float64, sites=None, basis: RowBasis | None = None) -> None:
        basis = RowBasis(data) if basis is None else basis
        sites = np.arange(data.L) if sites is None else np.asarray(sites)
        self._set(data, basis, lambda_h, lambda_J, sites, dtype)
        self.Q = basis.Q(self.cols, lambda: self.one_hot_T.T.toarray())  # (r, n q)

    def _set(self, data, basis, lambda_h, lambda_J, sites, dtype) -> None:
        self.data, self.basis = data, basis
        self.L, self.q, self.M, self.r = data.L, data.q, data.M, basis.r
        self.lambda_h, self.lambda_J = lambda_h, lambda_J
        self.sites, self.n = sites, len(sites)
        self.cols = (sites[:, None] * self.q + np.arange(self.q)).ravel()
        self.n_h = self.n * self.q
        self.s = data.s[:, sites]
        self.size = self.n_h + self.r * self.n_h
        self.set_dtype(dtype)

    def _like(self, sites: np.ndarray, Q: np.ndarray) -> PLMProblem:
        """The problem over ``sites`` of the same data, basis and penalties, from their columns of
        ``Q`` (no product with the data)."""
        new = PLMProblem.__new__(PLMProblem)
        new._set(self.data, self.basis, self.lambda_h, self.lambda_J, sites, self.dtype)
        new.Q = Q
        return new

    @cached_property
    def scale(self) -> np.ndarray:
        """The diagonal preconditioner (module docstring): 1 / sqrt(curvature) per variable."""
        v = self.basis.v[self.cols]
        return np.concatenate([1.0 / np.sqrt(v + 2.0 * self.lambda_h),
                               (1.0 / np.sqrt(np.outer(self.basis.e, v) + self.lambda_J)).ravel()])

    @cached_property
    def one_hot_T(self):
        """The transpose of the sites' one-hot data (n q, M), sparse, built when first asked for."""
        rows = (np.arange(self.n) * self.q + self.s).ravel()  # s is (M, n): row of (mu, k)
        mu = np.repeat(np.arange(self.M), self.n)
        return sparse.csr_matrix((np.ones(rows.size), (rows, mu)), shape=(self.n_h, self.M))

    @staticmethod
    def joined(problems: list[PLMProblem]) -> PLMProblem:
        """One problem over the sites of ``problems`` (same data, basis and penalties); its ``x`` is
        :meth:`gather`'s."""
        return problems[0]._like(np.concatenate([p.sites for p in problems]),
                                 np.concatenate([p.Q for p in problems], axis=1))

    def split(self) -> list[PLMProblem]:
        """One problem per site (the inverse of :meth:`joined`), its ``Q`` a view of this one's."""
        Q3 = self.Q.reshape(self.r, self.n, self.q)
        return [self._like(self.sites[k:k + 1], Q3[:, k]) for k in range(self.n)]  # views of Q

    def set_dtype(self, dtype) -> None:
        """Precision of the two big products from now on (``float64`` for the double finish)."""
        self.dtype = np.dtype(dtype)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fields (n, q) and couplings ``W[k, j, a, b]`` of the block's sites ``i = sites[k]``
        (n, L, q, q), zero at ``j = i``; with every site, (L, q) and (L, L, q, q)."""
        return _unpack(self.basis, self.sites, x)

    def gather(self, parts: list[np.ndarray]) -> np.ndarray:
        """This problem's ``x`` from the ``x`` of the problems it joins (:meth:`joined`), in order."""
        return _gather(parts, self.r)

    def scatter(self, x: np.ndarray, widths: list[int]) -> list[np.ndarray]:
        """The inverse of :meth:`gather`: the ``x`` of the joined problems of ``n_k q`` = ``widths``."""
        C = x[self.n_h:].reshape(self.r, self.n_h)
        edges = np.cumsum([0, *widths])
        return [np.concatenate([x[a:b], C[:, a:b].ravel()]) for a, b in pairwise(edges)]

    def loss_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The block's part of ``F`` and its gradient at ``x`` (module docstring)."""
        values, g = self.loss_grad_by_site(x)
        return float(np.sum(values)), g

    def loss_grad_by_site(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The block's sites' terms of ``F`` (n) and its gradient at ``x`` (module docstring)."""
        n, q, M, r = self.n, self.q, self.M, self.r
        h = x[: self.n_h].reshape(n, q)
        C = x[self.n_h:].reshape(r, self.n_h)
        C3, Q3 = C.reshape(r, n, q), self.Q.reshape(r, n, q)
        T = np.matmul(Q3.transpose(1, 2, 0), C3.transpose(1, 0, 2))  # (n, q, q)
        Z = self.basis.times(C, self.dtype).astype(np.float64, copy=False)
        Z += h.reshape(1, self.n_h)
        Z.reshape(M, n, q)[...] -= T[np.arange(n)[None, :], self.s, :]
        values, G = self.data.nll_grad(Z, sites=self.sites, per_site=True)
        RR = np.asarray(self.one_hot_T @ G).reshape(n, q, n, q)  # (X^T G) over the sites' columns
        R = RR[np.arange(n), :, np.arange(n), :]  # (n, q, q): site k's block
        lam = self.lambda_J
        g = np.empty_like(x)
        g[: self.n_h] = G.sum(axis=0) + 2.0 * self.lambda_h * h.ravel()
        dC = g[self.n_h:].reshape(r, self.n_h)
        dC[...] = self.basis.transpose_times(G, self.dtype)
        dC += lam * C
        dC.reshape(r, n, q)[...] -= np.matmul(Q3.transpose(1, 0, 2), R + lam * T).transpose(1, 0, 2)
        cc = np.einsum("kia,kia->i", C3, C3)
        tt = np.einsum("iab,iab->i", T, T)
        return values + self.lambda_h * np.einsum("ia,ia->i", h, h) + 0.5 * lam * (cc - tt), g


@dataclass(frozen=True)
class SitesFit:
    """What :func:`fit_site_by_site` returns: the raw fit and its convergence, summed over sites.

    ``fields`` (L, q) and ``couplings`` ``W[i, j, a, b]`` (L, L, q, q) with zero diagonal blocks;
    ``objective`` ``F`` (the sum of the sites' parts); ``gradient_norm`` the largest gradient
    component over all sites (in ``x``, double precision); ``grad_l2`` ``|grad F|_2`` over all of
    ``(h, W)`` (:func:`replica_mlm.proteins.fit_convergence.plm_block_gradient`); ``iterations``
    and ``iterations_double`` the most of any site; ``stop`` the worst of the sites' (:data:`STOPS`).
    """

    fields: np.ndarray
    couplings: np.ndarray
    objective: float
    gradient_norm: float
    grad_l2: float
    iterations: int
    iterations_double: int
    stop: str


class _Running:
    """The sites being fitted: each site's problem, its L-BFGS generator and the request it waits on,
    ``(x, precision)``."""

    def __init__(self) -> None:
        self.problem, self.steps, self.request = {}, {}, {}
        self._joined = (None, None)

    def start(self, problem: PLMProblem, steps) -> None:
        site = int(problem.sites[0])
        self.problem[site], self.steps[site] = problem, steps
        self.request[site] = next(steps)

    def waiting_in(self, precision) -> list[int]:
        return [i for i, request in self.request.items() if request[1] == precision]

    def evaluate(self, sites: list[int]):
        """Send each of ``sites`` ``(F_i, grad_i)`` at its requested point (one precision), the
        products in one batch; yields ``(problem, result)`` of each site that stops."""
        key = tuple(sites)
        if self._joined[0] != key:  # the joined problem is rebuilt when the set of sites changes
            self._joined = (key, PLMProblem.joined([self.problem[i] for i in sites]))
        block = self._joined[1]
        block.set_dtype(self.request[sites[0]][1])
        values, g = block.loss_grad_by_site(block.gather([self.request[i][0] for i in sites]))
        answers = zip(values.tolist(), block.scatter(g, [self.problem[i].n_h for i in sites]), strict=True)
        for i, answer in zip(sites, answers, strict=True):
            try:
                self.request[i] = self.steps[i].send(answer)
            except StopIteration as done:
                del self.steps[i], self.request[i]
                yield self.problem.pop(i), done.value


def _site_problems(data, lambda_h, lambda_J, dtype, basis):
    """One problem per site, built :data:`SITES_AT_ONCE` at a time (one product with the data)."""
    for start in range(0, data.L, SITES_AT_ONCE):
        sites = np.arange(start, min(start + SITES_AT_ONCE, data.L))
        yield from PLMProblem(data, lambda_h, lambda_J, dtype=dtype, sites=sites, basis=basis).split()


def fit_site_by_site(data: PseudoLikelihood, lambda_h: float, lambda_J: float, *, dtype, max_iter: int,
                     tol: float, ftol: float | None, memory: int, tick=None) -> SitesFit:
    """Minimise plmDCA's ``F`` by one L-BFGS per site, :data:`SITES_AT_ONCE` sites evaluated together
    (module docstring).

    Each site starts at zero and runs
    :func:`replica_mlm.learners.quasi_newton.double_finish_steps` with the diagonal preconditioner
    and its own stopping test. The evaluations of the sites running are done in one batch, and a
    site that stops is replaced by the next; a single-precision fit's double-precision evaluations
    (each site's last, and any double finish) wait until :data:`SITES_AT_ONCE` of them can be done
    together. The fields and couplings of the sites that stopped are written into the result, and
    their gradient over ``(h, W)`` computed in double precision from the data (the certificate's
    part), :data:`SITES_AT_ONCE` sites at a time. ``tick(n)`` after ``n`` sites (the progress bar).
    """
    L, q = data.L, data.q
    dtype, double = np.dtype(dtype), np.dtype(np.float64)
    basis = RowBasis(data)
    h = np.empty((L, q))
    W = np.empty((L, L, q, q))
    tally = {"objective": 0.0, "grad_sq": 0.0, "gnorm": [], "iterations": 0, "n_double": 0,
             "worst": len(STOPS) - 1}
    stopped: list[tuple[int, np.ndarray]] = []  # (site, x) of the sites stopped, not yet written

    def record(problem: PLMProblem, result: tuple) -> None:
        res, doubled = result
        stopped.append((int(problem.sites[0]), res.x))
        tally["objective"] += float(res.fun)
        tally["gnorm"].append(float(np.max(np.abs(res.jac))))
        tally["iterations"] = max(tally["iterations"], int(res.nit))
        tally["n_double"] = max(tally["n_double"], doubled)
        tally["worst"] = min(tally["worst"], STOPS.index(res.stop))

    def write() -> None:
        sites = np.array([i for i, _ in stopped])
        h_sites, W_sites = _unpack(basis, sites, _gather([x for _, x in stopped], basis.r))
        h[sites], W[sites] = h_sites, W_sites
        for k in range(len(sites)):  # one site at a time: the products' temporaries are a site's
            tally["grad_sq"] += plm_block_gradient(data, sites[k:k + 1], h_sites[k:k + 1], W_sites[k:k + 1],
                                                   lambda_h, lambda_J)
        if tick is not None:
            tick(len(sites))
        stopped.clear()

    problems, running = _site_problems(data, lambda_h, lambda_J, dtype, basis), _Running()
    while True:
        while len(running.waiting_in(dtype)) < SITES_AT_ONCE and (problem := next(problems, None)):
            running.start(problem, double_finish_steps(np.zeros(problem.size), problem.scale, dtype,
                                                       max_iter=max_iter, tol=tol, ftol=ftol, memory=memory))
        if not running.steps:
            break
        main, other = running.waiting_in(dtype), running.waiting_in(double) if dtype != double else []
        for sites in (main, other if len(other) >= SITES_AT_ONCE or not main else []):
            for problem, result in running.evaluate(sites) if sites else ():
                record(problem, result)
            if len(stopped) >= SITES_AT_ONCE:
                write()
    if stopped:
        write()
    return SitesFit(fields=h, couplings=W, objective=tally["objective"],
                    gradient_norm=float(np.max(tally["gnorm"])),  # a NaN at any site stays NaN
                    grad_l2=float(np.sqrt(tally["grad_sq"])), iterations=tally["iterations"],
                    iterations_double=tally["n_double"], stop=STOPS[tally["worst"]])
