"""The two sides of the Bayes-optimal saddle point, numerically (docs/bayes_optimal.md).

* Prior side: the teacher has the Gaussian prior ``N(0, c_k)`` per spectral mode of Sigma; the
  isotropic prior ``w* ~ N(0, (tau / p) I)`` is ``c_k = b_k tau`` (:func:`gaussian_prior`). Given
  ``q_hat``, ``q`` and ``V = rho - q`` are sums over the modes of the summands sympy derives in
  :func:`.bayes_potentials.derive`.
* Channel side: ``q_hat = alpha E_xi sum_y (dZ)^2 / Z`` at ``mu = sqrt(q) xi`` and ``v = V``, with
  ``(Z, dZ)`` from :meth:`~.channels.Channel.partition` (the same channel objects, the same sympy
  expressions and quadrature as the general engine). For a real-label channel ``Z`` is Gaussian
  in ``y`` (:attr:`~.channels.Channel.gaussian_label`) and the integral over ``y`` is the Fisher
  information ``1 / Var(y | mu)``.

The Bayes-optimal test loss is the predictive log-loss ``-E log p(y | x, data) = -E_xi sum_y Z
log Z`` (nats; for real labels the differential entropy of ``N(mu, Var(y | mu))``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import energetic
from replica_mlm.theory.sides.channels import Channel
from replica_mlm.theory.symbolic import bayes_potentials


def gaussian_prior(spec: Spectrum, tau: float) -> Spectrum:
    """The spectrum of the isotropic Gaussian prior ``w* ~ N(0, (tau / p) I)``: teacher weights
    ``b_k tau`` on the modes of ``spec`` (so ``E |w*|^2 = tau`` and ``rho = tau (1/p) tr Sigma``)."""
    return Spectrum(omega=spec.omega, bulk=spec.bulk, teacher=spec.bulk * tau, noise=spec.noise)


def prior_side(prior: Spectrum, q_hat: float) -> tuple[float, float]:
    """``(q, V)`` of the posterior mean at ``q_hat`` (``q + V = rho`` of the prior)."""
    q_mode, V_mode, _ = bayes_potentials.compiled()(prior.omega, prior.bulk, prior.teacher, q_hat)
    return float(np.sum(q_mode)), float(np.sum(V_mode))


def estimation_error(prior: Spectrum, q_hat: float) -> float:
    """``E |w_hat - w*|^2``: the sum of the posterior variances of the teacher's coordinates."""
    return float(np.sum(bayes_potentials.compiled()(prior.omega, prior.bulk, prior.teacher, q_hat)[2]))


def _binary_nodes(channel: Channel, q: float, V: float, noise: float, order: int):
    """Labels, weights ``c Z`` and ``c dZ`` and ``Z`` on the nodes of ``mu = sqrt(q) xi``.

    Panel edges are graded towards ``mu = 0`` down to a sixteenth of the channel's own width
    ``sqrt(V + sigma^2)`` (the noiseless sign channel's Z is a step of that width).
    """
    if q <= 0:  # the uninformed start: mu = 0 surely
        zero = np.zeros(1)
        return [(label, np.ones(1), *(np.asarray(t, float) for t in channel.partition(label, zero, V, noise)))
                for label in (1.0, -1.0)]
    width = math.sqrt(V + noise)
    top = energetic.X * math.sqrt(q)
    grades = width * 2.0 ** np.arange(-4, max(math.ceil(math.log2(top / width)), -4) + 1)
    breaks = np.concatenate([grades, -grades])
    out = []
    for label in (1.0, -1.0):
        wv, c = energetic.panels(math.sqrt(q), breaks, order)
        zv, dz = channel.partition(label, wv, V, noise)
        out.append((label, c, np.asarray(zv, float), np.asarray(dz, float)))
    return out


def channel_hat(channel: Channel, *, alpha: float, q: float, V: float, noise: float,
                order: int = energetic.ORDER) -> float:
    """``q_hat = alpha E_xi sum_y (dZ)^2 / Z`` (nodes where Z underflows to 0 add 0)."""
    if channel.labels == "real":
        return alpha / _label_variance(channel, V, noise)
    total = 0.0
    for _, c, zv, dz in _binary_nodes(channel, q, V, noise, order):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(zv > 0, bayes_potentials.compiled_hat_integrand()(zv, dz), 0.0)
        total += float(np.dot(c, ratio))
    return alpha * total


def test_loss(channel: Channel, *, q: float, V: float, noise: float, order: int = energetic.ORDER) -> float:
    """The predictive log-loss ``-E_xi sum_y Z log Z`` (nats)."""
    if channel.labels == "real":
        return 0.5 * math.log(2 * math.pi * math.e * _label_variance(channel, V, noise))
    total = 0.0
    for _, c, zv, _ in _binary_nodes(channel, q, V, noise, order):
        with np.errstate(divide="ignore", invalid="ignore"):
            total -= float(np.dot(c, np.where(zv > 0, zv * np.log(zv), 0.0)))
    return total


def error(channel: Channel, *, q: float, V: float, noise: float, order: int = energetic.ORDER) -> float:
    """The channel's natural error of the posterior mean (``m = q``, ``rho = q + V``)."""
    return energetic.error(channel, q=q, m=q, rho=q + V, noise=noise, order=order)


def _label_variance(channel: Channel, V: float, noise: float) -> float:
    return float(channel._numeric["var"](0.0, V, noise))


def output_denoiser(channel: Channel, y: np.ndarray, omega: np.ndarray, V: float, noise: float) -> np.ndarray:
    """``g = d log Z(y; omega, V) / d omega`` per sample: AMP's output step (the channel's Z and dZ).

    Non-finite values (Z underflowing to 0 far on the wrong side of a noiseless sign channel)
    are returned as they are, for the caller to refuse.
    """
    if channel.labels == "real":
        return np.asarray(channel._numeric["score"](y, omega, V, noise), dtype=float) * np.ones_like(omega)
    g = np.empty_like(omega)
    for label in (1.0, -1.0):
        mask = y == label
        if np.any(mask):
            zv, dz = channel.partition(label, omega[mask], V, noise)
            with np.errstate(divide="ignore", invalid="ignore"):
                g[mask] = dz / zv
    return g


@cache
def log_likelihood(channel: Channel):
    """``(y, nu, sigma^2) -> (log P_out(y | nu), d log P_out / d nu)`` from the channel's sympy
    ``P_out`` (derivative by sympy), compiled once per channel: the posterior sampler's likelihood."""
    import sympy as sp

    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import lambdify, nu, y

    log_p = sp.log(channel.p_out)
    fn = lambdify((y, nu, P.noise), [log_p, sp.simplify(sp.diff(log_p, nu))], cse=True)

    def evaluate(yv, nuv, noise):
        with np.errstate(divide="ignore"):
            lp, dlp = fn(yv, nuv, noise)
        return np.broadcast_to(lp, np.shape(nuv)), np.broadcast_to(dlp, np.shape(nuv))

    return evaluate


@dataclass(frozen=True, eq=False)
class BayesChannel:
    """The channel side of the Bayes-optimal saddle point (:class:`.interfaces.BayesChannelSide`):
    on the Nishimori line the overlaps are ``q`` (``m = q``) and ``V = rho - q``, one conjugate."""

    channel: Channel
    noise: float
    order: int = energetic.ORDER

    @property
    def name(self) -> str:
        return self.channel.name

    def hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat`` at ``(q, V)`` (:func:`channel_hat`)."""
        return channel_hat(self.channel, alpha=alpha, q=q, V=V, noise=self.noise, order=self.order)

    def error(self, q: float, V: float) -> float:
        return error(self.channel, q=q, V=V, noise=self.noise, order=self.order)

    def test_loss(self, q: float, V: float) -> float:
        return test_loss(self.channel, q=q, V=V, noise=self.noise, order=self.order)


@dataclass(frozen=True, eq=False)
class BayesPrior:
    """The prior side of the Bayes-optimal saddle point (:class:`.interfaces.BayesPriorSide`): the
    Gaussian prior's modes ``spec`` (:func:`gaussian_prior`)."""

    spec: Spectrum

    def overlaps(self, q_hat: float) -> tuple[float, float]:
        """``(q, V)`` at ``q_hat`` (:func:`prior_side`)."""
        return prior_side(self.spec, q_hat)

    def estimation_error(self, q_hat: float) -> float:
        return estimation_error(self.spec, q_hat)
