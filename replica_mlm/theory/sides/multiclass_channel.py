"""The channel side of the multi-class replica theory: softmax cross-entropy in K = q - 1 dimensions.

At order parameters ``Q`` (student overlap), ``M = W^T Sigma W*`` (student x teacher), ``rho =
W*^T Sigma W*`` and ``V`` (all K x K), the student's field ``h`` and the teacher's field ``nu`` on a
fresh input are jointly Gaussian,

    h ~ N(0, Q),     nu | h ~ N(M^T Q^{-1} h + b*, rho - M^T Q^{-1} M),

and the label is drawn from ``P(y = a | nu) = softmax(P nu)_a`` (``P`` the q x K basis of
:func:`~replica_mlm.tasks.potts_site.simplex_basis`). With the proximal point

    z*(y, h) = argmin_z (1/2)(z - h)^T V^{-1} (z - h) + CE(y, P z)

(a strongly convex problem in K dimensions: Newton's method with backtracking, vectorised over all
nodes), ``f = V^{-1}(z* - h) = P^T(e_y - softmax(P z*))`` and, with ``H`` the Hessian of the
cross-entropy at ``z*``, ``-d f / d h = H (I + V H)^{-1}``, the conjugates are

    Q_hat = alpha E_h sum_y Z_y(h) f_y f_y^T,       V_hat = alpha E_h sum_y Z_y(h) H_y (I + V H_y)^{-1},
    M_hat = alpha E_h sum_y f_y dZ_y(h)^T,

where ``Z_y(h) = E_{nu|h} P(y | nu)`` and ``dZ_y(h) = E_{nu|h} grad_nu P(y | nu)`` (Stein's lemma
turns the derivative in the teacher's conditional mean into the gradient of the channel, so no
inverse of the conditional covariance appears). Every expectation is over the one joint Gaussian
of ``(h, nu)``, written with standard normals ``(xi, eta)`` as ``h = L xi`` (``L`` the Cholesky
factor of ``Q``), ``nu = M^T L^{-T} xi + b* + S eta`` (``S`` the symmetric square root of the
conditional covariance).

Integration rules (:class:`Rule`): ``"hermite"``, a tensor Gauss-Hermite rule with ``n`` nodes per
dimension for ``xi`` and for ``eta`` (``n^K`` proximal problems per class); ``"sobol"``, a scrambled
Sobol' sequence of ``2^m`` points in 2K dimensions (``xi`` and ``eta`` jointly), fixed by its seed,
so that the hats are a deterministic, smooth function of the order parameters (common random
numbers across the solver's iterations). The error of a rule is measured, not assumed, by the
solver (:mod:`.multiclass`): a finer Gauss-Hermite rule, or the spread over independent
scramblings. See docs/multiclass.md.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.special import log_softmax

#: elements of the largest (nodes x classes x K x K) block handled at once
BLOCK = 1 << 22
#: Newton iterations of the proximal problem before giving up
PROX_ITER = 100
EPS = np.finfo(float).eps
#: halvings tried by the line search of the proximal Newton method
LINE = 12
#: the error rate (an indicator, argmax, on which a tensor rule converges slowly): scrambled Sobol'
#: rules of 2^EG_M points, EG_SCRAMBLINGS of them (seeds 1000, ...)
EG_M, EG_SCRAMBLINGS = 15, 4


@dataclass(frozen=True)
class Rule:
    """Standard-normal nodes for the joint integral over ``(xi, eta)``.

    Attributes
    ----------
    xi : ndarray (N, K)
        Outer nodes (student's field).
    eta : ndarray (N, R, K) or (1, R, K)
        Inner nodes of the teacher's conditional field, per outer node (or shared).
    w_xi : ndarray (N,), w_eta : ndarray (R,)
        Weights, each summing to one.
    name : str
    """

    xi: np.ndarray
    eta: np.ndarray
    w_xi: np.ndarray
    w_eta: np.ndarray
    name: str


@cache
def _hermite_1d(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


def hermite_rule(K: int, n: int) -> Rule:
    """Tensor Gauss-Hermite: ``n^K`` outer nodes and ``(n // 2 + 2)^K`` shared inner nodes.

    The inner integrand (the softmax of the teacher's field) is entire and varies on the scale
    of its conditional spread, so fewer inner nodes suffice; the solver's finer-rule check
    measures both together.
    """
    x, w = _hermite_1d(n)
    grid = np.array(list(itertools.product(range(n), repeat=K)))
    m = n // 2 + 2
    xe, we = _hermite_1d(m)
    inner = np.array(list(itertools.product(range(m), repeat=K)))
    return Rule(xi=x[grid], eta=xe[inner][None], w_xi=np.prod(w[grid], axis=1),
                w_eta=np.prod(we[inner], axis=1), name=f"hermite(n={n}, inner {m})")


def sobol_rule(K: int, m: int, seed: int) -> Rule:
    """Scrambled Sobol' points (``2^m``) in 2K dimensions mapped to standard normals."""
    from scipy.stats import norm, qmc

    u = qmc.Sobol(d=2 * K, scramble=True, seed=seed).random_base2(m)
    g = norm.ppf(u)
    n = g.shape[0]
    return Rule(xi=g[:, :K], eta=g[:, None, K:], w_xi=np.full(n, 1.0 / n), w_eta=np.ones(1),
                name=f"sobol(m={m}, seed={seed})")


def _sym_sqrt(a: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((a + a.T) / 2)
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T


def prox(h: np.ndarray, y: np.ndarray, V: np.ndarray, P: np.ndarray, *, tol: float = 1e-13
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Proximal point of the cross-entropy for fields ``h`` (N, K) and classes ``y`` (N,).

    Returns ``(z, f, D)``: ``z*`` (N, K), ``f = P^T (e_y - softmax(P z*))`` (N, K) and
    ``D = -df/dh = H (I + V H)^{-1}`` (N, K, K). Raises FloatingPointError if Newton's method does
    not reach a relative step of ``tol``.
    """
    Vinv = np.linalg.inv(V)
    Vinv = (Vinv + Vinv.T) / 2
    Py = P[y]
    z = h.copy()

    active = np.arange(h.shape[0])
    for _ in range(PROX_ITER):
        za, ha = z[active], h[active]
        s = _softmax(za @ P.T)
        sp = s @ P
        g = (za - ha) @ Vinv + sp - Py[active]
        H = np.einsum("nq,qa,qb->nab", s, P, P) - sp[:, :, None] * sp[:, None, :] + Vinv
        step = np.linalg.solve(H, g[..., None])[..., 0]
        # the full Newton step where it achieves a quarter of the decrease its quadratic model
        # predicts (or the values differ only by rounding); elsewhere the best of the steps 2^-k
        # (k = 0..LINE): plain Newton can swing from side to side where the softmax saturates
        pya = Py[active]
        f0 = _obj_rows(za, ha, Vinv, P, pya)
        f1 = _obj_rows(za - step, ha, Vinv, P, pya)
        predicted = 0.5 * _last_sum(g * step)[:, 0]
        t = np.ones(active.size)
        hard = np.flatnonzero((f1 > f0 - 0.25 * predicted) & (predicted > 1e-12 * (1.0 + np.abs(f0))))
        if hard.size:
            ts = 2.0 ** -np.arange(LINE + 1)
            trial = za[hard][None] - ts[:, None, None] * step[hard][None]  # (LINE + 1, n, K)
            vals = _obj_rows(trial.reshape(-1, za.shape[1]), np.tile(ha[hard], (ts.size, 1)), Vinv, P,
                             np.tile(pya[hard], (ts.size, 1))).reshape(ts.size, -1)
            best = np.argmin(vals, axis=0)
            # near the minimum the values differ only by rounding: keep the full step there
            full = vals[0] <= vals[best, np.arange(best.size)] + 1e-12 * (1.0 + np.abs(vals[0]))
            t[hard] = np.where(full, 1.0, ts[best])
        z[active] = za - t[:, None] * step
        # converged: a negligible step, or a gradient at the rounding level of its terms (where
        # V^{-1} is small a rounding-level gradient can still give a step above tol)
        pull = _last_max(np.abs((za - ha) @ Vinv))[:, 0]
        small = ((_last_max(np.abs(step))[:, 0] <= tol * (1.0 + _last_max(np.abs(za))[:, 0]))
                 | (_last_max(np.abs(g))[:, 0] <= 16 * EPS * (1.0 + pull)))
        active = active[~small]
        if active.size == 0:
            break
    else:
        raise FloatingPointError(f"the cross-entropy prox did not converge at {active.size} nodes "
                                 f"(largest |h| {np.max(np.abs(h[active])):.3g})")
    s = _softmax(z @ P.T)
    sp = s @ P
    f = Py - sp
    Hs = np.einsum("nq,qa,qb->nab", s, P, P) - sp[:, :, None] * sp[:, None, :]
    eye = np.eye(V.shape[0])
    D = np.linalg.solve(eye + Hs @ V, Hs)  # (I + H V)^{-1} H = H (I + V H)^{-1}
    D = (D + np.swapaxes(D, 1, 2)) / 2
    return z, f, D


def _obj_rows(z, h, Vinv, P, Py):
    d = z - h
    return 0.5 * _last_sum((d @ Vinv) * d)[:, 0] + _lse(z @ P.T) - _last_sum(z * Py)[:, 0]


#: the last axis' reductions are written out over its slices up to this length: numpy reduces a short
#: contiguous last axis row by row (4 ms for the max of a 4096 x 16 x 3 block, against 0.9 ms over the
#: slices; the sum 1.6 ms against 0.07 ms), and below 8 terms numpy's sum adds them in the same order,
#: so the results are bit-identical
SHORT = 8


def _last_max(a: np.ndarray) -> np.ndarray:
    """Maximum over the last axis, keeping it (length 1)."""
    if a.shape[-1] > SHORT:
        return np.max(a, axis=-1, keepdims=True)
    top = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        np.maximum(top, a[..., k], out=top)
    return top[..., None]


def _last_sum(a: np.ndarray) -> np.ndarray:
    """Sum over the last axis, keeping it (length 1); in numpy's order."""
    if a.shape[-1] > SHORT:
        return np.sum(a, axis=-1, keepdims=True)
    total = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        total += a[..., k]
    return total[..., None]


def _lse(a: np.ndarray) -> np.ndarray:
    """log-sum-exp over the last axis (plain numpy: scipy's overhead dominates small blocks)."""
    top = _last_max(a)
    return top[..., 0] + np.log(_last_sum(np.exp(a - top))[..., 0])


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - _last_max(a))
    return e / _last_sum(e)


def fields(rule: Rule, Q: np.ndarray, M: np.ndarray, rho: np.ndarray, bias: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Student fields ``h`` (N, K), teacher means given h (N, K) and the conditional square root ``S``."""
    L = np.linalg.cholesky(Q)
    h = rule.xi @ L.T
    B = np.linalg.solve(L, M)  # L^{-1} M
    mean = rule.xi @ B + bias  # M^T L^{-T} xi + b
    return h, mean, _sym_sqrt(rho - B.T @ B)


def channel_integrals(rule: Rule, Q, M, rho, bias, P) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Student fields ``h`` (N, K), ``Z_y(h)`` (N, q) and ``dZ_y(h)`` (N, q, K) at the outer nodes."""
    h, mean, S = fields(rule, Q, M, rho, bias)
    eta = rule.eta
    N, R, K = h.shape[0], rule.eta.shape[1], h.shape[1]
    q = P.shape[0]
    Z = np.empty((N, q))
    dZ = np.empty((N, q, K))
    step = max(1, BLOCK // max(1, R * q * K))
    for a in range(0, N, step):
        b = min(N, a + step)
        e = eta if eta.shape[0] == 1 else eta[a:b]
        nu = mean[a:b, None, :] + e @ S.T  # (n, R, K)
        s = _softmax(nu @ P.T)  # (n, R, q)
        sw = s * rule.w_eta[None, :, None]
        wsum = sw.sum(axis=1)
        Z[a:b] = wsum
        sp = s @ P  # (n, R, K)
        # grad_nu s_y = s_y (P_y - s P)
        dZ[a:b] = wsum[:, :, None] * P[None] - np.matmul(np.swapaxes(sw, 1, 2), sp)
    return h, Z, dZ


def hats(rule: Rule, *, alpha: float, Q, M, rho, V, bias, P, symmetric: bool = False) -> dict:
    """``Q_hat, M_hat, V_hat`` (K x K) and the mean training loss at the order parameters.

    ``symmetric``: the joint law of ``(h, nu, y)`` is invariant under colour permutations (every
    order parameter a multiple of I, no bias), so that every class contributes alike; only class
    0 is integrated (times q) and the hats are projected onto the identity.
    """
    h, Z, dZ = channel_integrals(rule, Q, M, rho, bias, P)
    N, K = h.shape
    q = P.shape[0]
    classes = [0] if symmetric else list(range(q))
    out = {"Q_hat": np.zeros((K, K)), "M_hat": np.zeros((K, K)), "V_hat": np.zeros((K, K)),
           "train_loss": 0.0}
    step = max(1, BLOCK // max(1, K * K))
    for y in classes:
        for a in range(0, N, step):
            b = min(N, a + step)
            ys = np.full(b - a, y)
            z, f, D = prox(h[a:b], ys, V, P)
            wz = rule.w_xi[a:b] * Z[a:b, y]
            out["Q_hat"] += np.einsum("n,na,nb->ab", wz, f, f)
            out["V_hat"] += np.einsum("n,nab->ab", wz, D)
            out["M_hat"] += np.einsum("n,na,nb->ab", rule.w_xi[a:b], f, dZ[a:b, y])
            out["train_loss"] += float(wz @ (-log_softmax(z @ P.T, axis=1)[:, y]))
    scale = alpha * (q if symmetric else 1)
    for key in ("Q_hat", "M_hat", "V_hat"):
        out[key] = out[key] * scale
        if symmetric:
            out[key] = np.trace(out[key]) / K * np.eye(K)
    out["Q_hat"] = (out["Q_hat"] + out["Q_hat"].T) / 2
    out["V_hat"] = (out["V_hat"] + out["V_hat"].T) / 2
    out["train_loss"] *= q if symmetric else 1
    return out


def test_measures(rule: Rule, *, Q, M, rho, bias, P) -> dict[str, float]:
    """Test cross-entropy ``E sum_y P(y|nu) CE(y, P h)`` and error ``P(y != argmax P h)``."""
    h, Z, _ = channel_integrals(rule, Q, M, rho, bias, P)
    logits = h @ P.T
    ce = -log_softmax(logits, axis=1)
    pick = np.argmax(logits, axis=1)
    return {"test_loss": float(rule.w_xi @ np.sum(Z * ce, axis=1)),
            "eg": float(rule.w_xi @ (1.0 - Z[np.arange(h.shape[0]), pick]))}


def error_rates(*, Q, M, rho, bias, P) -> list[float]:
    """The error rate at ``(Q, M)`` by each of :data:`EG_SCRAMBLINGS` scrambled Sobol' rules of
    ``2^EG_M`` points (:func:`test_measures`): their mean is the rate, their spread its error."""
    return [test_measures(sobol_rule(Q.shape[0], EG_M, 1000 + r), Q=Q, M=M, rho=rho, bias=bias, P=P)["eg"]
            for r in range(EG_SCRAMBLINGS)]


def square_gaussian_hats(*, alpha: float, Q, M, rho, V, noise: float) -> dict:
    """Closed form for the square loss ``|y - z|^2 / 2`` with the gaussian channel ``y = nu + sigma eps``.

    ``f = (I + V)^{-1}(y - h)``, ``-df/dh = (I + V)^{-1}``: ``V_hat = M_hat = alpha (I + V)^{-1}``,
    ``Q_hat = alpha (I + V)^{-1} E[(y - h)(y - h)^T] (I + V)^{-1}``.
    """
    K = Q.shape[0]
    G = np.linalg.inv(np.eye(K) + V)
    G = (G + G.T) / 2
    E = rho + noise * np.eye(K) - M - M.T + Q
    return {"Q_hat": alpha * G @ E @ G, "M_hat": alpha * G, "V_hat": alpha * G,
            "train_loss": float(np.trace(G @ E @ G)) / 2}


#: most nodes ``order^(2K)`` of a tensor Gauss-Hermite rule (outer times inner dimensions)
HERMITE_NODES = 1 << 26


def rule_size(K: int, integration: str, order: int) -> int:
    """Nodes of the rule :func:`rule_for` would build (outer times inner), or ValueError naming
    ``order`` if it is too large: ``order^(2K) > 2^26`` (Gauss-Hermite) or ``order > 24`` (Sobol')."""
    if integration == "hermite":
        if order ** (2 * K) > HERMITE_NODES:
            raise ValueError(f"order = {order} Gauss-Hermite nodes per dimension make a tensor rule of "
                             f"order^{2 * K} nodes in 2K = {2 * K} dimensions (limit 2^26): lower order "
                             "or use integration='sobol'")
        return order**K * (order // 2 + 2) ** K
    if order > 24:
        raise ValueError(f"sobol rules take order = m <= 24 (2^m points), got {order}")
    return 2**order


def rule_for(K: int, integration: str, *, order: int, seed: int) -> Rule:
    """The rule named by ``integration`` (``"hermite"`` with ``order`` nodes per dimension,
    ``"sobol"`` with ``2^order`` points and ``seed``)."""
    rule_size(K, integration, order)
    if integration == "hermite":
        return hermite_rule(K, order)
    return sobol_rule(K, order, seed)


def _cold_hats(alpha: float, rho) -> dict:
    """The hats of the cold start: those of the square loss's size."""
    K = rho.shape[0]
    eye = np.eye(K)
    scale = 1.0 + np.trace(rho) / K
    return {"V_hat": alpha / 2 * eye, "Q_hat": alpha * scale / 4 * eye, "M_hat": alpha / 2 * eye}


@dataclass(frozen=True, eq=False)
class SoftmaxCovariates:
    """The channel side of a Gaussian-covariate site with the softmax channel, learnt with the
    softmax cross-entropy (:class:`.interfaces.MatrixChannelSide`)."""

    rule: Rule
    rho: np.ndarray
    bias: np.ndarray
    P: np.ndarray
    symmetric: bool = False

    def hats(self, alpha: float, V, Q, M) -> dict:
        return hats(self.rule, alpha=alpha, Q=Q, M=M, rho=self.rho, V=V, bias=self.bias, P=self.P,
                    symmetric=self.symmetric)

    def cold_hats(self, alpha: float) -> dict:
        return _cold_hats(alpha, self.rho)


@dataclass(frozen=True, eq=False)
class SquareCovariates:
    """The channel side of a K-output Gaussian-covariate site with the gaussian channel, learnt
    with the square loss, in closed form (:class:`.interfaces.MatrixChannelSide`)."""

    rho: np.ndarray
    noise: float

    def hats(self, alpha: float, V, Q, M) -> dict:
        return square_gaussian_hats(alpha=alpha, Q=Q, M=M, rho=self.rho, V=V, noise=self.noise)

    def cold_hats(self, alpha: float) -> dict:
        return _cold_hats(alpha, self.rho)
