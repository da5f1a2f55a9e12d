"""A posterior sampler on a small instance: the simulated Bayes estimator beside AMP.

Hamiltonian Monte Carlo on the posterior of the teacher given one training set, under the
isotropic Gaussian prior of :func:`replica_mlm.bayes_optimal` (docs/bayes_optimal.md, section
"A posterior sampler"). It works in the whitened coordinates of :mod:`.amp` (``X w = A x``, prior
``x ~ N(0, tau diag(omega))``), with the prior's standard deviations as the mass matrix, and the
log-likelihood ``sum_mu log P_out(y_mu | (A x)_mu)`` and its derivative from the channel's own
sympy ``P_out`` (:func:`.bayes_sides.log_likelihood`). For a log-concave likelihood (logit; the sign
channel with label noise; gaussian) the posterior is log-concave and HMC mixes well; the noiseless
sign channel (a step likelihood, no gradient) is refused.

The estimate is the mean of the kept samples, with a batch-means standard error of its overlaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.learners.amp import _checked_data
from replica_mlm.theory.sides import bayes_sides
from replica_mlm.theory.studies.bayes_optimal import prior_spectrum


@dataclass(frozen=True)
class PosteriorInfo:
    """What one sampler run did.

    Attributes
    ----------
    acceptance : float
        Fraction of HMC proposals accepted after burn-in.
    samples : int
        Samples averaged (after burn-in).
    step : float
        The leapfrog step (in units of the prior's standard deviations).
    q_se : float
        Batch-means standard error (20 batches) of ``w_mean^T Sigma w_mean``'s samples' mean field.
    """

    acceptance: float
    samples: int
    step: float
    q_se: float

    def to_frame(self):
        """A one-row pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([self.__dict__])


def posterior_mean(X, y, *, site, prior: str = "gaussian", beta: float | None = None, channel=None,
                   samples: int = 2000, burn_in: int = 500, step: float = 0.1, leapfrog: int = 10,
                   rng: _checks.RngLike = 0) -> tuple[np.ndarray, PosteriorInfo]:
    """The posterior mean of the teacher by HMC (docs/bayes_optimal.md, "A posterior sampler").

    Parameters
    ----------
    X, y, site, prior, beta, channel
        As in :func:`replica_mlm.amp`.
    samples, burn_in : int
        HMC trajectories kept, and discarded first.
    step : float
        Leapfrog step in units of the prior's standard deviation of each coordinate (0 < step <= 1).
    leapfrog : int
        Leapfrog steps per trajectory.
    rng : int or Generator

    Returns
    -------
    w_mean : ndarray, shape (p,)
    info : PosteriorInfo
    """
    omega, u, X, y, chan = _checked_data(X, y, site, channel)
    p = omega.size
    samples = _checks.positive_int(samples, "samples")
    if samples < 40:
        raise ValueError(f"samples must be at least 40 (20 batches of the error estimate), got {samples}")
    burn_in = _checks.nonnegative_int(burn_in, "burn_in")
    leapfrog = _checks.positive_int(leapfrog, "leapfrog")
    for name, value in (("samples", samples + burn_in), ("leapfrog", leapfrog)):
        _checks.at_most(value, 10**7, name, "at most 1e7")
    step = _checks.positive(step, "step")
    _checks.at_most(step, 1.0, "step", "the leapfrog step in prior standard deviations, 0 < step <= 1")
    gen = _checks.as_generator(rng)
    spec, tau = prior_spectrum(site, prior=prior, beta=beta)
    if chan.name == "sign" and spec.noise == 0:
        raise ValueError("the noiseless sign channel has a step likelihood without a gradient: HMC "
                         "cannot sample it; use rm.amp")
    loglik = bayes_sides.log_likelihood(chan)
    noise = spec.noise
    A = (X @ u) / np.sqrt(omega) / math.sqrt(p)
    scale = np.sqrt(tau * omega)  # prior standard deviations; HMC runs on z = x / scale ~ N(0, I)
    B = A * scale

    def energy(z):
        lp, dlp = loglik(y, B @ z, noise)
        return -float(np.sum(lp)) + 0.5 * float(z @ z), -(B.T @ dlp) + z

    z = np.zeros(p)
    U, grad = energy(z)
    total, accepted, kept = np.zeros(p), 0, []
    for it in range(burn_in + samples):
        mom = gen.standard_normal(p)
        H0 = U + 0.5 * float(mom @ mom)
        zn, gn, mn = z.copy(), grad.copy(), mom - 0.5 * step * grad
        for k in range(leapfrog):
            zn = zn + step * mn
            Un, gn = energy(zn)
            if k < leapfrog - 1:
                mn = mn - step * gn
        mn = mn - 0.5 * step * gn
        H1 = Un + 0.5 * float(mn @ mn)
        if math.isfinite(H1) and math.log(gen.random()) < H0 - H1:
            z, U, grad = zn, Un, gn
            accepted += it >= burn_in
        if it >= burn_in:
            total += z
            kept.append(z * scale)
    x_mean = total * scale / samples
    fields = np.array(kept) @ x_mean / p  # per-sample overlap with the mean: its batch-means error
    batches = np.array_split(fields, 20)
    q_se = float(np.std([b.mean() for b in batches], ddof=1) / math.sqrt(len(batches)))
    w_mean = u @ (x_mean / np.sqrt(omega) / math.sqrt(p))
    return w_mean, PosteriorInfo(acceptance=accepted / samples, samples=samples, step=step, q_se=q_se)
