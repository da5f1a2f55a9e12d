"""Closed-form ridge / Moore-Penrose simulations of the masked-site regression task."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm import _checks
from replica_mlm._threads import INHERIT, blas_threads
from replica_mlm.models.masked_site import MaskedSite
from replica_mlm.theory.curve import grid


@dataclass(frozen=True)
class Simulation:
    """Ridge estimators trained on independent samples of one task.

    Attributes
    ----------
    alpha : float
        Realised n / p (n = round(alpha p)).
    n, p, seeds : int
        Samples per seed, inputs, number of independent samples.
    lam : ndarray, shape (k,)
        Ridge strengths (0 is the Moore-Penrose solution).
    eg, train_loss : ndarray, shape (seeds, k)
        Exact generalisation error sigma^2 + (w_hat - w*)^T Sigma (w_hat - w*) and empirical
        training loss |y - X w_hat|^2 / n, per seed and lam.
    eg_mean, eg_stderr, train_loss_mean, train_loss_stderr : ndarray, shape (k,)
        Means over seeds and their standard errors (std with ddof=1 over sqrt(seeds)).
    """

    alpha: float
    n: int
    p: int
    seeds: int
    lam: np.ndarray
    eg: np.ndarray
    train_loss: np.ndarray

    @property
    def eg_mean(self) -> np.ndarray:
        return self.eg.mean(axis=0)

    @property
    def eg_stderr(self) -> np.ndarray:
        return _stderr(self.eg)

    @property
    def train_loss_mean(self) -> np.ndarray:
        return self.train_loss.mean(axis=0)

    @property
    def train_loss_stderr(self) -> np.ndarray:
        return _stderr(self.train_loss)


def _stderr(x: np.ndarray) -> np.ndarray:
    if x.shape[0] < 2:
        return np.full(x.shape[1], np.nan)
    return x.std(axis=0, ddof=1) / np.sqrt(x.shape[0])


def ridge_path(x: np.ndarray, y: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Ridge weights for every lam from one thin SVD of X; shape (p, len(lam)).

    ``w(lam) = (X^T X + lam p I)^{-1} X^T y = V diag(s / (s^2 + lam p)) U^T y``; at lam = 0 the
    Moore-Penrose solution ``X^+ y`` (singular values below ``max(n, p) eps s_max`` dropped, as
    numpy.linalg.pinv does).
    """
    n, p = x.shape
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    uty = u.T @ y
    cutoff = max(n, p) * np.finfo(float).eps * (s[0] if s.size else 0.0)
    keep = s > cutoff
    lam_p = np.asarray(lam)[None, :] * p
    with np.errstate(divide="ignore", invalid="ignore"):
        filt = np.where(lam_p > 0, s[:, None] / (s[:, None] ** 2 + lam_p),
                        np.where(keep[:, None], 1.0 / s[:, None], 0.0))
    return vt.T @ (filt * uty[:, None])


def simulate(site: MaskedSite, *, alpha: float, lam, seeds: int = 20,
             rng: _checks.RngLike = None, threads=INHERIT) -> Simulation:
    """Train ridge on ``seeds`` independent samples of ``n = round(alpha p)`` points.

    Parameters
    ----------
    site : MaskedSite
        The task (finite covariance, teacher and noise).
    alpha : float
        Sample ratio, at least 1 / p (one sample); the realised ratio n / p, with
        n = round(alpha p), is reported in the result.
    lam : float or array_like
        Ridge strength(s) >= 0; all are computed from one SVD per sample.
    seeds : int
        Number of independent samples, >= 2 (the standard errors need two).
    rng : int or numpy.random.Generator
        Seed; sample ``k`` uses the ``k``-th child of ``SeedSequence``-spawned generators, so
        results do not depend on how samples are split across workers.
    threads : int or None
        BLAS threads during the call (scoped with threadpoolctl, restored afterwards). Default:
        the enclosing setting (e.g. a sweep's ``threads=``), else 1 -- many small SVDs run far
        faster on one thread than with threads fighting over a busy machine. ``None`` leaves
        the BLAS libraries' own setting. The numbers do not depend on it beyond rounding.

    Returns
    -------
    Simulation
    """
    if not isinstance(site, MaskedSite):
        raise TypeError(f"simulate needs a MaskedSite (a finite instance) as site, got "
                        f"{type(site).__name__}")
    alpha = _checks.positive(alpha, "alpha")
    lam = grid(lam, "lam", positive=False)
    seeds = _checks.positive_int(seeds, "seeds")
    if seeds < 2:
        raise ValueError(f"seeds must be >= 2 (a standard error needs two independent samples), "
                         f"got {seeds}")
    p = site.p
    if alpha * p < 1:
        raise ValueError(f"alpha = {alpha:g} gives alpha * p = {alpha * p:.3g} < 1 sample for p = {p} "
                         f"inputs: alpha must be >= 1/p = {1 / p:.6g}")
    n = round(alpha * p)
    # per seed: a child generator (about 1 KiB) and two rows of results; one sample at a time,
    # with its SVD and the ridge path
    _checks.allocation(seeds * (1024 + 16 * lam.size) + 8 * (6 * n * p + 2 * p * p + 3 * p * lam.size),
                       f"simulate(seeds={seeds}) at n = {n}, p = {p}")
    _checks.work(seeds * (n * p * min(n, p) + n * p * lam.size), f"simulate(seeds={seeds})")
    children = _checks.as_generator(rng).spawn(seeds)
    eg = np.empty((seeds, lam.size))
    et = np.empty((seeds, lam.size))
    with blas_threads(threads):
        for k, gen in enumerate(children):
            x, y = site.sample(n, rng=gen)
            w = ridge_path(x, y, lam)
            eg[k] = site.generalisation_error(w)
            et[k] = np.mean((y[:, None] - x @ w) ** 2, axis=0)
    return Simulation(alpha=n / p, n=n, p=p, seeds=seeds, lam=lam, eg=eg, train_loss=et)
