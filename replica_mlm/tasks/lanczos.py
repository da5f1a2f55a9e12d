"""The teacher's spectral measure by Lanczos, without the eigenvectors of Sigma (docs/theory.md,
section "Large p: the spectrum without eigenvectors").

Every teacher-weighted spectral sum of the theory is ``sum_k c_k f(omega_k) = w*^T f(Sigma) w*``
with ``c_k = (u_k . w*)^2``. The Lanczos process on Sigma started from ``w* / |w*|`` builds a
tridiagonal ``T_r`` (r x r); its eigenvalues ``theta_j`` and the first components ``s_j`` of its
eigenvectors are the Gauss quadrature rule of that measure: ``w*^T f(Sigma) w* ~ |w*|^2 sum_j
s_j^2 f(theta_j)``, exact for polynomials of degree < 2r and converging geometrically for the
smooth functions of the theory (rate set by the condition number of Sigma). One matrix-vector
product per step; full reorthogonalisation (twice, classical Gram-Schmidt) keeps the basis
orthogonal to rounding, so the rule is that of exact arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: steps of the adaptive rule before giving up
MAX_STEPS = 2000
#: the adaptive rule stops when w*^T Sigma^-1 w* (the hardest sum: the pole nearest the
#: spectrum, kappa = 0) changes by at most this, relative, in two successive steps
TOL = 4 * np.finfo(float).eps


@dataclass(frozen=True)
class GaussRule:
    """Nodes and weights of the teacher's measure (``sum weights = |w*|^2``).

    Attributes
    ----------
    nodes, weights : ndarray
        Ritz values ``theta_j`` (in the spectrum's range) and ``|w*|^2 s_j^2``.
    steps : int
        Lanczos steps (matrix-vector products).
    exhausted : bool
        The Krylov space became invariant (``beta`` at rounding level): the rule is exact.
    change : float
        Relative change of the Gauss estimate of ``w*^T Sigma^-1 w*`` at the last step.
    """

    nodes: np.ndarray
    weights: np.ndarray
    steps: int
    exhausted: bool
    change: float


def gauss_rule(matrix: np.ndarray, start: np.ndarray, *, steps: int | None = None) -> GaussRule:
    """The Gauss rule of the measure of ``start`` under the symmetric positive-definite ``matrix``.

    ``steps`` fixes the number of Lanczos steps (at most ``p``); None runs until the estimate of
    ``start^T matrix^-1 start`` changes by at most :data:`TOL` (relative) in two successive
    steps, or the Krylov space is exhausted. Inputs are trusted (checked by the caller).
    """
    p = start.size
    limit = min(p, MAX_STEPS) if steps is None else min(steps, p)
    norm2 = float(start @ start)
    if norm2 == 0.0:
        return GaussRule(np.array([float(np.trace(matrix)) / p]), np.zeros(1), 0, True, 0.0)
    basis = np.empty((min(limit, 64), p))  # grown in blocks: memory O(steps p), not O(limit p)
    basis[0] = start / np.sqrt(norm2)
    diag, off = [], []
    scale = float(np.max(np.abs(np.diagonal(matrix))))
    prev, calm, exhausted, change = None, 0, False, np.inf
    for j in range(limit):
        w = matrix @ basis[j]
        diag.append(float(basis[j] @ w))
        for _ in range(2):  # full reorthogonalisation, twice
            w -= basis[:j + 1].T @ (basis[:j + 1] @ w)
        beta = float(np.linalg.norm(w))
        # the Gauss estimate of start^T matrix^-1 start: (T^-1)_00 |start|^2
        t = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
        e1 = np.zeros(j + 1)
        e1[0] = 1.0
        inv = float(np.linalg.solve(t, e1)[0]) * norm2
        if prev is not None:
            change = abs(inv - prev) / abs(inv)
            calm = calm + 1 if change <= TOL else 0
        prev = inv
        if beta <= 64 * np.finfo(float).eps * scale * np.sqrt(p):
            exhausted = True
            break
        if (steps is None and calm >= 2) or j + 1 == limit:
            break
        off.append(beta)
        if j + 1 == basis.shape[0]:
            basis = np.concatenate([basis, np.empty((min(basis.shape[0], limit - j - 1), p))])
        basis[j + 1] = w / beta
    n = len(diag)
    t = np.diag(diag) + np.diag(off[:n - 1], 1) + np.diag(off[:n - 1], -1)
    theta, vectors = np.linalg.eigh(t)
    return GaussRule(nodes=theta, weights=norm2 * vectors[0] ** 2, steps=n, exhausted=exhausted,
                     change=float(change))


def modes(omega: np.ndarray, rule: GaussRule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(omega, bulk, teacher)`` of a :class:`~replica_mlm.tasks.spectrum.Spectrum`: the p
    eigenvalues with bulk weights 1/p and teacher weight 0, then the rule's nodes with bulk weight
    0 and its weights as teacher weights."""
    p, r = omega.size, rule.nodes.size
    return (np.concatenate([omega, rule.nodes]), np.concatenate([np.full(p, 1.0 / p), np.zeros(r)]),
            np.concatenate([np.zeros(p), rule.weights]))
