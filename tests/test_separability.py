"""Separability threshold alpha_c (Candes-Sur): closed forms, mpmath, and an LP experiment."""

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy.optimize import linprog

import replica_mlm as rm
from replica_mlm.theory.studies import separability as sep


def test_g_closed_form_against_mpmath():
    # E[(Z - a)_+^2] = (1 + a^2) Phi(-a) - a phi(a), checked by direct quadrature at 30 digits
    mpmath.mp.dps = 20
    for a in (-3.0, 0.4, 6.0):
        ref = mpmath.quad(lambda z, a=a: (z - a) ** 2 * mpmath.npdf(z), [a, a + 10, mpmath.inf])
        assert abs(float(sep.g(a)) - float(ref)) < 1e-15 * max(1.0, float(ref))
        dref = mpmath.diff(lambda b: mpmath.quad(lambda z: (z - b) ** 2 * mpmath.npdf(z),
                                                 [b, b + 10, mpmath.inf]), a)
        assert abs(float(sep.g_prime(a)) - float(dref)) < 1e-14


def _mp_inverse_threshold(rho, noise, channel):
    """min_t 2 int phi(v) P(+|v) g(t v) dv at 20 digits (mpmath quadrature and root finding)."""
    mpmath.mp.dps = 20
    r = mpmath.sqrt(rho)

    def prob(v):
        if channel == "sign":
            return mpmath.ncdf(r * v / mpmath.sqrt(noise))
        return 1 / (1 + mpmath.exp(-r * v))

    def g(a):
        return (1 + a * a) * mpmath.ncdf(-a) - a * mpmath.npdf(a)

    def gp(a):
        return -2 * (mpmath.npdf(a) - a * mpmath.ncdf(-a))

    def obj(t):
        return 2 * mpmath.quad(lambda v: mpmath.npdf(v) * prob(v) * g(t * v), [-mpmath.inf, 0, mpmath.inf])

    def slope(t):
        return 2 * mpmath.quad(lambda v: mpmath.npdf(v) * prob(v) * gp(t * v) * v,
                               [-mpmath.inf, 0, mpmath.inf])

    t_star = mpmath.findroot(slope, 1.0)
    return float(obj(t_star))


@pytest.mark.parametrize("rho,noise,channel", [
    (0.3, 0.0, "logit"),
    pytest.param(1.0, 1.0, "sign", marks=pytest.mark.slow),
    pytest.param(5.0, 0.2, "sign", marks=pytest.mark.slow),
])
def test_threshold_against_mpmath(rho, noise, channel):
    ours = 1.0 / sep.threshold(rho, noise, channel)
    ref = _mp_inverse_threshold(rho, noise, channel)
    assert abs(ours - ref) < 1e-12


def test_cover_without_signal():
    for channel in ("sign", "logit"):
        assert sep.threshold(0.0, 0.5, channel) == 2.0
    # continuous as rho -> 0: 1/alpha_c = 1/2 - O(rho)
    assert abs(sep.threshold(1e-8, 1.0, "sign") - 2.0) < 1e-6
    assert abs(sep.threshold(1e-8, 0.0, "logit") - 2.0) < 1e-6
    # a spectrum with zero teacher weights has rho = 0
    spec = rm.Spectrum(omega=np.ones(3), bulk=np.full(3, 1 / 3), teacher=np.zeros(3), noise=0.4)
    assert rm.separability_threshold(spec, channel="sign") == 2.0


def test_noiseless_sign_is_separable_at_every_alpha():
    assert sep.threshold(0.5, 0.0, "sign") == math.inf
    with pytest.raises(ValueError, match="sign\\(0\\)"):
        sep.threshold(0.0, 0.0, "sign")
    # approaching the noiseless teacher alpha_c grows without bound
    values = [sep.threshold(1.0, s2, "sign") for s2 in (1.0, 0.1, 0.01, 0.001)]
    assert all(b > a for a, b in itertools.pairwise(values))
    assert values[-1] > 30


def test_monotone_in_signal_to_noise():
    snr = [0.0, 0.05, 1.0, 10.0]
    sign = [sep.threshold(s, 1.0, "sign") for s in snr]
    logit = [sep.threshold(s, 0.0, "logit") for s in snr]
    for vals in (sign, logit):
        assert all(b > a for a, b in itertools.pairwise(vals))
    # the sign channel depends on rho / sigma^2 only
    assert abs(sep.threshold(2.0, 4.0, "sign") - sep.threshold(0.5, 1.0, "sign")) < 1e-12


def test_task_inputs_and_bad_channel(site300):
    lim = rm.GaussianPotts.limit(3.0)
    a_site = rm.separability_threshold(site300, channel="sign")
    assert a_site == sep.threshold(site300.spectrum.rho, site300.noise, "sign")
    assert 2.0 < rm.separability_threshold(lim, channel="logit") < rm.separability_threshold(lim)
    with pytest.raises(ValueError, match="binary channels"):
        rm.separability_threshold(site300, channel="gaussian")
    with pytest.raises(ValueError, match="task must be"):
        rm.separability_threshold(3.0)


def _separable(x, y) -> bool:
    """Is there w with y_mu w.x_mu > 0 for all mu?  LP: max s s.t. y x.w >= s, |w_j| <= 1, s <= 1."""
    n, p = x.shape
    a = np.hstack([-(y[:, None] * x), np.ones((n, 1))])
    c = np.zeros(p + 1)
    c[-1] = -1.0
    res = linprog(c, A_ub=a, b_ub=np.zeros(n), bounds=[(-1, 1)] * p + [(None, 1)], method="highs")
    assert res.status == 0, res.message
    return -res.fun > 1e-6


def _fraction_separable(alpha, *, p, rho, noise, count, seed, covariance=None):
    """Fraction of `count` sign-channel samples (teacher along e_1 or a Potts site) that are separable."""
    rng = np.random.default_rng(seed)
    n = round(alpha * p)
    hits = 0
    for _ in range(count):
        if covariance is None:
            x = rng.standard_normal((n, p))
            nu = math.sqrt(rho) * x[:, 0]
        else:
            x, _y = covariance.sample(n, rng=rng)
            nu = x @ covariance.teacher
        y = np.sign(nu + math.sqrt(noise) * rng.standard_normal(n))
        hits += _separable(x, y)
    return hits / count


def test_lp_experiment_brackets_alpha_c():
    # rho / sigma^2 = 1: alpha_c = 2.6953...; p = 150, 3 instances on each side (seeds 0 and 1)
    ac = sep.threshold(1.0, 1.0, "sign")
    assert _fraction_separable(0.8 * ac, p=150, rho=1.0, noise=1.0, count=3, seed=0) == 1.0
    assert _fraction_separable(1.2 * ac, p=150, rho=1.0, noise=1.0, count=3, seed=1) == 0.0


@pytest.mark.slow
def test_lp_experiment_sweep(site300):
    # The fraction of separable instances falls from 1 to 0 across alpha_c, for an isotropic
    # strong-signal teacher (alpha_c = 6.07) and for the Potts site's own covariance (alpha_c = 2.117).
    ac = sep.threshold(10.0, 1.0, "sign")
    frac = [_fraction_separable(f * ac, p=200, rho=10.0, noise=1.0, count=10, seed=k)
            for k, f in enumerate((0.85, 1.15))]
    assert frac[0] >= 0.9 and frac[1] <= 0.1
    ac = rm.separability_threshold(site300, channel="sign")
    frac = [_fraction_separable(f * ac, p=300, rho=0.0, noise=site300.noise, count=10, seed=10 + k,
                                covariance=site300) for k, f in enumerate((0.85, 1.15))]
    assert frac[0] >= 0.9 and frac[1] <= 0.1
