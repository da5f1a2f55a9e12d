"""The ordered states of the rest of a site's sequence: a latent split of the local theory's clusters.

docs/discrete.md, section "Sparse couplings" (paragraph "Ordered states"). The local data model
keeps the label and the neighbourhood exact and takes the rest of the sequence Gaussian given the
cluster. Where the model orders (a ferromagnet at and below its ordering temperature), the rest is
in one of two states whatever the neighbourhood: given a cluster, its law is two-peaked, which one
Gaussian per cluster cannot hold. The rule, on the samples (or all configurations with their
probabilities):

1. the axis: the leading eigenvector ``u`` of the pooled within-cluster covariance of the inputs
   beyond the neighbourhood (for a ferromagnet, the rest's magnetisation);
2. the projections ``t = u . x_rest`` are *two-peaked* when both
   Sarle's bimodality coefficient ``(g^2 + 1) / k`` (``g`` the skewness, ``k`` the kurtosis) exceeds
   :data:`BIMODALITY` (5/9, the uniform law's: above it a law is not one peak) and a two-component
   one-dimensional Gaussian fit separates its components by Ashman's
   ``D = sqrt(2) |m_1 - m_2| / sqrt(v_1 + v_2)`` above :data:`SEPARATION`;
3. if so, each sample's state is the component that is more probable for its ``t``, and the clusters
   become (label, neighbourhood configuration, state), each with its own weight and mean, one pooled
   covariance still. The state is latent: it is not read off the inputs (the Bayes error of the model
   sums the states of a label, :func:`replica_mlm.tasks.bayes_error.cluster_mixture_error`).

Measured on the sites of the sparse tables (20 000 sequences each): the ferromagnetic square lattice at
``beta`` 0.44 and 0.6 gives ``D`` = 7.3 and 61 (coefficient 0.85, 0.996); every site where the local
theory held without the split gives ``D`` from 1.1 to 3.5 (coefficient 0.35 to 0.58).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks

#: Sarle's bimodality coefficient above which the projections are not one peak (the uniform law's 5/9)
BIMODALITY = 5.0 / 9.0
#: Ashman's D of the two-component fit above which its components are two states (the sites where
#: the local theory held without a split measure 1.1-3.5, the ordered lattices 7.3-61)
SEPARATION = 5.0
#: expectation-maximisation steps of the two-component fit, and the change of its mean
#: log-likelihood at which it stops
EM_STEPS, EM_TOL = 500, 1e-12


@dataclass(frozen=True)
class RestStates:
    """The rule's measurements on one site and, if it splits, each sample's state.

    Attributes
    ----------
    axis : ndarray (d_rest,)
        ``u``, the leading axis of the pooled within-cluster covariance beyond the neighbourhood.
    coefficient : float
        Sarle's bimodality coefficient of the projections.
    separation : float
        Ashman's D of the two-component fit.
    split : bool
        Whether both exceed their thresholds (:data:`BIMODALITY`, :data:`SEPARATION`).
    states : ndarray (n,) of int or None
        Each sample's state (0 or 1) when ``split``, else None.
    """

    axis: np.ndarray
    coefficient: float
    separation: float
    split: bool
    states: np.ndarray | None


def _moments(t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted skewness and kurtosis (not excess) of ``t``."""
    m = w @ t
    c = t - m
    v = w @ c**2
    if v <= 0.0:
        return 0.0, 1.0
    return float(w @ c**3 / v**1.5), float(w @ c**4 / v**2)


def two_gaussians(t: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights, means and variances of a two-component Gaussian fit to the weighted values ``t``
    (expectation-maximisation from the lower and upper quartiles, deterministic)."""
    order = np.argsort(t)
    cum = np.cumsum(w[order])
    q1, q3 = t[order][np.searchsorted(cum, [0.25, 0.75])]
    var0 = float(w @ (t - w @ t) ** 2)
    pi, mu, var = np.array([0.5, 0.5]), np.array([q1, q3], dtype=float), np.full(2, max(var0, 1e-300))
    floor = 1e-12 * max(var0, 1e-300)
    last = -math.inf
    for _ in range(EM_STEPS):
        logp = np.log(pi) - 0.5 * np.log(2 * math.pi * var) - 0.5 * (t[:, None] - mu) ** 2 / var
        top = logp.max(axis=1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
        resp = np.exp(logp - norm[:, None]) * w[:, None]
        nk = resp.sum(axis=0)
        if np.any(nk <= 0.0):
            break
        pi, mu = nk / nk.sum(), (resp.T @ t) / nk
        var = np.maximum((resp * (t[:, None] - mu) ** 2).sum(axis=0) / nk, floor)
        ll = float(w @ norm)
        if abs(ll - last) <= EM_TOL * max(1.0, abs(ll)):
            break
        last = ll
    return pi, mu, var


def rest_states(x, clusters, free, *, probabilities=None) -> RestStates:
    """The rule of the module on the inputs ``x`` (n, d) of a site, their clusters (n,) of the label
    and neighbourhood, the coordinates ``free`` beyond the neighbourhood, and the samples'
    ``probabilities`` (None: equally weighted samples)."""
    x = _checks.finite_array(x, "x", ndim=2)
    clusters = np.asarray(clusters).ravel()
    if clusters.shape != (x.shape[0],) or not np.issubdtype(clusters.dtype, np.integer):
        raise ValueError(f"clusters must be integers, one per row of x ({x.shape[0]}), got "
                         f"{clusters.dtype} {clusters.shape}")
    free = np.asarray(free, dtype=np.int64)
    if free.size == 0:
        raise ValueError("free must name at least one coordinate beyond the neighbourhood")
    n = x.shape[0]
    w = np.full(n, 1.0 / n) if probabilities is None else np.asarray(probabilities, dtype=float)
    w = w / w.sum()
    xr = x[:, free]
    _, idx = np.unique(clusters, return_inverse=True)
    idx = idx.ravel()
    mass = np.bincount(idx, weights=w)
    means = np.stack([np.bincount(idx, weights=w * xr[:, k]) for k in range(xr.shape[1])], axis=1)
    means /= mass[:, None]
    resid = xr - means[idx]
    S = (resid.T * w) @ resid
    axis = np.linalg.eigh((S + S.T) / 2)[1][:, -1]
    t = xr @ axis
    g, k = _moments(t, w)
    coefficient = (g * g + 1.0) / k
    pi, mu, var = two_gaussians(t, w)
    separation = float(math.sqrt(2.0) * abs(mu[0] - mu[1]) / math.sqrt(var.sum()))
    split = bool(coefficient > BIMODALITY and separation > SEPARATION)
    states = None
    if split:
        logp = np.log(pi) - 0.5 * np.log(var) - 0.5 * (t[:, None] - mu) ** 2 / var
        states = np.argmax(logp, axis=1).astype(np.int64)
    return RestStates(axis=axis, coefficient=float(coefficient), separation=separation, split=split,
                      states=states)


__all__ = ["BIMODALITY", "SEPARATION", "RestStates", "rest_states", "two_gaussians"]
