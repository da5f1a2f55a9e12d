"""The Bayes-optimal saddle point, derived by sympy from the prior's and the channel's free entropies.

With the prior the teacher was drawn from, the Nishimori identities hold at the saddle point:
the student's overlap with the teacher equals its self-overlap (``m = q``) and the posterior
variance of the field is ``V = rho - q``, so one overlap ``q`` and its conjugate ``q_hat`` remain
(docs/bayes_optimal.md, section "The equations"). The free entropy is

    Phi = extr_{q, q_hat}  - q q_hat / 2 + Psi_prior(q_hat) + alpha Psi_out(q),

* ``Psi_prior = sum_k psi_k``: per spectral mode ``k`` of Sigma (eigenvalue ``omega``, bulk
  weight ``b``) the teacher's coordinate has the Gaussian prior ``N(0, c)``; seen through
  Gaussian noise at signal-to-noise ratio ``r = q_hat omega / b`` its scalar free entropy is
  ``psi_k = (b / 2) (r c - log(1 + r c))`` (:func:`prior_mode`);
* ``Psi_out(q) = E_xi sum_y Z log Z`` with ``Z = Z(y; sqrt(q) xi, rho - q)`` the channel's
  partition function (:class:`~replica_mlm.theory.sides.channels.Channel`, the same object the
  general engine uses); ``d Phi / d q = 0`` gives, after an integration by parts in ``xi``,
  ``q_hat = alpha E_xi sum_y (dZ/dmu)^2 / Z`` (:func:`channel_hat`; checked against the direct
  derivative for the gaussian channel in the tests).

:func:`derive` differentiates ``Phi`` in ``q_hat`` and returns the per-mode summands of ``q``,
of ``V = rho - q`` (each computed directly, so that neither loses digits when the other is
small) and of the estimation error ``E |w_hat - w*|^2``; :func:`compiled` lambdifies them once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from replica_mlm.theory.symbolic import potentials as P

#: the per-mode signal-to-noise ratio of the scalar Gaussian channel seen by the prior
r = sp.Symbol("r", positive=True)


def coupling() -> sp.Expr:
    """The bilinear term ``- q q_hat / 2`` of the Bayes-optimal free entropy."""
    return -P.q * P.q_hat / 2


def scalar_free_entropy() -> sp.Expr:
    """Free entropy of ``Y = sqrt(r) X + Z``, ``X ~ N(0, c)``: ``(r c - log(1 + r c)) / 2``.

    Its derivative in ``r`` is half the overlap ``E[X E[X | Y]] = r c^2 / (1 + r c)``.
    """
    return (r * P.c - sp.log(1 + r * P.c)) / 2


def prior_mode() -> sp.Expr:
    """Per-mode prior free entropy ``psi_k = b psi(r = q_hat omega / b)``."""
    return P.b * scalar_free_entropy().subs(r, P.q_hat * P.omega / P.b)


@dataclass(frozen=True)
class BayesEquations:
    """The stationarity conditions of the Bayes-optimal free entropy.

    Attributes
    ----------
    q, V, estimation : sympy.Expr
        Per-mode summands in ``(omega, b, c, q_hat)`` of the field overlap ``q``, of the posterior
        field variance ``V = rho - q`` and of ``E |w_hat - w*|^2``.
    """

    q: sp.Expr
    V: sp.Expr
    estimation: sp.Expr


@cache
def derive() -> BayesEquations:
    """``d Phi / d q_hat = 0`` solved for ``q``, per mode; ``V`` and the estimation error with it.

    The teacher's field in mode k has variance ``c omega``; the posterior mean's field overlap
    per mode is the summand of ``q``, so ``c omega - q_mode`` is that of ``V`` and
    ``c - q_mode / omega`` that of the estimation error (the posterior variance of the
    coordinate). Checked here: ``V`` is positive per mode and the three are consistent.
    """
    placeholder = sp.Dummy("S")
    (sol,) = sp.solve(sp.diff(coupling(), P.q_hat) + placeholder, P.q)
    factor = sp.simplify(sol / placeholder)
    if not factor.is_number:
        raise AssertionError(f"stationarity in q_hat is not linear in the mode sum: {sol}")
    q_mode = sp.factor(sp.simplify(factor * sp.diff(prior_mode(), P.q_hat)))
    V_mode = sp.factor(sp.simplify(P.c * P.omega - q_mode))
    est_mode = sp.factor(sp.simplify(P.c - q_mode / P.omega))
    if sp.simplify(V_mode - P.omega * est_mode) != 0:
        raise AssertionError("posterior field variance differs from omega times the coordinate's")
    return BayesEquations(q=q_mode, V=V_mode, estimation=est_mode)


#: the channel's partition function and its mu-derivative at one node, as plain symbols
Z_node, dZ_node = sp.symbols("Z dZ", positive=True)


def hat_integrand() -> sp.Expr:
    """The integrand of ``q_hat / alpha`` at one node: ``dZ^2 / Z`` (the one place it is written)."""
    return dZ_node**2 / Z_node


def channel_hat() -> sp.Expr:
    """:func:`hat_integrand` in the channel's symbols, ``(dZ/dmu)^2 / Z(y, mu, v)``, for printing."""
    from replica_mlm.theory.symbolic.expressions import mu, v, y

    Z = sp.Function("Z")(y, mu, v)
    return hat_integrand().subs({dZ_node: sp.Derivative(Z, mu), Z_node: Z}, simultaneous=True)


@cache
def compiled_hat_integrand():
    """:func:`hat_integrand` as a numpy function of ``(Z, dZ)``, lambdified once."""
    return sp.lambdify((Z_node, dZ_node), hat_integrand(), "numpy")


@cache
def compiled():
    """``(q, V, estimation)`` per-mode summands as one numpy function of
    ``(omega, b, c, q_hat)``, lambdified once."""
    eqs = derive()
    return sp.lambdify((P.omega, P.b, P.c, P.q_hat), [eqs.q, eqs.V, eqs.estimation], "numpy")
