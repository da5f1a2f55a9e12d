"""One-pass SGD on a two-cluster Gaussian mixture: the mixture's side of the dynamics
(docs/dynamics.md, section "Discrete data").

The data are ``y = +-1`` with probabilities ``pi_+-`` and ``x = y mu + S^{1/2} g`` (the mixture of
an Ising site, :mod:`..solvers.mixture_engine`); the student's field on class ``y`` is
``z ~ N(y m, Q)`` with ``m = w . mu`` and ``Q = w^T S w``. Gaussian regression within each class
gives the mean gradient ``E[loss'(y, z) x] = a mu + b S w`` with

    a = sum_y pi_y y E[loss' | y],      b = sum_y pi_y E[loss' (z - y m) | y] / Q,

so that, per eigenmode of S (eigenvalue ``s_k``, ``mu_k = u_k . mu``, bulk weight ``1/p``), the
mean ``E w_k = mu_k r_k`` and the fluctuation ``N_k / p`` follow, as p -> infinity at ``c = lr / B``,

    dr_k / d alpha = -c ((b s_k + lam) r_k + a),
    dN_k / d alpha = -2 c (b s_k + lam) N_k + c^2 s_k E[loss'^2],
    m = sum_k mu_k^2 r_k,     Q = sum_k s_k mu_k^2 r_k^2 + (1/p) sum_k s_k N_k,

and the error is ``Phi(-m / sqrt Q)`` for either class. The class expectations are Gauss-Hermite
sums (no derivative of the loss, so a kink is allowed).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from replica_mlm._base import checks as _checks
from replica_mlm.theory.sides.channels import hermite
from replica_mlm.theory.sides.mixture_side import LABELS
from replica_mlm.theory.sides.sgd_fields import Q_FLOOR, OnlineMoments, march, steps_per_alpha, total_steps

#: Gauss-Hermite nodes of the class expectations
NODES = 96


def class_sums(loss, weights, *, m: float, Q: float) -> tuple[float, float, float, float]:
    """``a``, ``b``, ``E[loss'^2]`` and ``E[loss]`` at (m, Q), summed over the two classes."""
    x, w = hermite(NODES)
    sd = np.sqrt(max(Q, Q_FLOOR))
    a = b = g2 = val = 0.0
    for pi, y in zip(weights, LABELS, strict=True):
        z = y * m + sd * x
        yv = np.full(z.shape, y)
        d1 = loss.d1(yv, z)
        a += pi * y * float(np.dot(w, d1))
        b += pi * float(np.dot(w, d1 * (z - y * m))) / sd**2
        g2 += pi * float(np.dot(w, d1 * d1))
        val += pi * float(np.dot(w, loss.value(yv, z)))
    return a, b, g2, val


def online_moments(theory, loss, *, lr: float, lam: float, batch: int, alpha: np.ndarray) -> OnlineMoments:
    """The p -> infinity order parameters at each ``alpha`` (sorted, >= 0) on a
    :class:`..solvers.mixture_engine.MixtureTheory` (modes ``omega``, ``mu_modes``,
    ``target_modes``, ``p``, ``weights``), by classical RK4."""
    s, mu2, c = theory.omega, theory.mu_modes**2, lr / batch
    p = theory.p

    def overlaps(state):
        r, n = state
        return float(np.dot(mu2, r)), float(np.dot(s * mu2, r * r) + np.dot(s, n) / p)

    def rhs(state):
        m, Q = overlaps(state)
        a, b, g2, _ = class_sums(loss, theory.weights, m=m, Q=Q)
        rate = b * s + lam
        return -c * (rate * state[0] + a), -2 * c * rate * state[1] + c * c * s * g2

    b0 = abs(class_sums(loss, theory.weights, m=0.0, Q=0.0)[1])
    per_alpha = steps_per_alpha(c=c, rate=b0, omega_max=float(np.max(s)), lam=lam)
    total = total_steps(alpha, per_alpha)
    _checks.work(4 * total * (8 * NODES + 4 * s.size), f"online_sgd (mixture) to alpha = "
                 f"{float(alpha[-1]):g} with lr={lr:g}, batch={batch}", steps=4 * total)
    out = np.empty((5, alpha.size))
    for j, state in march(rhs, (np.zeros(s.size), np.zeros(s.size)), alpha, per_alpha):
        m, Q = overlaps(state)
        eg = 0.5 if Q <= Q_FLOOR else float(ndtr(-m / np.sqrt(Q)))
        est = float(np.sum((theory.mu_modes * state[0] - theory.target_modes) ** 2) + np.sum(state[1]) / p)
        out[:, j] = eg, class_sums(loss, theory.weights, m=m, Q=Q)[3], m, Q, est
    return OnlineMoments(*out)
