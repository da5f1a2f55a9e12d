"""The channel side of one-pass SGD for any convex loss and label channel: the Gaussian
expectations that drive the order parameters per eigenmode (docs/dynamics.md, section
"Any convex loss").

Given the student's overlaps ``Q = w^T Sigma w`` and ``R = w*^T Sigma w``, the fields
``(lambda, nu) = (w . x, w* . x)`` are jointly Gaussian (covariance ``C = [[Q, R], [R, rho]]``)
and Gaussian regression gives the mean gradient

    E[loss'(y, lambda) x] = Sigma (A w + B w*),   (A, B) = C^-1 (E[loss' lambda], E[loss' nu]),

with the expectations on the nodes of the general engine's channel side
(:func:`.energetic.nodes`: lambda on panels, nu integrated through the channel's partition
function, ``E[nu | lambda, y] = mu + v d log Z / d mu``). Per mode (eigenvalue ``s_k``, teacher
weight ``t_k``, bulk weight ``b_k``), with the mean ``E w_k = v_k r_k`` and the fluctuation
``N_k / p``, as p -> infinity at ``c = lr / B``:

    dr_k / d alpha = -c ((A s_k + lam) r_k + B s_k)
    dN_k / d alpha = -2 c (A s_k + lam) N_k + c^2 s_k E[loss'^2]
    R = sum_k t_k s_k r_k,     Q = sum_k t_k s_k r_k^2 + sum_k b_k s_k N_k.

For the square loss with the gaussian channel ``A = 1``, ``B = -1`` and ``E[loss'^2] = eg``:
the limit of :mod:`.sgd_modes` (a check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.theory.sides import energetic

#: Runge-Kutta steps per unit alpha (at least), and per unit of the fastest rate c (A s + lam)
STEPS_PER_ALPHA = 40
STEPS_PER_RATE = 8.0
#: the overlap Q below which the student is taken as w = 0 (its field lambda = 0 surely)
Q_FLOOR = 1e-14


def steps_per_alpha(*, c: float, rate: float, omega_max: float, lam: float) -> float:
    """Runge-Kutta steps per unit alpha of the one-pass SGD ODEs (this side's, the mixture's and the
    q-colour site's): :data:`STEPS_PER_ALPHA`, more where the fastest rate ``c (rate s + lam)`` is
    fast (``rate`` the drift's coefficient at w = 0, at least 1)."""
    return max(STEPS_PER_ALPHA, STEPS_PER_RATE * c * (max(rate, 1.0) * omega_max + lam))


def total_steps(alpha: np.ndarray, per_alpha: float) -> int:
    """The Runge-Kutta steps from 0 to the last (largest) ``alpha``: what the work check counts."""
    return int(np.ceil(float(alpha[-1]) * per_alpha)) if alpha.size else 0


def march(rhs, state: tuple, alpha: np.ndarray, per_alpha: float):
    """Classical RK4 from ``alpha = 0`` through each ``alpha`` (sorted, >= 0), at least
    ``per_alpha`` equal steps per unit between consecutive times: yields ``(j, state)`` at each
    ``alpha[j]``. ``state`` is a tuple of arrays and ``rhs(state)`` returns their derivatives."""
    now = 0.0
    for j, target in enumerate(alpha):
        k = int(np.ceil((target - now) * per_alpha))
        h = (target - now) / k if k else 0.0
        for _ in range(k):
            k1 = rhs(state)
            k2 = rhs(tuple(x + 0.5 * h * d for x, d in zip(state, k1, strict=True)))
            k3 = rhs(tuple(x + 0.5 * h * d for x, d in zip(state, k2, strict=True)))
            k4 = rhs(tuple(x + h * d for x, d in zip(state, k3, strict=True)))
            state = tuple(x + (h / 6.0) * (d1 + 2 * d2 + 2 * d3 + d4)
                          for x, d1, d2, d3, d4 in zip(state, k1, k2, k3, k4, strict=True))
        now = float(target)
        yield j, state


@dataclass(frozen=True)
class Drive:
    """The drift's coefficients at one (Q, R): ``A``, ``B`` and ``E[loss'^2]``."""

    A: float
    B: float
    grad2: float


def drive(loss, channel, *, Q: float, R: float, rho: float, noise: float) -> Drive:
    """``A``, ``B`` and ``E[loss'(y, lambda)^2]`` at overlaps (Q, R) (see the module's docstring)."""
    q = max(Q, Q_FLOOR * max(rho, 1.0))
    nd = energetic.nodes(loss, channel, V=1.0, q=q, m=R, rho=rho, noise=noise, at="loss")
    d1 = loss.d1(nd.y, nd.w)
    v = max(rho - R * R / q, 0.0)
    e_lam = float(np.dot(nd.cz, d1 * nd.w))
    e_nu = float(np.dot(nd.cz, d1 * (R / q) * nd.w)) + v * float(np.dot(nd.cdz, d1))
    grad2 = float(np.dot(nd.cz, d1 * d1))
    det = q * rho - R * R
    if det <= 1e-14 * q * rho:  # the fields are proportional: only their combination is defined
        return Drive(A=e_lam / q, B=0.0, grad2=grad2)
    return Drive(A=(rho * e_lam - R * e_nu) / det, B=(q * e_nu - R * e_lam) / det, grad2=grad2)


@dataclass(frozen=True)
class OnlineMoments:
    """Order parameters along the curve, each of shape (k,)."""

    eg: np.ndarray
    test_loss: np.ndarray
    m: np.ndarray
    q: np.ndarray
    estimation_error: np.ndarray


def online_moments(spec, loss, channel, *, lr: float, lam: float, batch: int,
                   alpha: np.ndarray) -> OnlineMoments:
    """The p -> infinity order parameters at each ``alpha`` (sorted, >= 0), by classical RK4."""
    omega, bulk, teacher = spec.omega, spec.bulk, spec.teacher
    rho, noise, c = spec.rho, spec.noise, lr / batch
    ts, bs = teacher * omega, bulk * omega

    def overlaps(state):
        r, n = state
        return float(np.dot(ts, r * r) + np.dot(bs, n)), float(np.dot(ts, r))

    def rhs(state):
        r, n = state
        Q, R = overlaps(state)
        d = drive(loss, channel, Q=Q, R=R, rho=rho, noise=noise)
        rate = d.A * omega + lam
        return -c * (rate * r + d.B * omega), -2 * c * rate * n + c * c * omega * d.grad2

    a0 = abs(drive(loss, channel, Q=0.0, R=0.0, rho=rho, noise=noise).A)
    per_alpha = steps_per_alpha(c=c, rate=a0, omega_max=float(np.max(omega)), lam=lam)
    total = total_steps(alpha, per_alpha)
    _checks.work(4 * total * 4000 * omega.size, f"online_sgd to alpha = {float(alpha[-1]):g} with lr={lr:g}, "
                 f"batch={batch}", steps=4 * total)
    out = np.empty((5, alpha.size))
    for j, state in march(rhs, (np.zeros(omega.size), np.zeros(omega.size)), alpha, per_alpha):
        Q, R = overlaps(state)
        if Q <= Q_FLOOR * max(rho, 1.0):
            eg = rho + noise if channel.labels == "real" else 0.5
        else:
            eg = energetic.error(channel, q=Q, m=R, rho=rho, noise=noise)
        tl = energetic.test_loss(loss, channel, q=Q, m=R, rho=rho, noise=noise)
        est = float(np.dot(teacher, (state[0] - 1.0) ** 2) + np.dot(bulk, state[1]))
        out[:, j] = eg, tl, R, Q, est
    return OnlineMoments(*out)
