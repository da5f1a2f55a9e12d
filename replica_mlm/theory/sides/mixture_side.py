"""The channel side of a two-cluster Gaussian mixture: hat integrals, training and test loss, error.

docs/discrete.md, section "The replica theory of the mixture". The data are ``y = +-1`` with
probabilities ``pi_+-`` and ``x = y mu + S^{1/2} g``; the student's field on a sample of class ``y``
is ``omega = y m + sqrt(q) xi`` with ``m = w . mu`` and ``q = w^T S w`` (no teacher field to
integrate over: the label is the cluster). With ``f`` and ``d_w f`` from the loss's proximal
operator (the same sympy-derived :meth:`~.losses.Loss.prox` as the general engine),

    m_hat = alpha sum_y pi_y y E_xi f(y, omega, V)
    q_hat = alpha sum_y pi_y E_xi f(y, omega, V)^2
    V_hat = - alpha sum_y pi_y E_xi d_w f(y, omega, V)

(Loureiro et al., NeurIPS 2021, arXiv:2106.03791, for K clusters; Mignacco et al., ICML 2020, for
two). The prior side is the ridge prior of :mod:`.prior` on the modes of ``S`` with the
"teacher" ``theta = S^{-1} mu`` (then ``w^T S theta = m``). Quadrature: the panels of
:func:`.energetic.panels` with edges where the proximal point meets a kink of the loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import prior
from replica_mlm.theory.sides.energetic import ORDER, panels
from replica_mlm.theory.sides.losses import Loss

#: the labels of the two clusters, in the order of the mixture's classes
LABELS = (1.0, -1.0)


def _nodes(loss: Loss, label: float, *, V: float, q: float, m: float, order: int, at: str):
    """Fields ``omega = label m + sqrt(q) xi`` and weights for ``E_xi``; panel edges at the prox's
    kink thresholds (``at="prox"``) or the loss's kinks (``at="loss"``)."""
    lab = np.array([label])
    breaks = loss.thresholds(lab, V) if at == "prox" else loss.kink_points(lab)
    shift = label * m
    x, c = panels(math.sqrt(q), [b[0] - shift for b in breaks], order)
    return shift + x, c


def hats(loss: Loss, *, alpha: float, V: float, q: float, m: float, weights, order: int = ORDER
         ) -> dict[str, float]:
    """``m_hat, q_hat, V_hat`` and the mean training loss at ``(V, q, m)``."""
    out = {"m_hat": 0.0, "q_hat": 0.0, "V_hat": 0.0, "train_loss": 0.0}
    for label, pi in zip(LABELS, weights, strict=True):
        w, c = _nodes(loss, label, V=V, q=q, m=m, order=order, at="prox")
        y = np.full(w.shape, label)
        px = loss.prox(y, w, V)
        out["m_hat"] += alpha * pi * label * float(c @ px.f)
        out["q_hat"] += alpha * pi * float(c @ (px.f * px.f))
        out["V_hat"] -= alpha * pi * float(c @ px.dfdw)
        out["train_loss"] += pi * float(c @ loss.value(y, px.z))
    return out


def test_loss(loss: Loss, *, q: float, m: float, weights, order: int = ORDER) -> float:
    """``E loss(y, w_hat . x)`` on a fresh sample of the mixture (``E_y loss(y, 0)`` at ``q = 0``)."""
    total = 0.0
    for label, pi in zip(LABELS, weights, strict=True):
        if q <= 0.0:
            total += pi * float(loss.value(np.array([label]), np.array([label * m]))[0])
            continue
        w, c = _nodes(loss, label, V=1.0, q=q, m=m, order=order, at="loss")
        total += pi * float(c @ loss.value(np.full(w.shape, label), w))
    return total


def error(*, q: float, m: float) -> float:
    """``P(y != sign(w_hat . x)) = Phi(-m / sqrt q)`` (the same for both clusters: no bias)."""
    if q <= 0.0:
        return 0.5
    return float(ndtr(-m / math.sqrt(q)))


def estimation_error(omega, mu_modes, target_modes, p: int, lam: float, V_hat: float, q_hat: float,
                     m_hat: float) -> float:
    """``E |w_hat - w*|^2`` from the hats, mode by mode of ``S`` (eigenvalues ``omega``): the
    estimator's mode ``k`` has mean ``m_hat mu_k / (lam + V_hat omega_k)`` and variance
    ``q_hat omega_k / (p (lam + V_hat omega_k)^2)`` (the ridge prior of :mod:`.prior` with
    ``omega_k theta_k = mu_k``); ``target_modes`` are the modes of ``w*``."""
    g = 1.0 / (lam + V_hat * omega)
    bias = np.sum((m_hat * mu_modes * g - target_modes) ** 2)
    var = np.sum(q_hat * omega * g * g) / p
    return float(bias + var)


@dataclass(frozen=True)
class MixtureClusters:
    """The channel side of a two-cluster mixture (:class:`.interfaces.ChannelSide`): the label is
    the cluster, the student's field on class ``y`` is ``y m + sqrt(q) xi``."""

    loss: Loss
    weights: tuple[float, float]
    order: int = ORDER
    name: str = "mixture"

    def hats(self, alpha: float, V: float, q: float, m: float) -> dict[str, float]:
        return hats(self.loss, alpha=alpha, V=V, q=q, m=m, weights=self.weights, order=self.order)

    def error(self, q: float, m: float) -> float:
        return error(q=q, m=m)

    def test_loss(self, q: float, m: float) -> float:
        return test_loss(self.loss, q=q, m=m, weights=self.weights, order=self.order)


@dataclass(frozen=True, eq=False)
class MixturePrior:
    """The prior side of a two-cluster mixture (:class:`.interfaces.PriorSide`): the ridge prior on
    the modes of the pooled covariance ``S`` (eigenvalues ``omega``) with ``theta = S^{-1} mu``
    (``spec``), whose estimation error is measured against the site's own teacher
    (``target_modes``; :func:`estimation_error`)."""

    spec: Spectrum
    lam: float
    omega: np.ndarray
    mu_modes: np.ndarray
    target_modes: np.ndarray
    p: int

    def overlaps(self, V_hat: float, q_hat: float, m_hat: float) -> tuple[float, float, float]:
        return prior.ridge(self.spec, self.lam, V_hat, q_hat, m_hat)

    def estimation_error(self, V_hat: float, q_hat: float, m_hat: float) -> float:
        return estimation_error(self.omega, self.mu_modes, self.target_modes, self.p, self.lam, V_hat, q_hat,
                                m_hat)
