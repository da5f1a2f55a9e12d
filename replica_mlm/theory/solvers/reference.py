"""A slow, independent reference solver of the general saddle point, written the way public
replica codes are: damped iteration on (V, q, m), every channel integral by adaptive
``scipy.integrate.quad`` and every proximal point by ``scipy.optimize.minimize_scalar``.

It shares no code with the engine (:mod:`.engine`): the prior side is typed from the closed forms
of docs/theory.md (section 'The general engine'), the channel side from the definitions

    z*(y, w, V) = argmin_z (z - w)^2 / (2V) + loss(y, z),  f = (z* - w) / V,
    d_w f = (1 / (1 + V loss''(y, z*)) - 1) / V,
    m_hat = alpha E_xi sum_y dZ f,  q_hat = alpha E_xi sum_y Z f^2,  V_hat = -alpha E_xi sum_y Z d_w f,

with w = sqrt(q) xi, mu = (m / sqrt(q)) xi, v = rho - m^2 / q. Binary channels only ("sign":
Z(y; mu, v) = Phi(y mu / sqrt(v + sigma^2)); "logit": Z and dZ by inner ``quad``). Losses
"logistic" and "hinge". Used by ``benchmarks/bench_erm.py`` as the baseline and by the tests as an
independent check of the engine.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import integrate, optimize, special

QUAD = {"epsabs": 1e-11, "epsrel": 1e-10, "limit": 200}


def _loss(name, y, z):
    if name == "logistic":
        return np.logaddexp(0.0, -y * z)
    return max(0.0, 1.0 - y * z)


def _loss2(name, y, z):
    if name == "logistic":
        s = special.expit(y * z)
        return s * (1.0 - s)
    return 0.0


def prox(name: str, y: float, w: float, V: float) -> tuple[float, float]:
    """(f, d_w f) at one point, the proximal point by Brent's method (minimize_scalar)."""
    res = optimize.minimize_scalar(lambda z: (z - w) ** 2 / (2 * V) + _loss(name, y, z),
                                   bracket=(w - 1.0, w + V + 1.0), method="brent",
                                   options={"xtol": 1e-12})
    z = res.x
    if name == "hinge" and 1.0 - V <= y * w <= 1.0:  # the subgradient condition pins z* = y
        z, dwf = y, -1.0 / V
    else:
        dwf = (1.0 / (1.0 + V * _loss2(name, y, z)) - 1.0) / V
    return (z - w) / V, dwf


def partition(channel: str, y: float, mu: float, v: float, noise: float) -> tuple[float, float]:
    """Z(y; mu, v) and dZ / d mu."""
    if channel == "sign":
        s = math.sqrt(v + noise)
        return special.ndtr(y * mu / s), y * math.exp(-0.5 * (mu / s) ** 2) / (s * math.sqrt(2 * math.pi))
    sd = math.sqrt(v)
    if sd == 0.0:
        return float(special.expit(y * mu)), float(y * special.expit(mu) * special.expit(-mu))

    def dens(t):
        return math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)

    z = integrate.quad(lambda t: dens(t) * special.expit(y * (mu + sd * t)), -np.inf, np.inf, **QUAD)[0]
    dz = integrate.quad(lambda t: dens(t) * t / sd * special.expit(y * (mu + sd * t)), -np.inf, np.inf,
                        **QUAD)[0]
    return z, dz


def hats(name, channel, alpha, V, q, m, rho, noise) -> tuple[float, float, float]:
    """(V_hat, q_hat, m_hat): three adaptive integrals over xi, each summing over y = +-1."""
    sq = math.sqrt(q)
    v = max(rho - m * m / q, 0.0)

    def point(xi, which):
        total = 0.0
        for y in (1.0, -1.0):
            z, dz = partition(channel, y, (m / sq) * xi, v, noise)
            f, dwf = prox(name, y, sq * xi, V)
            total += (-z * dwf, z * f * f, dz * f)[which]
        return total * math.exp(-0.5 * xi * xi) / math.sqrt(2 * math.pi)

    # hinge: the proximal map has kinks at y w = 1 - V and y w = 1; split the integral there
    cuts = sorted({c / sq for c in (1.0 - V, 1.0, V - 1.0, -1.0)}) if name == "hinge" else []
    edges = [-np.inf, *[c for c in cuts if abs(c) < 40], np.inf]
    out = [alpha * sum(integrate.quad(point, lo, hi, args=(k,), **QUAD)[0]
                       for lo, hi in itertools.pairwise(edges)) for k in range(3)]
    return out[0], out[1], out[2]


def prior(spec, lam, V_hat, q_hat, m_hat) -> tuple[float, float, float]:
    """(V, q, m) from the hats, l2 penalty, in closed form per spectral mode."""
    om, bulk, teach = spec.omega, spec.bulk, spec.teacher
    den = lam + V_hat * om
    V = float(np.sum(bulk * om / den))
    m = float(m_hat * np.sum(teach * om**2 / den))
    q = float(np.sum((m_hat**2 * teach * om**3 + q_hat * bulk * om**2) / den**2))
    return V, q, m


def fixed_point_map(spec, alpha, lam, name, channel, V, q, m):
    """One undamped pass: hats from (V, q, m), then (V, q, m) from the hats."""
    return prior(spec, lam, *hats(name, channel, alpha, V, q, m, spec.rho, spec.noise))


def solve(spec, alpha, lam, name, channel, *, init=(1.0, 0.1, 0.01), damping=0.5, tol=1e-8,
          max_iter=2000) -> dict:
    """Damped iteration until the largest relative change of (V, q, m) is below ``tol``."""
    x = np.array(init, dtype=float)
    for it in range(1, max_iter + 1):
        new = damping * x + (1 - damping) * np.array(fixed_point_map(spec, alpha, lam, name, channel, *x))
        change = float(np.max(np.abs(new - x) / np.abs(new)))
        x = new
        if change < tol:
            return {"V": x[0], "q": x[1], "m": x[2], "iterations": it, "change": change}
    raise RuntimeError(f"reference iteration did not converge at alpha={alpha}, lam={lam} "
                       f"(last relative change {change:.3g})")
