"""Penalised (multinomial) logistic regression, the one fitter of the learners.

For inputs ``x`` (n, d), class indices ``y`` and a class basis ``P`` (classes x K), :func:`fit`
minimises

    sum_mu CE(y_mu, P W^T x_mu) + (reg / 2) |W|_F^2,        W of shape (d, K),

(CE the softmax cross-entropy of the logits ``P W^T x``, no bias) by Newton's method with
backtracking and returns it with its Karush-Kuhn-Tucker residual
``max |grad| / (1 + reg max |W|)``. Binary logistic regression with labels y = +-1,
``sum_mu log(1 + exp(-y_mu w . x_mu)) + (reg / 2)|w|^2``, is the case K = 1 with the basis
``P = [[1/2], [-1/2]]`` (logits ``(z/2, -z/2)``, class 0 = +1): :func:`fit_binary`. Users:
:func:`replica_mlm.learners.erm.fit` (logistic loss), :func:`replica_mlm.learners.pseudo_likelihood.fit_site`
(Ising sites) and :func:`replica_mlm.learners.multinomial_pl.fit` (Potts sites, the reduced
simplex basis).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

#: the binary basis: logits (z / 2, -z / 2) for the classes (+1, -1)
BINARY_BASIS = np.array([[0.5], [-0.5]])


def fit(x: np.ndarray, y: np.ndarray, P: np.ndarray, reg: float, *,
        warm_start: np.ndarray | None = None, max_iter: int = 200) -> tuple[np.ndarray, float]:
    """``W`` (d, K) of the penalised multinomial fit and its KKT residual.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    y : ndarray of int, shape (n,)
        Class indices (rows of ``P``).
    P : ndarray, shape (classes, K)
        The class basis: logits ``P W^T x``.
    reg : float
        Penalty ``(reg / 2) |W|_F^2`` (``lam p`` in the package's convention), > 0.
    warm_start : ndarray, shape (d, K), optional
        Start of Newton's method (default 0).
    max_iter : int
        Most Newton steps.

    Returns
    -------
    W : ndarray, shape (d, K)
    kkt : float
        ``max |grad| / (1 + reg max |W|)`` at ``W``.
    """
    n, d = x.shape
    K = P.shape[1]
    W = np.zeros((d, K)) if warm_start is None else np.array(warm_start, dtype=float).reshape(d, K)
    Y = P[y]  # (n, K): P^T e_y

    def objective(Wt):
        z = x @ Wt @ P.T
        return float(-log_softmax(z, axis=1)[np.arange(n), y].sum() + reg / 2 * np.sum(Wt * Wt))

    def gradient(Wt):
        s = softmax(x @ Wt @ P.T, axis=1)
        return x.T @ (s @ P - Y) + reg * Wt, s

    f0 = objective(W)
    for _ in range(max_iter):
        g, s = gradient(W)
        sp = s @ P  # (n, K)
        # Hessian of the data term: sum_mu (P^T (diag s - s s^T) P) kron x x^T
        A = np.einsum("nc,ca,cb->nab", s, P, P) - sp[:, :, None] * sp[:, None, :]
        if K == 1:  # one BLAS product
            H = (x.T * A[:, 0, 0]) @ x + reg * np.eye(d)
        else:
            H = np.einsum("nab,ni,nj->iajb", A, x, x).reshape(d * K, d * K) + reg * np.eye(d * K)
        step = np.linalg.solve(H, g.ravel()).reshape(d, K)
        t = 1.0
        while True:
            trial = W - t * step
            f1 = objective(trial)
            if f1 <= f0 + 1e-13 * abs(f0) or t < 1e-10:
                break
            t /= 2
        W, f0 = trial, f1
        if np.max(np.abs(t * step)) <= 1e-14 * (1.0 + np.max(np.abs(W))):
            break
    g, _ = gradient(W)
    return W, float(np.max(np.abs(g)) / (1.0 + reg * np.max(np.abs(W))))


def fit_binary(x: np.ndarray, y: np.ndarray, reg: float, *, warm_start: np.ndarray | None = None
               ) -> tuple[np.ndarray, float]:
    """``w`` (d,) minimising ``sum_mu log(1 + exp(-y_mu w . x_mu)) + (reg / 2)|w|^2`` (labels +-1)
    and its KKT residual: :func:`fit` with :data:`BINARY_BASIS`."""
    classes = np.where(np.asarray(y) > 0, 0, 1)
    start = None if warm_start is None else np.asarray(warm_start, dtype=float)[:, None]
    W, kkt = fit(x, classes, BINARY_BASIS, reg, warm_start=start)
    return W[:, 0].copy(), kkt
