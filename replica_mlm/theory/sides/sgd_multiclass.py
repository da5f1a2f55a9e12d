"""The channel side of one-pass SGD on a q-colour site: the softmax cross-entropy in K = q - 1
logit directions (docs/dynamics.md, section "A q-colour site").

The weights ``W`` (d x K) move by ``W <- W - (lr / p) ((1/B) sum_b x_b g_b^T + lam W)`` with
``g = P^T (softmax(P W^T x) - e_y)`` the gradient of the cross-entropy in the student's field
``h = W^T x`` (``P`` the q x K basis of :func:`~replica_mlm.tasks.potts_site.simplex_basis`).
For Gaussian inputs ``x ~ N(0, Sigma)`` the fields ``h`` and ``nu = W*^T x + b*`` are jointly
Gaussian with covariance ``C = [[Q, M], [M^T, rho]]`` (``Q = W^T Sigma W``, ``M = W^T Sigma W*``),
and Gaussian regression (Stein's lemma) gives the mean gradient

    E[x g^T] = Sigma (W A + W* B),   [A; B] = C^-1 [E[h g^T]; E[(nu - b*) g^T]]      (K x K each).

The expectations are taken on the nodes of the multi-class channel side
(:mod:`.multiclass_channel`: ``h = L xi``, ``nu = M^T L^-T xi + b* + S eta``), the label
averaged exactly, ``E_y g = P^T (softmax(P h) - softmax(P nu))``. In the eigenbasis of Sigma
(eigenvalue ``s_k``, teacher row ``theta_k``), with the mean row ``E w_k = m_k`` and the
fluctuation ``Cov(w_k) = N_k / p``, as p -> infinity at ``c = lr / B``:

    dm_k / d alpha = -c (s_k (m_k A + theta_k B) + lam m_k)
    dN_k / d alpha = -c (F_k^T N_k + N_k F_k) + c^2 s_k E[g g^T],     F_k = s_k A + lam I,
    M = sum_k s_k m_k^T theta_k,     Q = sum_k s_k m_k^T m_k + (1/p) sum_k s_k N_k.

At K = 1 these are the equations of :mod:`.sgd_fields` (a check: a two-colour site with inputs
``s / sqrt 2`` is the Ising site learnt by the logistic loss, with the same weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.sides.sgd_fields import march, steps_per_alpha, total_steps

#: the smallest eigenvalue of Q used in the fields' law, relative to max(tr rho / K, 1): below it
#: the student is (almost) w = 0 and only ``W A`` (negligible) depends on the clipped directions
Q_FLOOR = 1e-14
#: the drive's rule: Gauss-Hermite nodes per dimension by K, else a fixed Sobol' rule of 2^m points
HERMITE_ORDER = {1: 64, 2: 20}
SOBOL_M = 14
#: eg (an indicator, argmax): for K >= 2 the multi-class side's scrambled Sobol' rules
#: (:func:`.multiclass_channel.error_rates`); for K = 1 Gauss-Legendre panels split at h = 0
EG_PANELS, EG_NODES, EG_RANGE = 8, 24, 12.0


def drive_rule(K: int) -> mc.Rule:
    """The rule of the drift's expectations: tensor Gauss-Hermite for K <= 2, else Sobol' (seed 0)."""
    if K in HERMITE_ORDER:
        return mc.hermite_rule(K, HERMITE_ORDER[K])
    return mc.sobol_rule(K, SOBOL_M, 0)


@dataclass(frozen=True)
class Drive:
    """The drift's coefficients at one ``(Q, M)``: ``A``, ``B`` and ``G = E[g g^T]`` (K x K)."""

    A: np.ndarray
    B: np.ndarray
    G: np.ndarray


def floor_overlap(Q: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """``Q`` with its eigenvalues raised to at least :data:`Q_FLOOR` ``max(tr rho / K, 1)``, so that
    the fields' law has a Cholesky factor at W = 0."""
    vals, vecs = np.linalg.eigh((Q + Q.T) / 2)
    low = Q_FLOOR * max(float(np.trace(rho)) / rho.shape[0], 1.0)
    return (vecs * np.maximum(vals, low)) @ vecs.T


def _softmax_first(a: np.ndarray) -> np.ndarray:
    """The softmax over the first axis (the classes)."""
    e = np.exp(a - a.max(axis=0))
    return e / e.sum(axis=0)


def drive(rule: mc.Rule, *, Q, M, rho, bias, P) -> Drive:
    """``A``, ``B`` and ``E[g g^T]`` at the overlaps ``(Q, M)`` (see the module's docstring)."""
    K = rho.shape[0]
    Qf = floor_overlap(Q, rho)
    h, mean, S = mc.fields(rule, Qf, M, rho, bias)
    sh = mc._softmax(h @ P.T)  # (N, q)
    nu = mean[:, None, :] + rule.eta @ S.T  # (N, R, K)
    snu = _softmax_first(np.tensordot(P, nu, axes=([1], [2])))  # (q, N, R): classes first, for speed
    Z = np.tensordot(snu, rule.w_eta, axes=([2], [0])).T  # P(y | h), (N, q)
    w = rule.w_xi
    shP, ZP = sh @ P, Z @ P
    e_h = (w[:, None] * h).T @ (shP - ZP)  # E[h E[g | h]^T]
    # E[(nu - b) g^T] = E_h E_{nu|h} (nu - b) (softmax(P h) - softmax(P nu))^T P
    centred = nu - bias
    wc = centred * (w[:, None, None] * rule.w_eta[None, :, None])
    e_nu = wc.sum(axis=1).T @ shP - wc.reshape(-1, K).T @ np.tensordot(snu, P, axes=([0], [0])).reshape(-1, K)
    # E[g g^T] = E_h P^T (s s^T - s Z^T - Z s^T + diag Z) P, s = softmax(P h)
    wsh = w[:, None] * shP
    G = wsh.T @ shP - wsh.T @ ZP - ZP.T @ wsh + P.T @ ((w @ Z)[:, None] * P)
    C = np.block([[Qf, M], [M.T, rho]])
    rhs = np.vstack([e_h, e_nu])
    if np.linalg.cond(C) < 1e12:
        coef = np.linalg.solve(C, rhs)
    else:  # the fields are (nearly) collinear: only their span's regression is defined
        coef = np.linalg.lstsq(C, rhs, rcond=1e-12)[0]
    return Drive(A=coef[:K], B=coef[K:], G=(G + G.T) / 2)


def rates(d: Drive, m: np.ndarray, n: np.ndarray, *, omega: np.ndarray, theta: np.ndarray, c: float,
          lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``dm_k / d alpha`` (k, K) and ``dN_k / d alpha`` (k, K, K) of every mode at the drive ``d``
    (the module's equations; ``c = lr / B``)."""
    F = omega[:, None, None] * d.A[None] + lam * np.eye(d.A.shape[0])[None]
    dm = -c * (omega[:, None] * (m @ d.A + theta @ d.B) + lam * m)
    dn = -c * (np.swapaxes(F, 1, 2) @ n + n @ F) + (c * c) * omega[:, None, None] * d.G[None]
    return dm, dn


def eg_rule_1d() -> mc.Rule:
    """K = 1: Gauss-Legendre panels on each side of h = 0 (the argmax's jump), Hermite inside."""
    x, w = np.polynomial.legendre.leggauss(EG_NODES)
    edges = np.linspace(-EG_RANGE, EG_RANGE, 2 * EG_PANELS + 1)
    lo, hi = edges[:-1], edges[1:]
    xi = ((hi - lo)[:, None] * (x + 1) / 2 + lo[:, None]).ravel()
    wx = ((hi - lo)[:, None] / 2 * w).ravel() * np.exp(-xi * xi / 2) / math.sqrt(2 * math.pi)
    inner = mc.hermite_rule(1, HERMITE_ORDER[1])
    return mc.Rule(xi=xi[:, None], eta=inner.eta, w_xi=wx / wx.sum(), w_eta=inner.w_eta,
                   name="legendre panels at h = 0")


def measures(*, Q, M, rho, bias, P, rule: mc.Rule) -> tuple[float, float]:
    """``eg`` (classification error, argmax) and the test cross-entropy at ``(Q, M)``."""
    K = rho.shape[0]
    Qf = floor_overlap(Q, rho)
    tl = mc.test_measures(rule, Q=Qf, M=M, rho=rho, bias=bias, P=P)["test_loss"]
    if K == 1:
        eg = mc.test_measures(eg_rule_1d(), Q=Qf, M=M, rho=rho, bias=bias, P=P)["eg"]
    else:
        eg = float(np.mean(mc.error_rates(Q=Qf, M=M, rho=rho, bias=bias, P=P)))
    return eg, tl


@dataclass(frozen=True)
class MulticlassMoments:
    """The order parameters along the curve: scalars of shape (k,), matrices (k, K, K)."""

    eg: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    Q: np.ndarray
    M: np.ndarray


def online_moments(task, *, lr: float, lam: float, batch: int, alpha: np.ndarray,
                   rule: mc.Rule | None = None) -> MulticlassMoments:
    """The p -> infinity order parameters at each ``alpha`` (sorted, >= 0) of one-pass SGD with
    the softmax cross-entropy on a :class:`~replica_mlm.tasks.potts_site.PottsSite`, by RK4."""
    omega, theta = task.modes
    rho, bias, P, p, K = task.rho, task.bias, task.basis, task.p, task.K
    rule = drive_rule(K) if rule is None else rule
    c = lr / batch

    def overlaps(m, n):
        Q = np.einsum("k,ka,kb->ab", omega, m, m) + np.einsum("k,kab->ab", omega, n) / p
        return (Q + Q.T) / 2, np.einsum("k,ka,kb->ab", omega, m, theta)

    def rhs(state):
        m, n = state
        Q, M = overlaps(m, n)
        return rates(drive(rule, Q=Q, M=M, rho=rho, bias=bias, P=P), m, n, omega=omega, theta=theta,
                     c=c, lam=lam)

    a0 = float(np.linalg.norm(drive(rule, Q=0 * rho, M=0 * rho, rho=rho, bias=bias, P=P).A, 2))
    per_alpha = steps_per_alpha(c=c, rate=a0, omega_max=float(np.max(omega)), lam=lam)
    total = total_steps(alpha, per_alpha)
    nodes = rule.xi.shape[0] * rule.eta.shape[1]
    _checks.work(4 * total * (nodes * 40 * K * K + 20 * omega.size * K * K),
                 f"online_sgd to alpha = {float(alpha[-1]):g} with lr={lr:g}, batch={batch} on a "
                 f"{K + 1}-colour site", steps=4 * total)
    out = {k: np.empty(alpha.size) for k in ("eg", "test_loss", "estimation_error")}
    mats = {k: np.empty((alpha.size, K, K)) for k in ("Q", "M")}
    start = (np.zeros((omega.size, K)), np.zeros((omega.size, K, K)))
    for j, (m, n) in march(rhs, start, alpha, per_alpha):
        Q, M = overlaps(m, n)
        out["eg"][j], out["test_loss"][j] = measures(Q=Q, M=M, rho=rho, bias=bias, P=P, rule=rule)
        out["estimation_error"][j] = float(np.sum((m - theta) ** 2) + np.trace(n.sum(axis=0)) / p)
        mats["Q"][j], mats["M"][j] = Q, M
    return MulticlassMoments(**out, **mats)
