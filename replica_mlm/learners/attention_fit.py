"""Training internals of factored attention (docs/potts.md): objective, gradient, Hessian-vector
product, the mean-field initialisation and the optimisers behind :meth:`FactoredAttention.fit`.

The objective per training sequence (``p = L - 1``, ``B`` = ``A`` or the softmax logits ``S``)

    F(B, V) = (1/M) [ sum_mu sum_i -log softmax(z_i^mu)[s_i^mu] + (lam p / 2)(|B|^2 + |V|^2) ]

with ``z_i = sum_{j != i} A_ij V e_{s_j}``. Every product is one matrix product over all sequences at
once: with the one-hot data stored position-major, ``X[j, mu, c] = [s_j^mu = c]``,

    C = A X  (L, M, q),   Z = C V^T,   G = softmax(Z) - onehot,
    dF/dV = G^T C / M,    dF/dA = ((G V) X^T) / M      (+ the penalty's gradient)

and the Hessian-vector product along ``(E, W)`` differentiates these once more (linear variant):
``dC = E X``, ``dZ = dC V^T + C W^T``, ``dG = P (dZ - <dZ>_P)``, ``H(E, W) = (((dG V + G W) X^T),
dG^T C + G^T dC) / M`` plus the penalty's.

Two exact symmetries of the data term make plain L-BFGS slow or misleading: ``V -> V + 1 f^T``
(column shifts; the softmax over colours ignores them) and ``(A, V) -> (c A, V / c)``. The penalty
fixes both (zero column sums, ``|A| = |V|``) but with curvature only ``lam p / M``. The fit
therefore starts with column-centred ``V`` (the gradient then never leaves that subspace) and, for
the linear variant, rebalances ``|A| = |V|`` (which lowers ``F`` at unchanged data term) before a
trust-region Newton polish: with the exact dense Hessian (:meth:`FactoredAttentionProblem.hessian`, about
``M L q^4`` operations; the trust-region subproblem solved exactly from its eigendecomposition) up
to :data:`DENSE_NEWTON_MAX` parameters, else Newton-CG with the Hessian-vector product. Measured at
``L = q = 20``, ``M = 3000`` (one core): a gradient costs about 0.05 s, the dense Hessian 1.5 s,
while one Newton-CG iteration needed 300-800 Hessian-vector products (the spectrum spans about six
decades); from the mean-field start 300 L-BFGS iterations and 10 dense Newton iterations reached
``|grad F| |x| = 8e-8`` in 35 s.

``F`` is not convex (``W = A (x) V`` is bilinear): the mean-field start
(:meth:`FactoredAttentionProblem.mean_field_init`) avoids the worse local minima that small random starts can
reach, but no start is guaranteed to find the global minimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import softmax

from replica_mlm.learners.fit_info import FitInfo
from replica_mlm.learners.gauge import double_centre_in_place
from replica_mlm.potts.model import nll_from_logits as _nll


class FactoredAttentionProblem:
    """Objective, analytic gradient and (linear variant) Hessian-vector product of a fit.

    Parameters
    ----------
    s : ndarray of int, shape (M, L)
        Training sequences (colours ``0 .. q - 1``; checked by the caller).
    q : int
        Number of colours.
    lam : float
        Penalty strength (the penalty is ``(lam p / 2)(|B|^2 + |V|^2)``, ``p = L - 1``).
    variant : {"linear", "softmax"}

    Attributes
    ----------
    X : ndarray, shape (L, M, q)
        The one-hot training data, position-major: ``X[j, mu, c] = [s_j^mu = c]``.
    tgt : ndarray of int
        Flat indices of the observed colours in the (L M, q) logits (site-major).
    off : ndarray of bool, shape (L, L)
        The off-diagonal mask.

    Packing: ``x = [off-diagonal entries of A (linear) or S (softmax), V.ravel()]``
    (:meth:`pack`, :meth:`unpack`).
    """

    def __init__(self, s: np.ndarray, q: int, lam: float, variant: str) -> None:
        self.s = s
        self.M, self.L = s.shape
        self.q = q
        self.lam = lam
        self.coef = lam * (self.L - 1)
        self.variant = variant
        self.off = ~np.eye(self.L, dtype=bool)
        self.n_att = self.L * (self.L - 1)
        self.X, self.tgt = _position_major(s, q)
        self._cache: tuple | None = None

    # ------------------------------------------------------------------ packing
    def init(self, gen: np.random.Generator, scale: float) -> np.ndarray:
        a = gen.standard_normal(self.n_att) * (scale if self.variant == "softmax" else scale / 2)
        v = gen.standard_normal(self.q * self.q) * scale
        return np.concatenate([a, v])

    def pack(self, B: np.ndarray, V: np.ndarray) -> np.ndarray:
        return np.concatenate([B[self.off], V.ravel()])

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        B = np.zeros((self.L, self.L))
        B[self.off] = x[: self.n_att]
        V = x[self.n_att :].reshape(self.q, self.q)
        if self.variant == "linear":
            return B, V, None
        return _row_softmax(B), V, B

    def centre_columns(self, x: np.ndarray) -> np.ndarray:
        """Subtract every column mean of ``V``: the data term is unchanged, the penalty lower."""
        B, V, S = self.unpack(x)
        return self.pack(B if S is None else S, V - V.mean(axis=0, keepdims=True))

    def balance(self, x: np.ndarray) -> np.ndarray:
        """Linear variant: ``(c A, V / c)`` with ``|c A| = |V / c|`` (same data term, lowest penalty)."""
        a, v = np.linalg.norm(x[: self.n_att]), np.linalg.norm(x[self.n_att :])
        if self.variant != "linear" or a == 0.0 or v == 0.0:
            return x
        c = math.sqrt(v / a)
        return np.concatenate([c * x[: self.n_att], x[self.n_att :] / c])

    # ------------------------------------------------------------------ objective
    def _batch(self, idx):
        if idx is None:
            return self.X, self.tgt, self.M
        Xb, tb = _position_major(self.s[idx], self.q)
        return Xb, tb, len(idx)

    def forward(self, A: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The forward pass on the whole training set at attention ``A`` (L, L) and value ``V`` (q, q).

        Returns
        -------
        C : ndarray, shape (L M, q)
            ``C = A X`` (site-major rows).
        P : ndarray, shape (L M, q)
            ``softmax(C V^T)``, the model's conditionals at every (site, sequence).
        nll : float
            The summed negative log-likelihood of the training colours.
        """
        return self._forward(A, V, self.X, self.tgt, self.M)

    def _forward(self, A, V, X, tgt, n):
        """``C`` (L n, q), ``P = softmax(Z)`` (L n, q) and the summed negative log-likelihood."""
        L, q = self.L, self.q
        C = (A @ X.reshape(L, n * q)).reshape(L * n, q)
        P = C @ V.T  # the logits Z, turned into probabilities in place
        picked = float(P.ravel()[tgt].sum())
        m = P.max(axis=1, keepdims=True)
        P -= m
        np.exp(P, out=P)
        tot = P.sum(axis=1, keepdims=True)
        P /= tot
        nll = float(m.sum() + np.log(tot).sum() - picked)
        return C, P, nll

    def loss_grad(self, x: np.ndarray, idx: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Penalised objective F (per training sequence) and its gradient on rows ``idx``.

        On a mini-batch the data term is averaged over the batch, the penalty is the full one
        divided by M, so the expected mini-batch objective is F.
        """
        X, tgt, n = self._batch(idx)
        A, V, S = self.unpack(x)
        C, G, nll = self._forward(A, V, X, tgt, n)
        if idx is None:
            self._cache = (x.copy(), nll)
        G.ravel()[tgt] -= 1.0
        dV = G.T @ C
        dA = (G @ V).reshape(self.L, -1) @ X.reshape(self.L, -1).T
        if self.variant == "softmax":
            dB = A * (dA - np.sum(A * dA, axis=1, keepdims=True))
            B = S
        else:
            dB = dA
            B = A
        pen = 0.5 * self.coef * (float(np.sum(B[self.off] ** 2)) + float(np.sum(V * V)))
        f = nll / n + pen / self.M
        g = np.concatenate([dB[self.off] / n + self.coef * B[self.off] / self.M,
                            dV.ravel() / n + self.coef * V.ravel() / self.M])
        return f, g

    def hessp(self, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Exact Hessian of F times ``d`` (linear variant), full training set."""
        if self.variant != "linear":
            raise ValueError("the Hessian-vector product is implemented for the linear variant")
        A, V, _ = self.unpack(x)
        E, W, _ = self.unpack(d)
        key = getattr(self, "_hcache", None)
        if key is None or not np.array_equal(key[0], x):
            C, P, _ = self._forward(A, V, self.X, self.tgt, self.M)
            G = P.copy()
            G.ravel()[self.tgt] -= 1.0
            self._hcache = key = (x.copy(), C, P, G)
        _, C, P, G = key
        X2 = self.X.reshape(self.L, -1)
        dC = (E @ X2).reshape(self.L * self.M, self.q)
        dZ = dC @ V.T + C @ W.T
        dG = P * (dZ - np.sum(P * dZ, axis=1, keepdims=True))
        hV = dG.T @ C + G.T @ dC
        hA = (dG @ V + G @ W).reshape(self.L, -1) @ X2.T
        return (np.concatenate([hA[self.off], hV.ravel()]) + self.coef * d) / self.M

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Exact Hessian of F (linear variant), dense (n_params, n_params), assembled blockwise.

        With ``S_r = diag(p_r) - p_r p_r^T`` for every (site, sequence) ``r`` and ``Y[n, j, a] =
        V[a, s_nj]``: ``H_AA`` is block diagonal over rows ``i``, ``sum_n Y_nj^T S Y_nk``;
        ``H_VV[(a, c), (b, d)] = sum_r S_r[a, b] C_rc C_rd``; ``H_AV[(i, j), (a, c)] = sum_n
        (S Y_nj)_a C_(i,n)c + sum_n G_(i,n)a [s_nj = c]`` (the last term: ``z`` is bilinear).
        About ``M L q^4`` operations (the ``H_VV`` Gram matrix), far fewer than ``n_params``
        Hessian-vector products.
        """
        if self.variant != "linear":
            raise ValueError("the Hessian is implemented for the linear variant")
        from scipy.linalg import blas

        L, M, q = self.L, self.M, self.q
        A, V, _ = self.unpack(x)
        C, P, _ = self._forward(A, V, self.X, self.tgt, M)
        G = P.copy()
        G.ravel()[self.tgt] -= 1.0
        C3, P3, G3 = (a.reshape(L, M, q) for a in (C, P, G))
        Yt = (self.X.reshape(L * M, q) @ V.T).reshape(L, M, q)  # Yt[j, n, a] = V[a, s_nj]
        Y2 = Yt.reshape(L, M * q)
        Xn = self.X.transpose(1, 0, 2).reshape(M, L * q)  # Xn[n, (j, c)] = [s_nj = c]
        HAA = np.zeros((L, L, L, L))  # [i, j, i', k], block diagonal in i = i'
        HAV = np.empty((L, L, q, q))  # [i, j, a, c]
        for i in range(L):
            p = P3[i]  # (M, q)
            U = np.einsum("na,jna->jn", p, Yt)  # U[j, n] = p . Y_nj
            Yp = Yt * p[None, :, :]
            HAA[i, :, i, :] = Yp.reshape(L, M * q) @ Y2.T - U @ U.T
            SY = Yp - p[None, :, :] * U[:, :, None]  # (S Y_nj)_a, layout [j, n, a]
            HAV[i] = (SY.transpose(0, 2, 1).reshape(L * q, M) @ C3[i]).reshape(L, q, q)
            HAV[i] += (G3[i].T @ Xn).reshape(q, L, q).transpose(1, 0, 2)
        HVV = np.zeros((q, q, q, q))  # [a, c, b, d]
        for a in range(q):
            HVV[a, :, a, :] = C.T @ (C * P[:, a : a + 1])
        gram = np.zeros((q * q, q * q), order="F")
        for k in range(0, L * M, 2048):  # - sum_r (p_r (x) C_r)(p_r (x) C_r)^T, upper triangle
            K = (P[k : k + 2048, :, None] * C[k : k + 2048, None, :]).reshape(-1, q * q)
            gram = blas.dsyrk(1.0, K, trans=1, beta=1.0, c=gram, lower=0, overwrite_c=1)
        gram = np.triu(gram) + np.triu(gram, 1).T
        HVV = HVV.reshape(q * q, q * q) - gram
        sel = self.off.ravel()
        haa = HAA.reshape(L * L, L * L)[np.ix_(sel, sel)]
        hav = HAV.reshape(L * L, q * q)[sel]
        H = np.block([[haa, hav], [hav.T, HVV]])
        H[np.diag_indices_from(H)] += self.coef
        return H / M

    def train_loss(self, x: np.ndarray) -> float:
        if self._cache is not None and np.array_equal(self._cache[0], x):
            return self._cache[1] / self.M
        A, V, _ = self.unpack(x)
        return _nll(np.matmul(A, V.T[self.s]), self.s)

    def loss_on(self, x: np.ndarray, s: np.ndarray) -> float:
        A, V, _ = self.unpack(x)
        return _nll(np.matmul(A, V.T[s]), s)

    # ------------------------------------------------------------------ initialisation
    def mean_field_init(self) -> np.ndarray:
        """Deterministic start: the nearest ``A (x) V`` to the mean-field couplings.

        Mean-field couplings ``-(C + eps I)^{-1}`` from the one-hot covariance ``C`` (``eps`` = 10 %
        of its mean diagonal), each ``q x q`` block double-centred; the leading singular pair of the
        (pairs x colour pairs) matrix of off-diagonal blocks gives ``A`` and ``V`` (Van Loan and
        Pitsianis' nearest Kronecker product); one global scale is then fitted to the data term.
        """
        L, q, M = self.L, self.q, self.M
        Xf = self.X.transpose(1, 0, 2).reshape(M, L * q)
        Cov = np.cov(Xf, rowvar=False) if M > 1 else np.zeros((L * q, L * q))
        eps = 0.1 * max(float(np.trace(Cov)) / (L * q), 1e-3)
        J = -np.linalg.inv(Cov + eps * np.eye(L * q)).reshape(L, q, L, q).transpose(0, 2, 1, 3)
        double_centre_in_place(J)  # J is inv's new array (a transposed view of it)
        u, sv, vt = np.linalg.svd(J[self.off].reshape(self.n_att, q * q), full_matrices=False)
        A = np.zeros((L, L))
        A[self.off] = math.sqrt(sv[0]) * u[:, 0]
        V = math.sqrt(sv[0]) * vt[0].reshape(q, q)
        if self.variant == "softmax":  # positive rows: start from uniform attention and |V|
            return self.pack(np.zeros((L, L)), V * (L - 1) * float(np.abs(A).mean()))
        from scipy import optimize  # here, not at import: it costs 19 MB of every process

        res = optimize.minimize_scalar(
            lambda t: self.loss_grad(self.pack(math.exp(t) * A, math.exp(t) * V))[0],
            bounds=(-4.0, 4.0), method="bounded", options={"xatol": 1e-3})
        return self.pack(math.exp(res.x) * A, math.exp(res.x) * V)


#: largest number of parameters for which the Newton polish forms the dense Hessian (beyond it:
#: trust-region Newton-CG with Hessian-vector products)
DENSE_NEWTON_MAX = 3000


def _trust_region_step(w: np.ndarray, U: np.ndarray, gt: np.ndarray, radius: float) -> np.ndarray:
    """Exact minimiser of ``g.p + p.H p / 2`` over ``|p| <= radius`` from ``H = U diag(w) U^T``
    and ``gt = U^T g`` (Moré and Sorensen; the shift ``lam`` found by bisection, hard case
    included)."""
    lo = max(0.0, -float(w[0]))

    def step(lam):
        return -gt / (w + lam)

    if w[0] > 0:
        p = step(0.0)
        if np.linalg.norm(p) <= radius:
            return U @ p
    shift = lo * (1.0 + 1e-12) + 1e-300
    p = step(shift)
    if np.linalg.norm(p) <= radius:  # hard case: move along the lowest eigenvector to the boundary
        p[0] = 0.0 if w[0] < 0 else p[0]
        tau = math.sqrt(max(radius**2 - float(p @ p), 0.0))
        p[0] += tau if gt[0] <= 0 else -tau
        return U @ p
    hi = lo + float(np.linalg.norm(gt)) / radius + 1.0
    for _ in range(200):  # |p(lam)| decreases in lam: bisection to |p| = radius
        mid = 0.5 * (shift + hi)
        if np.linalg.norm(step(mid)) > radius:
            shift = mid
        else:
            hi = mid
        if hi - shift <= 1e-13 * hi:
            break
    return U @ step(hi)


def _newton_dense(problem: FactoredAttentionProblem, x: np.ndarray, *, gtol: float, max_iter: int,
                  record: Callable) -> tuple[np.ndarray, int, str]:
    """Trust-region Newton with the exact dense Hessian (linear variant) until
    ``|grad F| max(|x|, 1) <= gtol``; returns the point, the iterations and a message."""
    f, g = problem.loss_grad(x)
    radius = 0.1 * max(float(np.linalg.norm(x)), 1.0)
    for it in range(max_iter):
        if float(np.linalg.norm(g)) * max(float(np.linalg.norm(x)), 1.0) <= gtol:
            return x, it, f"stationary after {it} Newton iterations"
        H = problem.hessian(x)
        w, U = np.linalg.eigh(H)
        p = _trust_region_step(w, U, U.T @ g, radius)
        pred = -float(g @ p + 0.5 * p @ (H @ p))
        f_new, g_new = problem.loss_grad(x + p)
        # at round-off level the predicted decrease is meaningless: accept if F does not rise
        tiny = pred <= 1e-13 * max(abs(f), 1.0)
        rho = 1.0 if tiny and f_new <= f + 1e-14 * max(abs(f), 1.0) else (f - f_new) / pred
        pn = float(np.linalg.norm(p))
        if rho < 0.25:
            radius = 0.25 * pn
        elif rho > 0.75 and pn >= 0.99 * radius:
            radius *= 2.0
        if rho > 1e-4:
            x, f, g = x + p, f_new, g_new
            record(x)
        if radius < 1e-14 * max(float(np.linalg.norm(x)), 1.0):
            return x, it + 1, "trust region collapsed (no further decrease at round-off level)"
    stat = float(np.linalg.norm(g)) * max(float(np.linalg.norm(x)), 1.0)
    return x, max_iter, (f"stationary after {max_iter} Newton iterations" if stat <= gtol
                         else f"Newton iteration limit {max_iter} reached")


def _position_major(s: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """One-hot ``X[j, mu, c] = [s_j^mu = c]`` and the flat indices of the observed colours."""
    n, L = s.shape
    X = np.zeros((L, n, q))
    rows = np.arange(L)[:, None] * n + np.arange(n)[None, :]  # (L, n)
    tgt = (rows * q + s.T).ravel()
    X.ravel()[tgt] = 1.0
    return X, tgt


def _row_softmax(B: np.ndarray) -> np.ndarray:
    """``softmax_{j != i}(B_ij)`` row by row, zero diagonal."""
    L = B.shape[0]
    Bm = np.where(np.eye(L, dtype=bool), -np.inf, B)
    return softmax(Bm, axis=1)


def _history_recorder(problem: FactoredAttentionProblem, monitor) -> tuple[list, list, Callable]:
    hist: list[float] = []
    mon: list[float] = []

    def record(x: np.ndarray) -> None:
        hist.append(problem.train_loss(x))
        if monitor is not None:
            mon.append(problem.loss_on(x, monitor))

    return hist, mon, record


def _stationarity(problem: FactoredAttentionProblem, x: np.ndarray) -> tuple[float, np.ndarray, float]:
    f, g = problem.loss_grad(x)
    gn = float(np.linalg.norm(g))
    return f, g, gn * max(float(np.linalg.norm(x)), 1.0)


def fit_lbfgs(problem: FactoredAttentionProblem, x0: np.ndarray, *, max_iter: int, tol: float,
              monitor: np.ndarray | None, gtol: float, newton_iter: int, init: str
              ) -> tuple[np.ndarray, FitInfo]:
    """L-BFGS from ``x0`` (``V`` column-centred first); if ``stationarity > gtol`` after it, the
    linear variant is rebalanced and polished by trust-region Newton (dense or CG).

    Parameters
    ----------
    problem : FactoredAttentionProblem
    x0 : ndarray
        Packed start (:meth:`FactoredAttentionProblem.pack`).
    max_iter, tol : int, float
        L-BFGS's iteration limit and relative tolerance on ``F`` (``ftol``).
    monitor : ndarray or None
        Sequences whose MLM loss is recorded after every iteration.
    gtol : float
        Stationarity accepted without the Newton polish (and reported as ``converged``).
    newton_iter : int
        Most Newton iterations of the polish (0: none).
    init : str
        How ``x0`` was made (recorded in the :class:`FitInfo`).

    Returns
    -------
    x : ndarray
        The packed parameters.
    info : FitInfo
    """
    from scipy import optimize  # here, not at import: it costs 19 MB of every process

    hist, mon, record = _history_recorder(problem, monitor)
    res = optimize.minimize(
        problem.loss_grad,
        problem.centre_columns(x0),
        jac=True,
        method="L-BFGS-B",
        callback=record,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-12, "maxcor": 30},
    )
    x, messages, n_newton = res.x, [str(res.message)], 0
    f, _, stat = _stationarity(problem, x)
    if problem.variant == "linear" and stat > gtol and newton_iter > 0:
        xb = problem.balance(x)
        if xb.size <= DENSE_NEWTON_MAX:
            xn, nit, msg = _newton_dense(problem, xb, gtol=gtol, max_iter=newton_iter,
                                         record=record)
        else:
            scale = max(float(np.linalg.norm(xb)), 1.0)
            nt = optimize.minimize(problem.loss_grad, xb, jac=True, hessp=problem.hessp,
                                   method="trust-ncg", callback=record,
                                   options={"gtol": gtol / scale, "maxiter": newton_iter})
            xn, nit, msg = nt.x, int(nt.nit), f"Newton-CG: {nt.message}"
        fb, _, statb = _stationarity(problem, xn)
        if fb <= f:  # trust-region steps only lower F; keep the better point in any case
            x, f, stat, n_newton = xn, fb, statb, nit
            messages.append(msg)
    _, g, _ = _stationarity(problem, x)
    return x, _fit_info(problem, x, "lbfgs", f, g, stat, gtol=gtol, n_iter=int(res.nit) + n_newton,
                        message="; ".join(messages), hist=hist, mon=mon, init=init,
                        newton_iter=n_newton)


def _run_sgd(problem: FactoredAttentionProblem, x0, gen, *, epochs: int, batch_size: int, lr: float, monitor,
             gtol: float, init: str):
    hist, mon, record = _history_recorder(problem, monitor)
    x = problem.centre_columns(x0)
    M = problem.M
    per_epoch = math.ceil(M / batch_size)
    T = epochs * per_epoch
    t = 0
    for _ in range(epochs):
        perm = gen.permutation(M)
        for k in range(per_epoch):
            idx = perm[k * batch_size : (k + 1) * batch_size]
            _, g = problem.loss_grad(x, idx)
            x -= lr * 0.5 * (1.0 + math.cos(math.pi * t / T)) * g
            t += 1
        record(x)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"SGD diverged (non-finite parameters) at lr={lr}: lower lr")
    f, g, stat = _stationarity(problem, x)
    return x, _fit_info(problem, x, "sgd", f, g, stat, gtol=gtol, n_iter=epochs,
                        message=f"cosine schedule, {T} steps of batch {batch_size}, lr {lr:g}",
                        hist=hist, mon=mon, init=init)


def _fit_info(problem: FactoredAttentionProblem, x, method: str, f, g, stat, *, gtol: float, n_iter: int,
              message: str, hist, mon, init: str, newton_iter: int | None = None) -> FitInfo:
    """The :class:`FitInfo` of a finished fit; ``converged`` is the measured stationarity test."""
    extra = {} if newton_iter is None else {"newton_iter": newton_iter}
    return FitInfo(variant=problem.variant, method=method, lam=problem.lam, n_iter=n_iter,
                   converged=bool(stat <= gtol), message=message, objective=float(f),
                   train_loss=problem.train_loss(x), history=np.asarray(hist),
                   monitor_history=np.asarray(mon), gradient_norm=float(np.linalg.norm(g)),
                   stationarity=float(stat), init=init, **extra)
