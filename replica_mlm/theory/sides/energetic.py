"""The channel side of the general engine: hat integrals, training and test loss, errors.

Given the order parameters ``(V, q, m)`` of the student, a :class:`~.losses.Loss` and a
:class:`~.channels.Channel`, the conjugates are the Gaussian integrals (xi ~ N(0, 1),
``w = sqrt(q) xi``, ``mu = (m / sqrt q) xi``, ``v = rho - m^2/q``)

    m_hat = alpha E_xi sum_y dZ(y; mu, v) f(y, w, V)
    q_hat = alpha E_xi sum_y  Z(y; mu, v) f(y, w, V)^2
    V_hat = - alpha E_xi sum_y Z(y; mu, v) d_w f(y, w, V)

with ``f`` and ``d_w f`` from the loss's proximal operator (for real labels ``sum_y`` is an
integral over ``y``). See docs/theory.md, section "The general engine".

Quadrature
----------
All nodes are evaluated at once. Binary labels: for each label, composite Gauss-Legendre panels
over ``w`` in ``[-X sqrt q, X sqrt q]`` (``X = 10`` standard deviations; the Gaussian tail beyond
is below 1e-22), geometrically graded towards ``w = 0`` down to the loss's scale ``FINE``, with
extra panel edges at the values of ``w`` where the proximal point enters or leaves a kink of the
loss, so that every panel integrates an analytic function (spectral accuracy also for hinge).
Real labels (gaussian channel): the outer variable is the residual ``r = y - w`` (panels as above,
with kink edges when the loss depends on ``y - z`` only), and ``w`` given ``r`` is integrated by
Gauss-Hermite (exact for losses of ``y - z``: the integrand is then linear in ``w``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from replica_mlm.theory.sides.channels import Channel, hermite
from replica_mlm.theory.sides.losses import Loss

#: half-width of the integration range in standard deviations
X = 10.0
#: finest panel width near w = 0, in units of the loss's natural scale (fields of order one)
FINE = 1.0 / 16.0
#: Gauss-Legendre nodes per panel (the default; doubled in the accuracy checks)
ORDER = 16
#: Gauss-Hermite nodes over w given r (real labels) for losses that are not functions of y - z
INNER = 48


@cache
def _legendre(order: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(order)


def panels(scale: float, breaks, order: int = ORDER) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``x`` and weights ``c`` with ``sum c g(x) = E g(scale * xi)``, ``xi ~ N(0, 1)``.

    Composite Gauss-Legendre on ``[-X, X]`` (standardised) graded geometrically towards 0 down
    to ``FINE / scale``, with extra edges at ``breaks / scale`` (NaN breaks are ignored).
    """
    levels = int(np.clip(np.ceil(np.log2(X * scale / FINE)), 0, 60))
    extra = np.asarray([b for b in np.ravel(breaks) if np.isfinite(b)], dtype=float) / scale
    extra = extra[np.abs(extra) < X]
    if not extra.size:  # the standardised rule depends on the number of levels alone
        xi, weight = _standard_panels(levels, order)
        return scale * xi, weight
    xi, weight = _standardised(levels, extra, order)
    return scale * xi, weight


@cache
def _standard_panels(levels: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """The standardised nodes and weights of :func:`panels` without extra edges (read-only)."""
    xi, weight = _standardised(levels, np.zeros(0), order)
    xi.setflags(write=False)
    weight.setflags(write=False)
    return xi, weight


def _standardised(levels: int, extra: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``xi`` and weights of ``E g(xi)`` on ``[-X, X]``: panels graded over ``levels`` halvings
    towards 0, with extra edges at ``extra``."""
    graded = X * 2.0 ** -np.arange(levels + 1)
    edges = np.unique(np.concatenate([[0.0], graded, -graded, extra]))
    keep = np.concatenate([[True], np.diff(edges) > 1e-13 * X])
    edges = edges[keep]
    t, gw = _legendre(order)
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    xi = (mid[:, None] + half[:, None] * t).ravel()
    weight = (half[:, None] * gw).ravel() * np.exp(-xi * xi / 2) / np.sqrt(2 * np.pi)
    return xi, weight


@dataclass(frozen=True)
class Nodes:
    """Quadrature nodes of the channel side at one (V, q, m): labels, fields and weights.

    ``cz`` and ``cdz`` are the weights of Z- and dZ-integrals (quadrature weight times Z, resp.
    times dZ/dmu, or the score for real labels).
    """

    y: np.ndarray
    w: np.ndarray
    cz: np.ndarray
    cdz: np.ndarray


def nodes(loss: Loss, channel: Channel, *, V: float, q: float, m: float, rho: float, noise: float,
          order: int = ORDER, at: str = "prox") -> Nodes:
    """Nodes for the integrals over (xi, y); ``at="prox"`` puts panel edges at the proximal
    operator's kink thresholds (hats, train loss), ``at="loss"`` at the loss's own kinks (test loss).
    """
    v = max(rho - m * m / q, 0.0)
    if channel.labels == "binary":
        ys, ws, czs, cdzs = [], [], [], []
        for label in (1.0, -1.0):
            lab = np.array([label])
            breaks = (loss.thresholds(lab, V) if at == "prox" else loss.kink_points(lab))
            wv, c = panels(np.sqrt(q), [b[0] for b in breaks], order)
            zv, dz = channel.partition(label, (m / q) * wv, v, noise)
            ys.append(np.full(wv.shape, label))
            ws.append(wv)
            czs.append(c * zv)
            cdzs.append(c * dz)
        return Nodes(np.concatenate(ys), np.concatenate(ws), np.concatenate(czs), np.concatenate(cdzs))
    # real labels: y | xi ~ N(mu, var_y) with var_y from the channel's Z (sympy); r = y - w
    var_fn, score_fn = channel._numeric["var"], channel._numeric["score"]
    var_y = float(var_fn(0.0, v, noise))
    var_r = m * m / q - 2 * m + q + var_y
    cov = m - q  # Cov(w, r)
    shift = loss.shift_invariant
    if shift:
        zero = np.array([0.0])
        breaks = loss.thresholds(zero, V) if at == "prox" else loss.kink_points(zero)
        breaks = [-b[0] for b in breaks]  # at y = 0, r = -w
    else:
        breaks = []
    rv, c = panels(np.sqrt(var_r), breaks, order)
    inner_x, inner_w = hermite(4 if shift else INNER)
    cond_mean = cov / var_r * rv
    cond_sd = np.sqrt(max(q - cov * cov / var_r, 0.0))
    wv = cond_mean[:, None] + cond_sd * inner_x
    yv = wv + rv[:, None]
    weight = c[:, None] * inner_w
    muv = (m / q) * wv
    score = np.broadcast_to(score_fn(yv, muv, v, noise), yv.shape)
    return Nodes(yv.ravel(), wv.ravel(), weight.ravel(), (weight * score).ravel())


def hats(loss: Loss, channel: Channel, *, alpha: float, V: float, q: float, m: float, rho: float,
         noise: float, order: int = ORDER) -> dict[str, float]:
    """``m_hat, q_hat, V_hat`` and the mean training loss at ``(V, q, m)``."""
    nd = nodes(loss, channel, V=V, q=q, m=m, rho=rho, noise=noise, order=order)
    px = loss.prox(nd.y, nd.w, V)
    return {
        "m_hat": alpha * float(np.dot(nd.cdz, px.f)),
        "q_hat": alpha * float(np.dot(nd.cz, px.f * px.f)),
        "V_hat": -alpha * float(np.dot(nd.cz, px.dfdw)),
        "train_loss": float(np.dot(nd.cz, loss.value(nd.y, px.z))),
    }


def test_loss(loss: Loss, channel: Channel, *, q: float, m: float, rho: float, noise: float,
              order: int = ORDER) -> float:
    """``E loss(y, w_hat . x)`` on a fresh sample: (nu, lambda) Gaussian, Var lambda = q, Cov = m.

    At ``q <= 0`` (the student ``w_hat = 0``: ``lambda = 0`` surely) it is ``E_y loss(y, 0)`` over the
    labels' marginal, ``Z(y; 0, rho)``.
    """
    if q <= 0.0:
        if channel.labels == "binary":
            return float(sum(channel.partition(label, np.zeros(1), rho, noise)[0][0]
                             * loss.value(np.array([label]), np.zeros(1))[0] for label in (1.0, -1.0)))
        zero = np.array([0.0])
        breaks = [-b[0] for b in loss.kink_points(zero)] if loss.shift_invariant else []
        yv, c = panels(np.sqrt(float(channel._numeric["var"](0.0, rho, noise))), breaks, order)
        return float(np.dot(c, loss.value(yv, np.zeros_like(yv))))
    nd = nodes(loss, channel, V=1.0, q=q, m=m, rho=rho, noise=noise, order=order, at="loss")
    return float(np.dot(nd.cz, loss.value(nd.y, nd.w)))


def error(channel: Channel, *, q: float, m: float, rho: float, noise: float,
          order: int = ORDER) -> float:
    """The channel's natural error: its closed form, else ``P(y != sign(w_hat . x))`` by quadrature."""
    closed = channel.closed_error(rho, noise, m, q)
    if closed is not None:
        return closed
    if channel.labels != "binary":
        raise ValueError(f"channel {channel.name!r} has no natural error")
    total = 0.0
    v = max(rho - m * m / q, 0.0)
    for label in (1.0, -1.0):
        wv, c = panels(np.sqrt(q), [], order)
        zv, _ = channel.partition(label, (m / q) * wv, v, noise)
        total += float(np.dot(c * zv, (label * wv < 0)))
    return total


@dataclass(frozen=True)
class GaussianCovariates:
    """The channel side of Gaussian covariates whose labels come from a channel
    (:class:`.interfaces.ChannelSide`): the integrals :func:`hats`, :func:`error` and
    :func:`test_loss` of one (loss, channel, rho, noise)."""

    loss: Loss
    channel: Channel
    rho: float
    noise: float
    order: int = ORDER

    @property
    def name(self) -> str:
        return self.channel.name

    def hats(self, alpha: float, V: float, q: float, m: float) -> dict[str, float]:
        return hats(self.loss, self.channel, alpha=alpha, V=V, q=q, m=m, rho=self.rho, noise=self.noise,
                    order=self.order)

    def error(self, q: float, m: float) -> float:
        return error(self.channel, q=q, m=m, rho=self.rho, noise=self.noise, order=self.order)

    def test_loss(self, q: float, m: float) -> float:
        return test_loss(self.loss, self.channel, q=q, m=m, rho=self.rho, noise=self.noise, order=self.order)
