"""The replica theory of ridge regression on a C-cluster Gaussian mixture with class-valued targets.

docs/multiclass.md, section "The square loss on the mixture". The data: a class ``c`` with
probability ``pi_c``, inputs ``x = mu_c + S^{1/2} g`` in R^d, and A scalar targets ``t_c`` (one per
output, a function of the class only); the estimator is ridge regression of each output,
``sum_mu (t - w . x_mu)^2 / 2 + (lam d / 2) |w|^2`` on ``n = alpha d`` samples (no intercept; the
normalisation of the scalar theory, whose ``p`` is here ``d``). Vector outputs decouple exactly into
one such problem per output.

The channel side is :mod:`.mixture_square` (sides, closed form) and the prior side the ridge prior
on the modes of ``S`` (eigenvalues ``omega_k``, mean modes ``mu_{c,k}``; :func:`.prior.ridge_matrices`
at one output with the "teacher" ``theta_{k,c} = mu_{c,k} / omega_k``). Both sides are linear in
``m`` and ``q`` once ``V`` is fixed, and ``V`` is shared by all outputs, so the saddle point reduces
to one scalar equation

    V = (1/d) sum_k omega_k G_k,   G_k = 1 / (lam + omega_k V_hat),   V_hat = alpha / (1 + V),

solved by the fixed-point driver (:func:`.fixed_point.solve`, hybr on ``log V``), after which

    m = (I + V_hat B Pi)^{-1} V_hat B Pi t,   B = sum_k G_k mu_k mu_k^T,   Pi = diag(pi),
    q = (b + a e) / (1 - a),   b = sum_k omega_k G_k^2 (mu_k . m_hat)^2,
    a = alpha (1/d) sum_k omega_k^2 G_k^2 / (1 + V)^2,

with ``e`` and ``m_hat`` of :mod:`.mixture_square`. The point is accepted only if plugging it into
the channel side and the generic prior (:func:`.prior.ridge_matrices`, a second route) returns it
to :data:`TOL` relative: that residual is what ``converged`` states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.theory.sides import mixture_square as side
from replica_mlm.theory.sides import prior
from replica_mlm.theory.solvers import fixed_point

#: largest relative violation of the saddle-point equations accepted
TOL = 1e-10


class MixtureRidgeTheory:
    """What the theory reads from the mixture: the modes of ``S``, the class means per mode, the
    weights and the targets (C, A). Built once, solved at many ``alpha``."""

    def __init__(self, *, weights, means, covariance, targets) -> None:
        S = _checks.positive_definite(covariance, "covariance")
        means = _checks.finite_array(means, "means", ndim=2)
        weights = _checks.finite_array(weights, "weights", ndim=1)
        targets = _checks.finite_array(targets, "targets")
        C, d = means.shape
        if d != S.shape[0] or weights.shape != (C,):
            raise ValueError(f"means must be (C, d) with d = {S.shape[0]} and weights (C,); got means "
                             f"{means.shape}, weights {weights.shape}")
        if np.any(weights <= 0) or abs(weights.sum() - 1.0) > 1e-12:
            raise ValueError(f"weights must be > 0 and sum to 1, got {weights.tolist()}")
        if targets.ndim not in (1, 2) or targets.shape[0] != C:
            raise ValueError(f"targets must have shape ({C},) or ({C}, A), got {targets.shape}")
        self.omega, u = np.linalg.eigh(S)
        self.mean_modes = means @ u  # (C, d): mu_{c,k}
        self.weights = weights
        self.targets = targets if targets.ndim == 2 else targets[:, None]
        self.d, self.C = d, C

    def gaussian_equivalent(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """In the eigenbasis of ``S``: the total covariance ``S + sum_c pi_c mu_c mu_c^T``, the
        best linear predictor ``beta = Sigma^{-1} sum_c pi_c mu_c t_c`` (d, A) and its residual
        variance ``sum_c pi_c t_c^2 - c . beta`` (A,): the Gaussian data with the same second
        moments (for centred means and targets)."""
        mu, pi, t = self.mean_modes, self.weights, self.targets
        sigma = np.diag(self.omega) + (mu.T * pi) @ mu
        cross = (mu.T * pi) @ t
        beta = np.linalg.solve(sigma, cross)
        return sigma, beta, pi @ t**2 - np.sum(cross * beta, axis=0)


@dataclass(frozen=True)
class MixtureRidgePoint:
    """The saddle point of ridge on the mixture at one ``(alpha, lam)``.

    Attributes
    ----------
    alpha, lam : float
        ``n / d`` and the ridge (penalty ``(lam d / 2) |w|^2``).
    test_loss, train_loss : float
        Summed over the outputs: ``sum_a E (t_a - w_a . x)^2 / 2`` on a fresh sample, and the
        training loss per sample (the same sum).
    test_losses : ndarray (A,)
        Per output.
    V, V_hat : float
        Shared by all outputs.
    q : ndarray (A,)
        ``w_a^T S w_a``.
    m : ndarray (C, A)
        ``w_a . mu_c``.
    residual : float
        Largest relative violation of the saddle-point equations (channel side and generic prior).
    converged : bool
        ``residual <= TOL``.
    """

    alpha: float
    lam: float
    test_loss: float
    train_loss: float
    test_losses: np.ndarray = field(repr=False)
    V: float = 0.0
    V_hat: float = 0.0
    q: np.ndarray = field(default=None, repr=False)
    m: np.ndarray = field(default=None, repr=False)
    residual: float = math.inf
    converged: bool = False

    def to_frame(self):
        """A pandas DataFrame, one row per output: output, alpha, lam, test_loss, q, V, residual,
        converged."""
        import pandas as pd

        return pd.DataFrame({"output": np.arange(self.q.size), "alpha": self.alpha, "lam": self.lam,
                             "test_loss": self.test_losses, "q": self.q, "V": self.V,
                             "residual": self.residual, "converged": self.converged})


def _V_image(th: MixtureRidgeTheory, alpha: float, lam: float, V: float) -> float:
    """The prior's image of ``V``: ``(1/d) sum_k omega_k / (lam + omega_k alpha / (1 + V))``."""
    return float(np.mean(th.omega / (lam + th.omega * alpha / (1.0 + V))))


def _given_V(th: MixtureRidgeTheory, alpha: float, lam: float, V: float) -> dict:
    """``m, q`` (and the hats) in closed form at a given ``V``; ``V_new`` the prior's image of V."""
    V_hat = alpha / (1.0 + V)
    G = 1.0 / (lam + th.omega * V_hat)
    B = (th.mean_modes * G) @ th.mean_modes.T
    BPi = B * th.weights
    m = np.linalg.solve(np.eye(th.C) + V_hat * BPi, V_hat * BPi @ th.targets)
    m_hat = V_hat * th.weights[:, None] * (th.targets - m)
    proj = th.mean_modes.T @ m_hat  # (d, A)
    b = (th.omega * G**2) @ proj**2
    a = alpha * float(np.mean(th.omega**2 * G**2)) / (1.0 + V) ** 2
    if not a < 1.0:
        raise ValueError(f"no ridge saddle point at alpha = {alpha:g}, lam = {lam:g}: the variance "
                         f"equation's slope is {a:.6g} >= 1")
    e = side.class_error(m=m, targets=th.targets, weights=th.weights)
    q = (b + a * e) / (1.0 - a)
    return {"V_new": float(np.mean(th.omega * G)), "m": m, "q": q}


def _residual(th: MixtureRidgeTheory, alpha: float, lam: float, V: float, m, q) -> float:
    """Largest relative violation when ``(V, q, m)`` go through the channel side and the generic
    prior of :func:`.prior.ridge_matrices`, output by output."""
    h = side.hats(alpha=alpha, V=V, q=q, m=m, targets=th.targets, weights=th.weights)
    theta = th.mean_modes.T / th.omega[:, None]
    worst = 0.0
    for a in range(th.targets.shape[1]):
        V2, Q2, M2, _, _ = prior.ridge_matrices(th.omega, theta, th.d, lam, np.array([[h["V_hat"]]]),
                                                np.array([[h["q_hat"][a]]]), h["m_hat"][:, a][None, :])
        scale_m = max(float(np.max(np.abs(m[:, a]))), float(np.max(np.abs(th.targets[:, a]))), 1e-300)
        worst = max(worst, abs(V2[0, 0] - V) / V, abs(Q2[0, 0] - q[a]) / max(q[a], 1e-300),
                    float(np.max(np.abs(M2[0] - m[:, a]))) / scale_m)
    return worst


def solve_point(theory: MixtureRidgeTheory, *, alpha: float, lam: float,
                init: float | None = None) -> MixtureRidgePoint:
    """The saddle point at one ``(alpha, lam)`` (``init``: a start for ``V``, e.g. the previous
    point's). :class:`~replica_mlm._base.errors.ConvergenceError` if the residual stays above :data:`TOL`."""
    from replica_mlm._base.errors import ConvergenceError

    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.positive(lam, "lam")
    th = theory
    if init is None:
        init = float(np.mean(th.omega / (lam + th.omega * alpha)))

    def image(x):
        return np.array([math.log(_V_image(th, alpha, lam, math.exp(float(x[0]))))])

    def residual(x):
        V = math.exp(float(x[0]))
        pt = _given_V(th, alpha, lam, V)
        return _residual(th, alpha, lam, V, pt["m"], pt["q"]), {"V": V, **pt}

    try:
        fp = fixed_point.solve(image, residual, [math.log(init)], tol=TOL, failures=(ValueError,))
    except fixed_point.FixedPointFailure as exc:
        raise ConvergenceError(f"ridge on the mixture did not converge at alpha = {alpha:g}, lam = "
                               f"{lam:g} ({exc.reason})", last={"V": math.exp(float(exc.best[0]))},
                               residual=exc.residual, iterations=0) from None
    pt = fp.point
    V, m, q = pt["V"], pt["m"], pt["q"]
    h = side.hats(alpha=alpha, V=V, q=q, m=m, targets=th.targets, weights=th.weights)
    tl = side.test_loss(q=q, m=m, targets=th.targets, weights=th.weights)
    return MixtureRidgePoint(alpha=alpha, lam=lam, test_loss=float(np.sum(tl)),
                             train_loss=float(np.sum(h["train_loss"])), test_losses=tl, V=V,
                             V_hat=float(h["V_hat"]), q=q, m=m, residual=fp.residual,
                             converged=fp.residual <= TOL)


def mixture_ridge_curve(theory: MixtureRidgeTheory, *, alpha, lam: float) -> list[MixtureRidgePoint]:
    """:func:`solve_point` at each ``alpha`` of a grid, each started from the previous ``V``."""
    alphas = _checks.grid(alpha, "alpha")
    out, init = [], None
    for a in alphas:
        pt = solve_point(theory, alpha=float(a), lam=lam, init=init)
        out.append(pt)
        init = pt.V
    return out


__all__ = ["MixtureRidgePoint", "MixtureRidgeTheory", "mixture_ridge_curve", "solve_point"]
