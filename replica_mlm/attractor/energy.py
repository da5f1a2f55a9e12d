"""The local energies of the attractor network and what is built from them (docs/attractor.md).

The maths of :class:`~replica_mlm.attractor.network.AttractorNetwork` (equations in the module
docstring of :mod:`replica_mlm.attractor.network`), without input checks: the local fields and
scores, the off-diagonal softmax, the local energies ``e_i`` and the attention ``-grad e_i`` of a
batch (in chunks, so that the ``(chunk, N, N, d)`` intermediate stays below ``_CHUNK_ELEMENTS``),
and the training cost ``L(J)`` with its gradient, the local rule (with the von Mises-Fisher
normaliser of ``normalisation="vmf"``).
"""

from __future__ import annotations

import numpy as np

# largest number of float64 entries of the (chunk, N, N, d) intermediate (32 MB)
_CHUNK_ELEMENTS = 4_000_000


def _chunks(M: int, N: int, d: int):
    """Slices of a batch of M configurations small enough for the (chunk, N, N, d) intermediate."""
    size = max(1, _CHUNK_ELEMENTS // max(1, N * N * d))
    for start in range(0, M, size):
        yield slice(start, min(M, start + size))


# ----------------------------------------------------------------------------------------------
# kernels (no checks; work for real and complex arrays so that complex-step tests can use them)
# ----------------------------------------------------------------------------------------------


def _fields(J: np.ndarray, x: np.ndarray) -> np.ndarray:
    """y[m, i, j, :] = J_ij x_j^m, shape (M, N, N, d), by one batched BLAS product over j."""
    M, N, d = x.shape
    # for fixed j: (M, d) @ (d, N*d) with Jt[j, b, i*d + a] = J[i, j, a, b]
    Jt = J.transpose(1, 3, 0, 2).reshape(N, d, N * d)
    y = np.matmul(x.transpose(1, 0, 2), Jt)  # (j, M, N*d)
    return y.reshape(N, M, N, d).transpose(1, 2, 0, 3)  # (M, i, j, a)


def _scores(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x_i^T J_ij x_j (without beta), shape (M, N, N); the diagonal is garbage, masked by callers."""
    return np.einsum("mia,mija->mij", x, y, optimize=True)


def _offdiag_softmax(r: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Softmax over j != i of ``beta r_ij`` and the smooth maximum ``(1/beta) log sum exp(beta r_ij)``.

    Exact for every beta > 0: with ``r_max = max_j r_ij`` the smooth maximum is
    ``r_max + (1/beta) log sum_j exp(beta (r_ij - r_max))``, whose sum lies in [1, N - 1]. Nothing
    is multiplied by beta except the non-positive differences, which may underflow to ``-inf``
    (``exp`` then gives the exact 0 of the beta -> infinity limit) but never overflow upwards.
    Works for complex r (analytic in r) so that complex-step differentiation is exact.
    """
    N = r.shape[-1]
    off = ~np.eye(N, dtype=bool)
    re = np.where(off, r.real, -np.inf)
    top = re.max(axis=-1, keepdims=True)  # real, finite because N >= 2
    with np.errstate(over="ignore", under="ignore"):
        z = beta * (np.where(off, r, top) - top)
    w = np.where(off, np.exp(z), 0.0)
    total = w.sum(axis=-1, keepdims=True)
    return w / total, (top + np.log(total) / beta)[..., 0]


def _energies_kernel(J: np.ndarray, x: np.ndarray, beta: float) -> np.ndarray:
    out = np.empty(x.shape[:2], dtype=np.result_type(J, x))
    for sl in _chunks(*x.shape):
        xs = x[sl]
        _, smax = _offdiag_softmax(_scores(xs, _fields(J, xs)), beta)
        out[sl] = -smax
    return out


def _attention_kernel(J: np.ndarray, x: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Attention output sum_j a_ij J_ij x_j (M, N, d) and the local energies (M, N)."""
    att = np.empty(x.shape, dtype=np.result_type(J, x))
    e = np.empty(x.shape[:2], dtype=att.dtype)
    for sl in _chunks(*x.shape):
        xs = x[sl]
        y = _fields(J, xs)
        a, smax = _offdiag_softmax(_scores(xs, y), beta)
        att[sl] = np.einsum("mij,mija->mia", a, y, optimize=True)
        e[sl] = -smax
    return att, e


def _vmf_log_normaliser(kappa: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """log Z_d(kappa) and A_d(kappa) / kappa for the von Mises-Fisher law on the sphere S^{d-1}.

    Z_d(kappa) = int_{S^{d-1}} exp(kappa u . x) dx = (2 pi)^{d/2} I_{d/2-1}(kappa) / kappa^{d/2-1};
    A_d = d log Z_d / d kappa = I_{d/2}(kappa) / I_{d/2-1}(kappa) (exponentially scaled Bessel
    functions for stability; the kappa -> 0 limits are used below 1e-6). Above ``_VMF_LARGE``
    (where scipy's ``ive`` returns NaN from about 1e7 on) the scaled Bessel functions come from
    Hankel's expansion ``I_nu(k) e^-k = (2 pi k)^(-1/2) (1 - (mu-1)/(8k) + (mu-1)(mu-9)/(2!(8k)^2)
    - (mu-1)(mu-9)(mu-25)/(3!(8k)^3))``, ``mu = 4 nu^2``, whose next term is below 1e-17 there
    for d <= 64 (it agrees with ``ive`` to the last bit at k = 1e6).
    """
    from scipy.special import gammaln, ive

    nu = 0.5 * d - 1.0
    small = kappa < 1e-6
    large = kappa > _VMF_LARGE
    k = np.where(small | large, 1.0, kappa)
    i_nu = ive(nu, k)
    i_nu1 = ive(nu + 1.0, k)
    kl = np.where(large, kappa, _VMF_LARGE)
    log_z = 0.5 * d * np.log(2 * np.pi) - nu * np.log(k) + np.log(i_nu) + k
    log_zl = (0.5 * d * np.log(2 * np.pi) - nu * np.log(kl) - 0.5 * np.log(2 * np.pi * kl)
              + np.log(_hankel(nu, kl)) + kl)
    log_z0 = np.log(2.0) + 0.5 * d * np.log(np.pi) - gammaln(0.5 * d)
    log_z = np.where(small, log_z0 + np.where(small, kappa, 0.0) ** 2 / (2 * d),
                     np.where(large, log_zl, log_z))
    ratio = np.where(small, 1.0 / d, np.where(large, _hankel(nu + 1.0, kl) / _hankel(nu, kl) / kl,
                                              i_nu1 / i_nu / k))
    return log_z, ratio


#: above this kappa the vMF normaliser uses Hankel's expansion (see _vmf_log_normaliser)
_VMF_LARGE = 1e6


def _hankel(nu: float, k: np.ndarray) -> np.ndarray:
    """``I_nu(k) e^-k sqrt(2 pi k)`` by Hankel's large-k expansion, to four terms."""
    mu = 4.0 * nu * nu
    t = 1.0 / (8.0 * k)
    return 1.0 - (mu - 1) * t * (1.0 - (mu - 9) * t / 2.0 * (1.0 - (mu - 25) * t / 3.0))


def _cost_and_gradient(
    J: np.ndarray, x: np.ndarray, beta: float, weight_decay: float, normalisation: str = "none"
) -> tuple[float, np.ndarray]:
    """L(J) and dL/dJ of the module docstring for data x (M, N, d); the local rule, vectorised.

    For fixed j: G[:, j] = -(1/M) sum_m (a[m, :, j] x[m, :, :])^T x[m, j, :], one batched matmul.
    With ``normalisation="vmf"`` the per-site cost is the proper negative log conditional density
    on the sphere, e_i + (1/beta) log sum_{j != i} Z_d(beta |J_ij x_j|), whose gradient adds
    the (still local) term b_ij A_d(kappa_ij) u_ij x_j^T (see :meth:`AttractorNetwork.fit`).
    """
    M, N, d = x.shape
    G = np.zeros((N, N * d, d))
    total = 0.0
    off = ~np.eye(N, dtype=bool)
    for sl in _chunks(M, N, d):
        xs = x[sl]
        m = xs.shape[0]
        y = _fields(J, xs)
        a, smax = _offdiag_softmax(_scores(xs, y), beta)
        total += float(np.sum(-smax))
        W = a.transpose(2, 0, 1)[..., None] * xs[None]  # (j, m, i, a): a_ij x_i
        if normalisation == "vmf":
            with np.errstate(over="ignore"):
                kappa = beta * np.linalg.norm(y, axis=-1)  # (m, i, j)
            if not np.all(np.isfinite(kappa)):
                raise ValueError(
                    f"normalisation='vmf' needs kappa = beta |J_ij x_j| below 1.8e308; beta = "
                    f"{beta:g} makes it overflow: use a smaller beta"
                )
            log_z, ratio = _vmf_log_normaliser(kappa, d)
            b, lse_z = _offdiag_softmax(log_z, 1.0)  # b_ij = Z_ij / sum_k Z_ik
            total += float(np.sum(lse_z / beta))
            c = beta * b * ratio  # b_ij A(kappa_ij) u_ij = b_ij (A / kappa) beta y_ij
            W = W - (c[..., None] * y).transpose(2, 0, 1, 3)
        W = W.reshape(N, m, N * d).transpose(0, 2, 1)  # (j, i*d + a, m)
        G -= np.matmul(W, xs.transpose(1, 0, 2))  # (j, i*d + a, b)
    grad = G.reshape(N, N, d, d).transpose(1, 0, 2, 3) / M  # (i, j, a, b)
    grad[~off] = 0.0
    grad += weight_decay * J * off[:, :, None, None]
    cost = total / M + 0.5 * weight_decay * float(np.sum(J[off] ** 2))
    return cost, grad
