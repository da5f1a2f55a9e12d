"""The solvers' unknowns: order parameters packed into a well-scaled vector, and back.

Scalar order parameters ``(V, q, m)`` (the general engine, a colour-symmetric multi-class task
with ``V = v I, Q = q I, M = m I``) become ``(log V, log q, artanh(m / sqrt(q rho)))``
(``|m| < sqrt(q rho)`` holds at every admissible point; the last unknown only with a signal,
``rho > 0``). K x K matrices ``(V, Q, M)`` (a general multi-class task) become the Cholesky factors
of V and Q with logarithmic diagonals, followed by M.
"""

from __future__ import annotations

import math

import numpy as np

#: clip of m / sqrt(q rho) inside (-1, 1)
EDGE = 1.0 - 1e-15


def pack(V: float, q: float, m: float, rho: float, *, edge: float = EDGE) -> np.ndarray:
    """The unknowns ``(log V, log q, artanh(m / sqrt(q rho)))`` (the last one only with a signal,
    ``rho > 0``), the overlap ratio clipped to ``[-edge, edge]``."""
    x = [math.log(V), math.log(q)]
    if rho > 0:
        x.append(math.atanh(float(np.clip(m / math.sqrt(q) / math.sqrt(rho), -edge, edge))))
    return np.array(x)


def unpack(x, rho: float) -> tuple[float, float, float]:
    """``(V, q, m)`` from the unknowns of :func:`pack`."""
    V, q = math.exp(x[0]), math.exp(x[1])
    m = math.sqrt(q) * math.sqrt(rho) * math.tanh(x[2]) if rho > 0 else 0.0  # q rho may underflow
    return V, q, m


def pack_matrices(V: np.ndarray, Q: np.ndarray, M: np.ndarray) -> np.ndarray:
    """The unknowns of K x K order parameters: Cholesky factors of V and Q (lower triangles,
    logarithmic diagonals), then M row by row."""
    return np.concatenate([_chol_pack(V), _chol_pack(Q), M.ravel()])


def unpack_matrices(x, K: int, columns: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V, Q, M)`` from the unknowns of :func:`pack_matrices` (M of shape K x ``columns``,
    default K)."""
    n = K * (K + 1) // 2
    return (_chol_unpack(x[:n], K), _chol_unpack(x[n:2 * n], K),
            np.asarray(x[2 * n:]).reshape(K, K if columns is None else columns))


def _chol_pack(A: np.ndarray) -> np.ndarray:
    L = np.linalg.cholesky((A + A.T) / 2)
    idx = np.tril_indices(A.shape[0])
    out = L[idx].copy()
    diag = idx[0] == idx[1]
    out[diag] = np.log(out[diag])
    return out


def _chol_unpack(x, K: int) -> np.ndarray:
    idx = np.tril_indices(K)
    L = np.zeros((K, K))
    vals = np.array(x, dtype=float)
    diag = idx[0] == idx[1]
    with np.errstate(over="ignore"):  # inf: outside the domain, for the caller to refuse
        vals[diag] = np.exp(vals[diag])
    L[idx] = vals
    return L @ L.T
