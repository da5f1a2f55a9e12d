"""Bayes-optimal approximate message passing on one instance, with its state evolution.

``rm.amp(X, y, site=site)`` estimates the posterior mean of the teacher from a training set whose
inputs have the site's covariance Sigma, under the isotropic Gaussian prior of
:func:`replica_mlm.bayes_optimal` (docs/bayes_optimal.md, section "AMP").

Whitening. In the eigenbasis ``Sigma = U diag(omega) U^T`` the inputs are ``X = G diag(sqrt
omega) U^T`` with ``G`` of i.i.d. N(0, 1) entries, so the field is ``X w = A x`` with ``A = G /
sqrt(p)`` (i.i.d., variance 1/p) and ``x = sqrt(p) diag(sqrt omega) U^T w``, whose prior is
``N(0, tau diag(omega))`` -- still Gaussian, diagonal in this basis. Generalised AMP (GAMP) on the
i.i.d. matrix ``A`` then needs no further assumption on Sigma: its prior step is the linear
posterior mean ``x_k = tau omega_k L_k r_k / (1 + tau omega_k L_k)`` per mode, and its output step
``g = d log Z / d omega`` uses the channel's ``Z`` and ``dZ`` (the same objects as the theory,
:func:`.bayes_sides.output_denoiser`). The precision ``L = A^2^T g^2`` uses the Nishimori
identity ``E[-dg/domega] = E[g^2]`` of the matched model.

State evolution. From ``x = 0`` the overlap of iteration ``t`` is, as ``p -> infinity``, the
``q_t`` of :func:`replica_mlm.theory.solvers.nishimori.evolution` (``m_t = q_t`` on the Nishimori
line); :class:`AmpInfo` carries both, per iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.theory.sides import bayes_sides, channels
from replica_mlm.theory.solvers import nishimori
from replica_mlm.theory.studies.bayes_optimal import prior_spectrum


@dataclass(frozen=True)
class AmpInfo:
    """What one AMP run did, beside its state-evolution prediction.

    Attributes
    ----------
    iterations : int
        Iterations run.
    converged : bool
        True if the relative change of the estimate, ``|x_t - x_{t-1}|^2 / (p rho)``, fell below ``tol``.
    residual : float
        That change at the last iteration.
    q : ndarray, shape (iterations,)
        Per iteration, ``w_hat^T Sigma w_hat``.
    m : ndarray, shape (iterations,), or None
        Per iteration, ``w_hat^T Sigma w*``; None when no ``teacher`` was given (not measured).
    se_q : ndarray, shape (iterations,)
        The state evolution's overlap after the same number of iterations.
    fixed_point_q : float
        The Bayes-optimal overlap (the state evolution's fixed point, :func:`rm.bayes_optimal`).
    rho, tau : float
        The prior's signal and ``E |w*|^2``.
    channel : str
    """

    iterations: int
    converged: bool
    residual: float
    q: np.ndarray
    m: np.ndarray | None
    se_q: np.ndarray
    fixed_point_q: float
    rho: float
    tau: float
    channel: str

    def to_frame(self):
        """One row per iteration: ``t, q, m, se_q`` (no ``m`` column without a teacher)."""
        import pandas as pd

        cols = {"t": np.arange(1, self.iterations + 1), "q": self.q, "m": self.m, "se_q": self.se_q}
        return pd.DataFrame({k: v for k, v in cols.items() if v is not None})


def _site_parts(site):
    cov = getattr(site, "covariance", None)
    if not isinstance(cov, np.ndarray) or cov.ndim != 2:
        raise TypeError("site must be a MaskedSite (a task with a covariance matrix), got "
                        f"{type(site).__name__}")
    omega, u = np.linalg.eigh(cov)
    return omega, u


def _checked_data(X, y, site, channel):
    """The site's eigen-decomposition ``(omega, u)`` and ``X``, ``y``, the channel, checked for one
    instance: p = len(omega) columns, one label per row, labels in the channel's support."""
    omega, u = _site_parts(site)
    p = omega.size
    X = _checks.bounded_array(X, "X", ndim=2)
    if X.shape[1] != p:
        raise ValueError(f"X must have p = {p} columns (the site's inputs), got shape {X.shape}")
    y = _checks.bounded_array(y, "y", ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}), got {y.shape[0]}")
    chan = channels.resolve(channel, site)
    if chan.labels == "binary" and not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"y must hold labels in {{-1, +1}} for the {chan.name} channel")
    return omega, u, X, y, chan


@keywords
def amp(X, y, *, site, prior: str = "gaussian", beta: float | None = None, channel=None, teacher=None,
        max_iter: int = 100, tol: float = 1e-10, damping: float = 0.0) -> tuple[np.ndarray, AmpInfo]:
    """Bayes-optimal GAMP on one training set (docs/bayes_optimal.md, section "AMP").

    Parameters
    ----------
    X : array, shape (n, p)
        Inputs, rows ~ N(0, Sigma) with Sigma the site's covariance.
    y : array, shape (n,)
        Labels: in {-1, +1} for the sign and logit channels, real for the gaussian one.
    site : MaskedSite
        Its covariance, channel and (for ``prior="gaussian"``) ``rho``.
    prior, beta : optional
        The prior, as in :func:`replica_mlm.bayes_optimal`.
    channel : str or rm.channels.Channel, optional
        Default: the site's.
    teacher : array, shape (p,), optional
        The teacher, to measure ``m_t = w_hat^T Sigma w*`` per iteration.
    max_iter : int
        Most iterations.
    tol : float
        Convergence threshold on ``|x_t - x_{t-1}|^2 / (p rho)``.
    damping : float
        Weight in [0, 1) of the previous estimate in each prior step.

    Returns
    -------
    w_hat : ndarray, shape (p,)
        The posterior-mean estimate.
    info : AmpInfo

    Raises
    ------
    TypeError, ValueError
        For bad arguments (entries of ``X``, ``y`` or ``teacher`` beyond 1e150 in magnitude
        included), and for data so far outside the site's covariance that the channel's
        normaliser underflows at a sample's field.
    """
    omega, u, X, y, chan = _checked_data(X, y, site, channel)
    p = omega.size
    if teacher is not None:
        teacher = _checks.bounded_array(teacher, "teacher", ndim=1)
        if teacher.shape != (p,):
            raise ValueError(f"teacher must have shape ({p},), got {teacher.shape}")
    max_iter = _checks.positive_int(max_iter, "max_iter")
    _checks.at_most(max_iter, 10**6, "max_iter", "at most 1e6 iterations")
    tol = _checks.positive(tol, "tol")
    damping = _checks.nonnegative(damping, "damping")
    if damping >= 1:
        raise ValueError(f"damping must lie in [0, 1), got {damping}")
    spec, tau = prior_spectrum(site, prior=prior, beta=beta)
    noise = spec.noise
    n = X.shape[0]
    A = (X @ u) / np.sqrt(omega) / math.sqrt(p)
    A2 = A * A
    prior_var = tau * omega
    x_star = None if teacher is None else math.sqrt(p) * np.sqrt(omega) * (u.T @ teacher)
    x_hat, v_x, g = np.zeros(p), prior_var.copy(), np.zeros(n)
    qs, ms, change = [], [], math.inf
    converged = False
    for _ in range(max_iter):
        V = float(np.mean(A2 @ v_x))
        w = A @ x_hat - V * g
        g = bayes_sides.output_denoiser(chan, y, w, V, noise)
        if not np.all(np.isfinite(g)):
            big = float(np.max(np.abs(w)))
            raise ValueError(f"X: the {chan.name} channel's normaliser Z underflowed at a sample's field "
                             f"(largest |field| {big:.3g}): the rows of X lie far outside the site's "
                             "covariance (they should be draws of N(0, Sigma)); AMP cannot go on")
        precision = np.maximum(A2.T @ (g * g), 1e-300)
        r = x_hat + (A.T @ g) / precision
        snr = prior_var * precision
        new = prior_var * precision / (1.0 + snr) * r
        if damping:
            new = damping * x_hat + (1 - damping) * new
        v_x = prior_var / (1.0 + snr)
        change = float(np.sum((new - x_hat) ** 2) / (p * spec.rho))
        x_hat = new
        qs.append(float(x_hat @ x_hat) / p)
        if x_star is not None:
            ms.append(float(x_hat @ x_star) / p)
        if change < tol:
            converged = True
            break
    t = len(qs)
    sides = bayes_sides.BayesChannel(chan, spec.noise), bayes_sides.BayesPrior(spec)
    se = nishimori.evolution(nishimori.Problem(*sides, n / p), t)[1:]
    fixed = nishimori.solve_point(nishimori.Problem(*sides, n / p))["q"]
    w_hat = u @ (x_hat / np.sqrt(omega) / math.sqrt(p))
    return w_hat, AmpInfo(iterations=t, converged=converged, residual=change, q=np.array(qs),
                          m=None if x_star is None else np.array(ms),
                          se_q=se, fixed_point_q=fixed, rho=spec.rho, tau=tau, channel=chan.name)


def instance(site, n: int, *, rng: _checks.RngLike = 0, prior: str = "gaussian", beta: float | None = None,
             channel=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A training set of the Bayes-optimal model: ``w* ~ N(0, (tau / p) I)`` drawn from the prior,
    ``n`` inputs from the site's covariance and labels through the channel. Returns ``(X, y, w*)``."""
    omega, u = _site_parts(site)
    n = _checks.positive_int(n, "n")
    gen = _checks.as_generator(rng)
    spec, tau = prior_spectrum(site, prior=prior, beta=beta)
    chan = channels.resolve(channel, site)
    p = omega.size
    w_star = gen.standard_normal(p) * math.sqrt(tau / p)
    X = (gen.standard_normal((n, p)) * np.sqrt(omega)) @ u.T
    return X, chan.sample(X @ w_star, float(spec.noise), gen), w_star
