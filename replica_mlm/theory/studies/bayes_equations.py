"""The Bayes-optimal saddle-point equations, for reading (docs/bayes_optimal.md, "The equations").

The channel's ``P_out``, ``Z`` and ``dZ`` are those of :class:`~replica_mlm.theory.sides.channels.Channel`
(the objects the general engine uses), the prior side the per-mode summands of
:func:`replica_mlm.theory.symbolic.bayes_potentials.derive`, shown for a finite instance
(bulk weight ``1/p``, prior teacher weight ``tau / p`` per mode ``omega_k``).
"""

from __future__ import annotations

import sympy as sp

from replica_mlm.theory.sides import channels
from replica_mlm.theory.symbolic import bayes_potentials
from replica_mlm.theory.symbolic import potentials as P


def channel_partition_equations(channel: channels.Channel) -> dict[str, sp.Eq]:
    """The channel's ``P_out(y | nu)``, its partition ``Z(y; mu, v)`` and ``dZ / d mu`` (closed forms
    where the channel has them, else the Gaussian integrals), as printed by both the engine's and
    the Bayes-optimal equations."""
    y, mu, v, nu = channels.y, channels.mu, channels.v, channels.nu
    Z = sp.Function("Z")(y, mu, v)
    out = {"P_out": sp.Eq(sp.Function("P_out")(y, nu), channel.p_out)}
    if channel.z_closed is not None:
        out["Z"] = sp.Eq(Z, channel.z_closed)
        out["dZ"] = sp.Eq(sp.Derivative(Z, mu), channel.dz_closed)
    else:
        gauss = sp.exp(-((nu - mu) ** 2) / (2 * v)) / sp.sqrt(2 * sp.pi * v)
        out["Z"] = sp.Eq(Z, sp.Integral(gauss * channel.p_out, (nu, -sp.oo, sp.oo)))
        out["dZ"] = sp.Eq(sp.Derivative(Z, mu),
                          sp.Integral(gauss * sp.diff(channel.p_out, nu), (nu, -sp.oo, sp.oo)))
    return out


def bayes_equations(channel=None) -> dict[str, sp.Eq]:
    """Keys ``"P_out", "Z", "dZ", "fields", "q_hat", "q", "V", "m", "estimation_error"``."""
    channel = channels.resolve(channel)
    y, mu, v = channels.y, channels.mu, channels.v
    xi = sp.Symbol("xi", real=True)
    tau = sp.Symbol("tau", positive=True)
    p = sp.Symbol("p", positive=True, integer=True)
    k = sp.Symbol("k", integer=True, positive=True)
    omega_k = sp.IndexedBase(r"\omega")[k]
    finite = {P.b: 1 / p, P.c: tau / p, P.omega: omega_k}

    def mode_sum(expr):
        return sp.Sum(sp.factor(expr.subs(finite)), (k, 1, p))

    out = channel_partition_equations(channel)
    out["fields"] = sp.Eq(sp.Tuple(mu, v), sp.Tuple(sp.sqrt(P.q) * xi, P.rho - P.q))
    dxi = sp.exp(-(xi**2) / 2) / sp.sqrt(2 * sp.pi)
    integrand = bayes_potentials.channel_hat()
    if channel.labels == "binary":
        inner = integrand.subs(y, 1) + integrand.subs(y, -1)
    else:
        inner = sp.Integral(integrand, (y, -sp.oo, sp.oo))
    out["q_hat"] = sp.Eq(P.q_hat, P.alpha * sp.Integral(dxi * inner, (xi, -sp.oo, sp.oo)))
    eqs = bayes_potentials.derive()
    out["q"] = sp.Eq(P.q, mode_sum(eqs.q))
    out["V"] = sp.Eq(P.V, mode_sum(eqs.V))
    out["m"] = sp.Eq(P.m, P.q)
    out["estimation_error"] = sp.Eq(sp.Symbol(r"E|\hat{w} - w^*|^2"), mode_sum(eqs.estimation))
    return out
