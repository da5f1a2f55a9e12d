"""Autocorrelation estimators of the Potts samplers' pilot runs (:mod:`replica_mlm.potts.sampling`).

Sokal's automatic window, Geyer's initial monotone sequence, a blocking estimate, and the
normalised autocorrelation functions of recorded spins (one-hot) and energies, computed lag by
lag only as far as the window estimators read them (:func:`_windowed_taus`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["initial_monotone_tau", "integrated_autocorrelation_time"]

#: Sokal's window constant for the integrated autocorrelation time.
SOKAL_C = 5.0
#: number of blocks per chain in the blocking estimate of tau (tempering pilot runs).
BLOCKS = 10


def integrated_autocorrelation_time(rho: np.ndarray, *, c: float = SOKAL_C) -> tuple[float, int]:
    """Integrated autocorrelation time with Sokal's automatic window.

    ``tau_int(W) = 1/2 + sum_{t=1}^{W} rho(t)``, with ``W`` the smallest lag such that
    ``W >= c tau_int(W)``. ``rho[0]`` must be 1.

    Returns
    -------
    (tau_int, window) ; ``window = -1`` if no lag in ``rho`` satisfied the criterion (then ``tau``
    is a lower bound computed from all lags).
    """
    rho = np.asarray(rho, dtype=float)
    tau = 0.5
    for w in range(1, rho.size):
        tau += rho[w]
        if w >= c * tau:
            return max(tau, 0.5), w
    return max(tau, 0.5), -1


def initial_monotone_tau(rho: np.ndarray) -> tuple[float, bool]:
    """Integrated autocorrelation time by Geyer's initial monotone sequence estimator.

    With ``Gamma_k = rho(2k) + rho(2k + 1)``, ``tau_int = -1/2 + sum_{k <= m} Gamma_k`` summed
    while ``Gamma_k > 0``, each ``Gamma_k`` capped by the previous one (Geyer 1992). It keeps a
    small slowly decaying tail that Sokal's window cuts off. Returns ``(tau_int, terminated)``;
    ``terminated`` is False if ``Gamma_k`` stayed positive over all lags in ``rho`` (then
    ``tau_int`` is a lower bound).
    """
    rho = np.asarray(rho, dtype=float)
    m = rho.size // 2
    gam = rho[: 2 * m : 2] + rho[1 : 2 * m : 2]
    total, prev = 0.0, math.inf
    for g in gam:
        if g <= 0:
            return max(total - 0.5, 0.5), True
        prev = min(prev, g)
        total += prev
    return max(total - 0.5, 0.5), False


def _spin_autocorrelation(states: np.ndarray, q: int, max_lag: int,
                          first: int = 0) -> np.ndarray:
    """Normalised one-hot autocorrelation of recorded states (T, C, L), lags first..max_lag."""
    T, C, L = states.shape
    p = np.stack([np.bincount(states[:, :, i].ravel(), minlength=q) for i in range(L)]) / (T * C)
    base = float((p**2).sum(axis=1).mean())
    var = 1.0 - base
    if var <= 1e-12:
        return (np.arange(first, max_lag + 1) == 0).astype(float)
    rho = np.empty(max_lag + 1 - first)
    for t in range(first, max_lag + 1):
        same = np.mean(states[: T - t] == states[t:])
        rho[t - first] = (same - base) / var
    return rho


def _blocked_spin_tau(states: np.ndarray, q: int, n_blocks: int = BLOCKS) -> float:
    """Integrated autocorrelation time of the one-hot spins from the variance of block means.

    ``states`` (T, C, L) is cut into ``n_blocks`` blocks of ``B = T // n_blocks`` sweeps per chain;
    with ``f`` the colour frequencies of one block of one chain and ``p`` the overall frequencies,
    ``tau = (B / 2) sum_ia <(f_ia - p_ia)^2> / sum_ia p_ia (1 - p_ia)`` (1/2 for independent
    sweeps). Unlike a truncated sum of ``rho(t)`` it keeps a small, slowly decaying tail, as long
    as ``B`` is well above that tail's time scale.
    """
    T, C, L = states.shape
    B = T // n_blocks
    if B < 1:
        return 0.5
    X = states[: B * n_blocks].reshape(n_blocks, B, C, L)
    p = np.stack([np.bincount(X[:, :, :, i].ravel(), minlength=q) for i in range(L)])
    p = p / (B * n_blocks * C)
    var = float((p * (1.0 - p)).sum())
    if var <= 1e-12:
        return 0.5
    dev = 0.0
    for i in range(L):
        idx = (np.arange(n_blocks * C)[:, None] * q + np.moveaxis(X[:, :, :, i], 1, 2).reshape(-1, B))
        f = np.bincount(idx.ravel(), minlength=n_blocks * C * q).reshape(n_blocks * C, q) / B
        dev += float(((f - p[i]) ** 2).sum(axis=1).mean())
    return max(0.5, 0.5 * B * dev / var)


def _energy_autocorrelation(energies: np.ndarray, max_lag: int, first: int = 0) -> np.ndarray:
    """Normalised autocorrelation of the energy (T, C), global mean, lags first..max_lag."""
    T = energies.shape[0]
    x = energies - energies.mean()
    var = float(np.mean(x * x))
    rho = np.zeros(max_lag + 1 - first)
    if var <= 1e-300:
        if first == 0:
            rho[0] = 1.0
        return rho
    for t in range(first, max_lag + 1):
        rho[t - first] = 1.0 if t == 0 else float(np.mean(x[: T - t] * x[t:])) / var
    return rho


def _windowed_taus(states: np.ndarray, energies: np.ndarray, q: int, max_lag: int,
                   geyer: bool, first_lags: int = 64):
    """Autocorrelations up to where the estimators stop, and their tau_int (spin, energy).

    The lag-by-lag estimates cost O(T C L) each; Sokal's window and Geyer's sequence read only a
    prefix of ``rho`` (they stop at the first lag meeting their criterion), so the lags are
    computed in doubling blocks (``first_lags``, then twice as many, ...) until every estimator
    in use has stopped inside the computed lags or ``max_lag`` is reached. The taus and the
    window verdicts are exactly those of the full ``max_lag`` computation; the returned ``rho``
    arrays end at the last computed lag. Returns ``(rho_s, rho_e, (tau_s, w_s, g_s, ok_s),
    (tau_e, w_e, g_e, ok_e))``; ``g``, ``ok`` are Geyer's estimate and verdict (``nan``, True if
    ``geyer`` is False).
    """
    rho_s = np.zeros(0)
    rho_e = np.zeros(0)
    m = min(max_lag, first_lags)
    while True:
        rho_s = np.concatenate([rho_s, _spin_autocorrelation(states, q, m, rho_s.size)])
        rho_e = np.concatenate([rho_e, _energy_autocorrelation(energies, m, rho_e.size)])
        tau_s, w_s = integrated_autocorrelation_time(rho_s)
        tau_e, w_e = integrated_autocorrelation_time(rho_e)
        g_s, ok_s = initial_monotone_tau(rho_s) if geyer else (math.nan, True)
        g_e, ok_e = initial_monotone_tau(rho_e) if geyer else (math.nan, True)
        if m >= max_lag or (w_s > 0 and w_e > 0 and ok_s and ok_e):
            return rho_s, rho_e, (tau_s, w_s, g_s, ok_s), (tau_e, w_e, g_e, ok_e)
        m = min(max_lag, 2 * m)
