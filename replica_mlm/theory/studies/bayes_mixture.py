"""The Bayes-optimal error on a site's two-cluster Gaussian mixture, in closed form.

docs/bayes_optimal.md, section "On the Gaussian mixture". An Ising site's mixture (``task.mixture``,
docs/discrete.md, section "The site as a Gaussian mixture") is ``x | y ~ N(y mu, S)`` with
``y = +-1`` (clusters at ``+-mu``, ``mu = (mu_0 - mu_1) / 2``, as in :mod:`.mixture_engine`). As a
model of the site with logit direction ``w`` it reads ``mu = S w / 2``, and its joint likelihood is

    log P(x, y | w) = y w . x / 2 - w^T S w / 8 + (terms free of w),

quadratic in ``w``. With the isotropic prior ``w ~ N(0, (tau / p) I)`` of :func:`.bayes_optimal` the
posterior is therefore exactly Gaussian at every ``n``: precision ``(p / tau) I + n S / 4``, mean
``precision^{-1} sum_i y_i x_i / 2``. In the eigenbasis of ``S`` (eigenvalues ``s_k``) every mode
is a scalar Gaussian channel of signal-to-noise ``n s_k / 4`` about the mixture's Bayes direction
``theta = 2 S^{-1} mu``, so the overlaps follow without a fixed point (``hat = alpha / 4``,
``g_k = 1 / (1 / tau + hat s_k)``):

* ``E w_hat_k = 2 hat mu_k g_k`` and ``Var w_hat_k = hat s_k g_k^2 / p`` over the data;
* ``m = w_hat . mu``, ``q = w_hat^T S w_hat`` (data-averaged; they concentrate), the logit's
  posterior variance ``V = sum_k s_k g_k / p``;
* the Bayes predictive law of a fresh label. Because the mixture's likelihood of the fresh input
  ``x`` itself depends on ``w``, ``P(y | x, data) = E_w P(x, y | w) / E_w P(x | w)`` (``E_w`` over the
  posterior) and not ``E_w P(y | x, w)``: the Gaussian integral gives exactly
  ``sigmoid(y x . w_hat')`` with ``w_hat'`` the posterior mean whose precision counts ``n + 1``
  samples (the quadratic term of the fresh sample is the same for both labels), so the logit's
  posterior variance ``V`` does not smear the prediction. As ``n -> infinity``, ``w_hat' -> w_hat``:
  the classification error is ``Phi(-m / sqrt q)`` (:func:`.mixture_side.error`) and the predictive
  log-loss is the logistic loss of ``w_hat`` on the mixture (:func:`.mixture_side.test_loss`, the
  same function as the mixture theory's ``test_loss``); its ``residual`` is the relative change when
  the Gauss-Legendre nodes are doubled (doubled again until it is at most :data:`TOL`; everything
  else is closed form);
* the estimation error ``E |w_hat - w*|^2`` against the task's actual teacher ``w*`` (the mixture's
  ``teacher``, not ``theta``), with :func:`.mixture_side.estimation_error` (the same mode sums as
  the ridge fit of the mixture theory with ``lam = 1 / tau``, ``V_hat = q_hat = hat``,
  ``m_hat = 2 hat``).
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm.theory.sides import energetic, losses, mixture_side
from replica_mlm.theory.solvers.mixture_engine import MixtureTheory

__all__ = ["ORDER_MAX", "TOL", "mixture_point", "mixture_theory"]

#: relative change of the predictive log-loss between two successive outer orders for converged=True
TOL = 1e-10
#: the largest outer order tried (Gauss-Legendre nodes per panel)
ORDER_MAX = 1024


def mixture_theory(task) -> MixtureTheory:
    """The two-cluster mixture of ``task`` (its ``task.mixture``) as the theory reads it; a clear
    ValueError for a task without a mixture or with more than two classes."""
    mixture = getattr(task, "mixture", None)
    if mixture is None:
        raise ValueError("theory='mixture' needs a task with a Gaussian mixture (task.mixture, e.g. an "
                         f"Ising site of model.masked_site(i)); got {type(task).__name__}")
    if mixture.K != 2:
        raise ValueError(f"theory='mixture' of the Bayes-optimal error takes a two-class (Ising) site; this "
                         f"site has K = {mixture.K} classes (multi-class sites are refused by "
                         "theory='gaussian' as well)")
    return MixtureTheory(mixture)


def mixture_point(theory: MixtureTheory, alpha: float, tau: float, *, order: int = energetic.ORDER) -> dict:
    """The Bayes-optimal point at ``alpha`` under the prior ``N(0, (tau / p) I)`` (module docstring).

    Returns a dict with ``eg``, ``test_loss``, ``estimation_error`` (on the task's teacher),
    ``prior_mmse`` (``sum_k`` of the posterior variances, the prior-averaged estimation error),
    ``m``, ``q``, ``V``, ``q_hat`` (``alpha / 4``), ``rho`` (``mu^T S^{-1} mu``), ``bayes_error``
    (the error as ``alpha -> infinity``, ``Phi(-sqrt(theta^T S theta) / 2)``), ``residual`` (of the
    predictive log-loss's quadrature), ``order`` (the outer order used) and ``evaluations``.
    """
    s, mu, p = theory.omega, theory.mu_modes, theory.p
    lam, hat = 1.0 / tau, alpha / 4.0
    g = 1.0 / (lam + hat * s)
    mean = 2.0 * hat * mu * g
    var = hat * s * g * g / p
    m = float(np.sum(mean * mu))
    q = float(np.sum(s * (mean * mean + var)))
    V = float(np.sum(s * g) / p)
    logistic = losses.resolve("logistic")
    coarse = mixture_side.test_loss(logistic, q=q, m=m, weights=theory.weights, order=order)
    evaluations = 1
    while True:  # double the nodes until two successive orders agree to TOL (or ORDER_MAX)
        loss = mixture_side.test_loss(logistic, q=q, m=m, weights=theory.weights, order=2 * order)
        evaluations += 1
        if not (math.isfinite(loss) and math.isfinite(coarse)):
            raise FloatingPointError(f"the predictive log-loss is not finite at alpha = {alpha:g} "
                                     f"(m = {m:.3g}, q = {q:.3g}, V = {V:.3g})")
        residual = abs(loss - coarse) / abs(loss) if loss != 0.0 else abs(coarse)
        if residual <= TOL or 2 * order >= ORDER_MAX:
            break
        coarse, order = loss, 2 * order
    rho = float(np.sum(mu * mu / s))
    est = mixture_side.estimation_error(s, mu, theory.target_modes, p, lam, hat, hat, 2.0 * hat)
    return {
        "eg": mixture_side.error(q=q, m=m), "test_loss": loss, "estimation_error": est,
        "prior_mmse": float(np.sum(g) / p), "m": m, "q": q, "V": V, "q_hat": hat, "rho": rho,
        "bayes_error": mixture_side.error(q=4.0 * rho, m=2.0 * rho),
        "residual": residual, "order": 2 * order, "evaluations": evaluations,
    }
