"""Linear separability threshold of binary labels on Gaussian covariates (Candes and Sur 2020).

For n = alpha p samples x ~ N(0, Sigma) with labels y in {-1, +1} drawn from a channel
P_out(y | nu), nu = w* . x, the data are linearly separable through the origin with probability
tending to one for alpha < alpha_c and to zero for alpha > alpha_c, where

    1 / alpha_c = min_t E[ (Z - t Y V)_+^2 ],   V, Z ~ N(0, 1) independent,  Y ~ P_out(. | sqrt(rho) V)

(Candes and Sur 2020, Ann. Stat. 48(1); the same formula holds for any Sigma because separability is
invariant under x -> Sigma^{-1/2} x). See docs/theory.md, section 'Separability and ERM simulations'.

The expectation is reduced to one dimension in closed form: with a = t Y V,

    E_Z[(Z - a)_+^2] = g(a) = (1 + a^2) Phi(-a) - a phi(a),

and, since both channels are odd (P_out(y | -nu) = P_out(-y | nu)),

    E[(Z - t Y V)_+^2] = 2 int phi(v) P_out(+1 | sqrt(rho) v) g(t v) dv,

a smooth one-dimensional integral done by adaptive quadrature split at v = 0 (absolute accuracy
~1e-14). The function of t is convex (a mean of convex functions of t), so its minimiser is the
root of its derivative, ``2 int phi(v) P(+1 | v) g'(t v) v dv`` with ``g'(a) = -2 (phi(a) - a Phi(-a))``,
found by Brent's method on a bracket [0, t_hi] to ~1e-14.

Nearly noiseless labels. Both channels are ``P(+1 | sqrt(rho) v) = F(s v)`` with a slope
``s = sqrt(rho / sigma^2)`` (sign, ``F = Phi``) or ``sqrt(rho)`` (logit, ``F`` the logistic
function): the label noise sits at ``|v| ~ 1/s``, which adaptive quadrature on the scale of
``phi(v)`` misses for large s (the objective came out 0 from s ~ 1e4). Above
:data:`SCALED_ABOVE` the integrals are taken in ``w = s v`` with ``t = tau s``, exactly:

    E[(Z - t Y V)_+^2] = (2 / s) int phi(w / s) F(w) g(tau w) dw,

so ``alpha_c = s / (2 min_tau int phi(w / s) F(w) g(tau w) dw)`` grows linearly in s (the two
forms agree to 1e-16 for s <= 1000; alpha_c / s -> 1.8138 for sign, 0.98496 for logit).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, special

from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import channels

#: the binary channels of the registry (:mod:`replica_mlm.theory.sides.channels`) whose
#: ``P_out(+1 | nu)`` this module has in closed form (:func:`positive_label_probability`)
CHANNELS = ("sign", "logit")

_QUAD = {"epsabs": 1e-15, "epsrel": 1e-13, "limit": 400}
_SQRT2PI = math.sqrt(2.0 * math.pi)
#: slope s of P(+1 | sqrt(rho) v) = F(s v) above which the integrals are taken in w = s v
SCALED_ABOVE = 100.0


def _phi(a):
    return np.exp(-0.5 * np.square(a)) / _SQRT2PI


def g(a):
    """E_Z[(Z - a)_+^2] = (1 + a^2) Phi(-a) - a phi(a) for Z ~ N(0, 1)."""
    a = np.asarray(a, dtype=float)
    return (1.0 + a * a) * special.ndtr(-a) - a * _phi(a)


def g_prime(a):
    """d g / d a = -2 E_Z[(Z - a)_+] = -2 (phi(a) - a Phi(-a))."""
    a = np.asarray(a, dtype=float)
    return -2.0 * (_phi(a) - a * special.ndtr(-a))


def positive_label_probability(channel: str, rho: float, noise: float):
    """``v -> P_out(+1 | sqrt(rho) v)`` for the binary channels.

    sign: ``P(sign(sqrt(rho) v + sigma eps) = +1) = Phi(sqrt(rho) v / sigma)``;
    logit: ``1 / (1 + exp(-sqrt(rho) v))``.
    """
    root = math.sqrt(rho)
    if channel == "sign":
        if noise == 0.0:
            return lambda v: np.where(np.asarray(v) > 0, 1.0, np.where(np.asarray(v) < 0, 0.0, 0.5))
        snr = root / math.sqrt(noise)
        return lambda v: special.ndtr(snr * np.asarray(v, dtype=float))
    if channel == "logit":
        return lambda v: special.expit(root * np.asarray(v, dtype=float))
    raise ValueError(f"channel must be one of {CHANNELS} for separability, got {channel!r}")


def _integral(fn) -> float:
    """int_R fn(v) phi(v) dv, split at 0 (where a noiseless sign channel jumps)."""
    total = 0.0
    for lo, hi in ((-math.inf, 0.0), (0.0, math.inf)):
        val, _err = integrate.quad(lambda v: float(fn(v)) * float(_phi(v)), lo, hi, **_QUAD)
        total += val
    return total


def objective(t: float, channel: str, rho: float, noise: float) -> float:
    """E[(Z - t Y V)_+^2] for the channel (its minimum over t is 1 / alpha_c)."""
    prob = positive_label_probability(channel, rho, noise)
    return 2.0 * _integral(lambda v: prob(v) * g(t * v))


def objective_slope(t: float, channel: str, rho: float, noise: float) -> float:
    """d/dt E[(Z - t Y V)_+^2]."""
    prob = positive_label_probability(channel, rho, noise)
    return 2.0 * _integral(lambda v: prob(v) * g_prime(t * v) * v)


def _noise_of(task, channel: str) -> tuple[float, float]:
    from replica_mlm.tasks.protocol import spectrum_of

    spec: Spectrum = spectrum_of(task)
    rho = float(spec.rho)
    noise = float(spec.noise) if channel == "sign" else 0.0
    return rho, noise


@keywords
def separability_threshold(task, channel: str | None = None) -> float:
    """Sample ratio alpha_c above which binary labels are no longer linearly separable.

    Parameters
    ----------
    task : MaskedSite, GaussianPottsLimit or Spectrum
        Only the teacher signal rho = w*^T Sigma w* and (for ``"sign"``) the label noise
        sigma^2 enter.
    channel : {"sign", "logit"}, optional
        ``"sign"``: y = sign(nu + sigma eps) with sigma^2 the task's noise; ``"logit"``:
        P(y | nu) = 1 / (1 + exp(-y nu)), no extra noise. Default: the task's own channel where
        it is binary (an Ising site's ``"logit"``), else ``"sign"``.

    Returns
    -------
    float
        alpha_c = 1 / min_t E[(Z - t Y V)_+^2] (see the module docstring). It is 2 without signal
        (rho = 0, Cover 1965) and ``math.inf`` for a noiseless sign teacher (sigma^2 = 0,
        rho > 0), whose labels are separable at every alpha.

    Raises
    ------
    ValueError
        For a channel without binary labels (e.g. ``"gaussian"``), or a sign channel with
        rho = 0 and sigma^2 = 0 (every label would be sign(0)).
    """
    if channel is None:
        own = getattr(task, "channel", None)
        channel = own if own in CHANNELS else "sign"
    resolved = channels.resolve(channel)  # the registry's message for an unknown name
    if not channels.registered(resolved) or resolved.name not in CHANNELS:
        raise ValueError(
            f"separability is defined for the binary channels {CHANNELS}, got channel={channel!r}"
        )
    rho, noise = _noise_of(task, resolved.name)
    return threshold(rho, noise, resolved.name)


def threshold(rho: float, noise: float, channel: str = "sign") -> float:
    """alpha_c from the teacher signal rho and the sign channel's noise (see the module docstring)."""
    if channel == "sign" and noise == 0.0:
        if rho == 0.0:
            raise ValueError("sign channel with rho = 0 and noise = 0: every label is sign(0)")
        return math.inf
    if rho == 0.0:
        return 2.0  # the objective is g(t V) averaged, minimal at t = 0 where it equals 1/2
    slope_s = math.sqrt(rho) / math.sqrt(noise) if channel == "sign" else math.sqrt(rho)
    if not math.isfinite(slope_s):
        raise _beyond_float_range(rho, noise)
    if slope_s > SCALED_ABOVE:
        return _threshold_scaled(slope_s, channel, rho, noise)
    slope = lambda t: objective_slope(t, channel, rho, noise)  # noqa: E731
    # the slope at t = 0 is -4 phi(0) E[v P(+1|v)] < 0 and the objective is convex: bracket the root
    lo, hi = 0.0, 1.0
    while slope(hi) < 0.0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e8:
            raise ValueError(f"no minimiser of the separability objective below t = 1e8 (rho={rho}, "
                             f"noise={noise}): the labels are numerically noiseless")
    t_star = optimize.brentq(slope, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    return 1.0 / objective(t_star, channel, rho, noise)


def _threshold_scaled(s: float, channel: str, rho: float, noise: float) -> float:
    """alpha_c for a label slope ``s > SCALED_ABOVE``, with the integrals in ``w = s v`` (see the
    module docstring); ValueError if alpha_c exceeds the float range."""
    cdf = special.ndtr if channel == "sign" else special.expit

    def integral(fn) -> float:
        return sum(integrate.quad(lambda w: float(fn(w)) * float(_phi(w / s)), lo, hi, **_QUAD)[0]
                   for lo, hi in ((-math.inf, 0.0), (0.0, math.inf)))

    def slope(tau: float) -> float:
        return integral(lambda w: cdf(w) * g_prime(tau * w) * w)

    # the minimiser tau* is of order one (0.6 to 1.3 for both channels): bracket it from tau = 1,
    # never at tau = 0, where the slope is of order -s^2 and would need the whole of phi(w / s)
    lo, hi = 0.5, 1.0
    while slope(hi) < 0.0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e8:
            raise ValueError(f"no minimiser of the separability objective below tau = 1e8 (rho={rho}, "
                             f"noise={noise})")
    while slope(lo) > 0.0:
        lo, hi = 0.5 * lo, lo
        if lo < 1e-8:
            raise ValueError(f"no minimiser of the separability objective above tau = 1e-8 (rho={rho}, "
                             f"noise={noise})")
    tau = optimize.brentq(slope, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    alpha_c = s / (2.0 * integral(lambda w: cdf(w) * g(tau * w)))
    if not math.isfinite(alpha_c):
        raise _beyond_float_range(rho, noise)
    return alpha_c


def _beyond_float_range(rho: float, noise: float) -> ValueError:
    exponent = 0.5 * (math.log10(rho) - math.log10(noise))
    return ValueError(f"alpha_c ~ 1.8 sqrt(rho / noise) ~ 1e{exponent:.0f} exceeds the float range: "
                      f"rho = {rho:g} and noise = {noise:g} make the labels noiseless to float64 "
                      "(noise = 0 gives alpha_c = inf, separable at every alpha)")
