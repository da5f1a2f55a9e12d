"""Single-histogram reweighting of a recorded run to nearby inverse temperatures.

Configurations recorded at inverse temperature ``beta`` are samples of
``P_beta(s) ~ exp(-beta H(s))``; with weights ``w = exp(-delta H(s))`` they estimate averages under
``P_{beta + delta}`` (Ferrenberg and Swendsen's reweighting). The temperature tuner uses it to
place its next trial where the recorded run predicts the target Hamming distance, instead of
extrapolating a slope. See docs/potts.md, "Tuning the temperature".
"""

from __future__ import annotations

import numpy as np

from replica_mlm.potts.diagnostics import GibbsDiagnostics, cross_chain_hamming

__all__ = ["REWEIGHT_MIN_FRACTION", "effective_fraction", "reweighted_beta", "reweighted_hamming"]


def _log_weights(energies: np.ndarray, delta: float) -> np.ndarray:
    """``-delta E`` shifted per chain so that each chain's largest log weight is 0."""
    logw = -delta * energies
    return logw - logw.max(axis=0, keepdims=True)


def effective_fraction(energies: np.ndarray, delta: float) -> float:
    """Kish's effective sample size of the weights ``exp(-delta E)``, as a fraction of the run.

    ``energies`` (T, C): the recorded energies of ``C`` chains. The fraction is computed per chain,
    ``(sum_t w)^2 / (T sum_t w^2)``, and the smallest over chains is returned: 1 at ``delta = 0``,
    ``exp(-delta^2 sigma_E^2)`` for normal energies of standard deviation ``sigma_E``.
    """
    w = np.exp(_log_weights(np.asarray(energies, dtype=float), delta))
    frac = w.sum(axis=0) ** 2 / (w.shape[0] * (w * w).sum(axis=0))
    return float(frac.min())


def reweighted_hamming(states: np.ndarray, energies: np.ndarray, q: int,
                       delta: float) -> tuple[float, float]:
    """Cross-chain mean Hamming distance at ``beta + delta`` from a run recorded at ``beta``.

    Parameters
    ----------
    states : ndarray, shape (T, C, L)
        Configurations recorded from ``C`` independent chains (or replicas' coldest rung) at
        ``beta``.
    energies : ndarray, shape (T, C)
        Their energies ``H(s)``.
    q : int
        Number of colours.
    delta : float
        Shift of the inverse temperature.

    Returns
    -------
    hamming, se : float
        :func:`~replica_mlm.potts.diagnostics.cross_chain_hamming` of each chain's weighted colour
        frequencies ``sum_t w_t [s_t = a] / sum_t w_t`` with ``w_t = exp(-delta H(s_t))``, and its
        jackknife error over chains. At ``delta = 0`` this is exactly the unweighted estimate.
        Reliable only while :func:`effective_fraction` stays large (the two measures overlap).
    """
    T, C, L = states.shape
    w = np.exp(_log_weights(np.asarray(energies, dtype=float), delta))  # (T, C)
    offset = np.arange(C * L).reshape(1, C, L) * q
    counts = np.zeros(C * L * q)
    for a in range(0, T, _CHUNK):  # bounded temporaries: 16 bytes per recorded spin of a chunk
        idx = (offset + states[a:a + _CHUNK]).ravel()
        counts += np.bincount(idx, weights=np.repeat(w[a:a + _CHUNK].ravel(), L),
                              minlength=C * L * q)
    return cross_chain_hamming(counts.reshape(C, L, q))


#: recorded steps per chunk of the weighted colour counts
_CHUNK = 1024


#: smallest effective fraction of a run reweighted to another beta that the tuner trusts
REWEIGHT_MIN_FRACTION = 0.5


def reweighted_beta(d: GibbsDiagnostics, target: float, q: int) -> float | None:
    """Beta where the run ``d`` (at ``beta``, kept record) predicts ``target`` by reweighting.

    Searches ``beta + delta`` on the side of ``beta`` that moves the Hamming distance towards
    ``target``, out to where the weights' effective fraction
    (:func:`effective_fraction`) falls to
    ``REWEIGHT_MIN_FRACTION``; returns the root of the reweighted Hamming distance minus
    ``target`` there (Brent), or None if the reweighted distance does not reach the target
    within that range.
    """
    from scipy.optimize import brentq  # here, not at import: scipy.optimize costs 19 MB of every process

    states, energies = d.record
    beta = float(d.ladder[-1])
    sign = 1.0 if d.hamming > target else -1.0  # too far apart: colder

    def fraction_gap(x: float) -> float:
        return effective_fraction(energies, sign * x) - REWEIGHT_MIN_FRACTION

    x_edge = 0.5 * beta  # never more than halve or 1.5x beta in one move
    if fraction_gap(x_edge) < 0:
        x_edge = brentq(fraction_gap, 0.0, x_edge, xtol=1e-9 * beta)

    def gap(x: float) -> float:
        return reweighted_hamming(states, energies, q, sign * x)[0] - target

    g0 = d.hamming - target
    if g0 * gap(x_edge) > 0:
        return None
    return beta + sign * brentq(gap, 0.0, x_edge, xtol=1e-6 * beta)
