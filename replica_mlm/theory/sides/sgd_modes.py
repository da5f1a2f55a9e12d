"""The modes' side of one-pass SGD with the square loss: the second moments of ``w - w*`` per
eigenmode of the covariance (docs/dynamics.md, sections "The exact recursion" and "The limit").

One step of one-pass SGD draws B fresh Gaussian samples and moves
``w <- w - (lr / p) ((1/B) sum_b (w . x_b - y_b) x_b + lam w)``. In the eigenbasis of Sigma
(eigenvalues ``s_k``, teacher ``v_k``), the mean ``mu_k = E (w - w*)_k = v_k r_k`` and the
diagonal second moments ``D_k = E (w - w*)_k^2`` close exactly at finite p (the fourth moments of
Gaussian inputs); with ``g = lr / p`` and ``a = 1 - g lam``

    r_k'  = (a - g s_k) r_k - g lam
    D_k'  = ((a - g s_k)^2 + (g^2 / B) s_k^2) D_k + (g^2 / B) s_k (sum_j s_j D_j + sigma^2)
            - 2 g lam t_k (a - g s_k) r_k + (g lam)^2 t_k,

from ``r = -1`` and ``D = t`` (``t_k = v_k^2``, the spectrum's teacher weights), one O(p) step
each. As p -> infinity at a fixed spectral measure, ``D_k = t_k r_k^2 + N_k / p`` with
``r_k(alpha)`` in closed form and the noise part the Volterra equation

    dN_k / d alpha = c^2 s_k eg(alpha) - 2 c (s_k + lam) N_k,      c = lr / B,
    eg(alpha) = sigma^2 + sum_k t_k s_k r_k^2 + sum_k b_k s_k N_k,

integrated exactly on each step for eg linear in alpha (an exponential integrator, second order,
stable at every step size): O(K) per step for K modes of any spectral measure (bulk weights
``b_k``), with no p x p matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: internal steps of the limit's integrator per unit of c alpha (the rate scale)
STEPS_PER_RATE = 200
#: at least this many internal steps per unit alpha
MIN_STEPS_PER_ALPHA = 40


@dataclass(frozen=True)
class Moments:
    """Order parameters along a curve, each of shape (k,) (the expectations over SGD's samples)."""

    eg: np.ndarray
    m: np.ndarray
    q: np.ndarray
    estimation_error: np.ndarray


def _observe(s, t, noise, r, dsum_s, dsum) -> tuple[float, float, float, float]:
    """eg, m, q, |w - w*|^2 from the mean ratio r and the (already summed) second moments."""
    eg = noise + dsum_s
    m = float(np.dot(s * t, r + 1.0))
    q = dsum_s + 2.0 * float(np.dot(s * t, r)) + float(np.dot(s, t))
    return eg, m, q, dsum


def exact_stable(s: np.ndarray, lr: float, lam: float, batch: int) -> bool:
    """Whether the exact recursion's linear map on D has spectral radius < 1 (p = s.size).

    The map is ``diag(d_k) + (g^2 / B) s s^T`` with ``d_k = (a - g s_k)^2 + (g^2 / B) s_k^2``: a
    positive rank-one change of a non-negative diagonal, so its radius is < 1 exactly when every
    ``d_k < 1`` and ``(g^2 / B) sum_k s_k^2 / (1 - d_k) < 1``.
    """
    g = lr / s.size
    a = 1.0 - g * lam
    d = (a - g * s) ** 2 + (g * g / batch) * s * s
    if np.any(d >= 1.0):
        return False
    return float((g * g / batch) * np.sum(s * s / (1.0 - d))) < 1.0


def exact_lr_max(s: np.ndarray, lam: float, batch: int) -> float:
    """The largest stable lr of the exact recursion: the edge of :func:`exact_stable`, by
    bisection to 1e-12 relative (the stable set is an interval (0, lr_max))."""
    hi = 2.0 * batch / float(np.mean(s * s / (s + lam)))
    lo = 0.0
    while exact_stable(s, hi, lam, batch):
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if exact_stable(s, mid, lam, batch):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


def limit_lr_max(omega: np.ndarray, bulk: np.ndarray, lam: float, batch: int) -> float:
    """The largest stable lr as p -> infinity: the Volterra kernel's mass
    ``(c / 2) sum_k b_k s_k^2 / (s_k + lam)`` below one, ``c = lr / B``."""
    return 2.0 * batch / float(np.dot(bulk, omega * omega / (omega + lam)))


def exact_moments(s: np.ndarray, t: np.ndarray, noise: float, *, lr: float, lam: float, batch: int,
                  steps: np.ndarray) -> Moments:
    """The exact expected order parameters after each of ``steps`` (sorted ints >= 0) SGD steps,
    for p = s.size Gaussian inputs with eigenvalues ``s`` and teacher weights ``t``."""
    p = s.size
    g = lr / p
    a = 1.0 - g * lam
    f = a - g * s  # the mean's factor per mode
    diag = f * f + (g * g / batch) * s * s
    noise_gain = (g * g / batch) * s
    r = -np.ones(p)
    dmom = np.array(t, dtype=float)
    out = np.empty((4, steps.size))
    done = 0
    for j, target in enumerate(steps):
        while done < target:
            eg = float(np.dot(s, dmom)) + noise
            dmom = diag * dmom + noise_gain * eg + (g * lam) * t * (g * lam - 2.0 * f * r)
            r = f * r - g * lam
            done += 1
        out[:, j] = _observe(s, t, noise, r, float(np.dot(s, dmom)), float(np.sum(dmom)))
    return Moments(*out)


def _ratio(omega: np.ndarray, lam: float, c: float, alpha: np.ndarray) -> np.ndarray:
    """The mean ratio r_k(alpha) of the limit in closed form, shape (alpha.size, K)."""
    rate = omega + lam
    decay = np.exp(-c * np.outer(alpha, rate))
    return -(lam + omega * decay) / rate


def internal_steps(omega: np.ndarray, *, lr: float, lam: float, batch: int, last: float,
                   steps_per_rate: int = STEPS_PER_RATE) -> int:
    """Steps of the limit's integrator up to alpha = ``last`` (a Python int, for the work check)."""
    c = lr / batch
    per_alpha = max(MIN_STEPS_PER_ALPHA, steps_per_rate * c * float(np.max(omega + lam)) / 10.0,
                    steps_per_rate * c)
    return max(1, int(np.ceil(last * per_alpha)))


def limit_moments(omega: np.ndarray, bulk: np.ndarray, teacher: np.ndarray, noise: float, *,
                  lr: float, lam: float, batch: int, alpha: np.ndarray,
                  steps_per_rate: int = STEPS_PER_RATE) -> Moments:
    """The p -> infinity order parameters at each ``alpha`` (sorted, >= 0) for a spectral measure."""
    c = lr / batch
    rate = 2.0 * c * (omega + lam)
    a_end = float(alpha[-1]) if alpha.size else 0.0
    n_int = internal_steps(omega, lr=lr, lam=lam, batch=batch, last=a_end, steps_per_rate=steps_per_rate)
    grid = np.unique(np.concatenate([np.linspace(0.0, a_end, n_int + 1), alpha]))
    gain = c * c * omega
    ws = bulk * omega

    def signal(x):  # eg's deterministic part: the bias of the mean
        r = _ratio(omega, lam, c, np.atleast_1d(x))
        return noise + (r * r) @ (teacher * omega), r

    eg_grid = np.empty(grid.size)
    n_grid = np.zeros((grid.size, 2))  # sum b s N and sum b N
    big_n = np.zeros(omega.size)
    eg_grid[0] = signal(0.0)[0][0]
    for i in range(1, grid.size):
        h = grid[i] - grid[i - 1]
        x = rate * h
        e = np.exp(-x)
        em1 = -np.expm1(-x)
        with np.errstate(invalid="ignore", divide="ignore"):
            phi0 = np.where(x > 1e-8, (em1 - x * e) / (x * x) * h, h * (0.5 - x / 3))  # weight of eg0
            phi_1 = np.where(x > 1e-8, (x - em1) / (x * x) * h, h * (0.5 - x / 6))  # weight of eg1
        base = e * big_n + gain * phi0 * eg_grid[i - 1]
        sig = signal(grid[i])[0][0]
        slope = float(np.dot(ws, gain * phi_1))
        eg1 = (sig + float(np.dot(ws, base))) / (1.0 - slope)
        big_n = base + gain * phi_1 * eg1
        eg_grid[i] = eg1
        n_grid[i] = float(np.dot(ws, big_n)), float(np.dot(bulk, big_n))
    idx = np.searchsorted(grid, alpha)
    r = _ratio(omega, lam, c, alpha)
    eg = eg_grid[idx]
    bias_sum = (r * r) @ teacher
    m = (r + 1.0) @ (teacher * omega)
    q = ((r + 1.0) ** 2) @ (teacher * omega) + n_grid[idx, 0]
    est = bias_sum + n_grid[idx, 1]
    return Moments(eg=eg, m=m, q=q, estimation_error=est)
