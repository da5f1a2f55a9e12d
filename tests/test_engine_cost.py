"""The cheaper general engine gives the numbers of the previous code.

The channel's ``(Z, dZ)`` (or ``(P_out, dP_out/dnu)``) and the loss's ``(loss', loss'')`` are now
lambdified together with common-subexpression elimination; here they are compared with the
previous code path, one lambdified function per expression, restored by monkeypatching.
"""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.theory.sides import channels, energetic, losses
from replica_mlm.theory.symbolic.expressions import lambdify, mu, nu, v, y


def _separate_partition(self, yv, muv, vv, s2):
    """``Channel.partition`` as it was: Z and dZ (or P and dP) lambdified one by one."""
    from replica_mlm.theory.symbolic import potentials as P
    muv = np.asarray(muv, dtype=float)
    if self.z_closed is not None:
        zf, dzf = (lambdify((y, mu, v, P.noise), e) for e in (self.z_closed, self.dz_closed))
        return (np.broadcast_to(zf(yv, muv, vv, s2), muv.shape),
                np.broadcast_to(dzf(yv, muv, vv, s2), muv.shape))
    pf, dpf = (lambdify((y, nu, P.noise), e) for e in (self.p_out, self.p_out.diff(nu)))
    nodes, weights = channels.hermite(channels.NU_NODES)
    nus = muv[..., None] + np.sqrt(max(vv, 0.0)) * nodes
    return (np.broadcast_to(pf(yv, nus, s2), nus.shape) @ weights,
            np.broadcast_to(dpf(yv, nus, s2), nus.shape) @ weights)


def _separate_d12(self, yv, zv):
    """``loss'`` and ``loss''`` from their own lambdified functions, as the proximal Newton had them."""
    return self.d1(yv, zv), self.d2(yv, zv)


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = np.maximum(np.abs(a), np.abs(b)).max()
    return 0.0 if scale == 0 else float(np.abs(a - b).max() / scale)


@pytest.mark.parametrize("name", ["sign", "logit"])
def test_partition_equals_the_separately_lambdified_one(name):
    ch = channels.resolve(name)
    muv = np.random.default_rng(0).normal(scale=3.0, size=500)
    for label in (1.0, -1.0):
        for vv, s2 in ((0.3, 0.0), (1.7, 0.2), (0.0, 0.5)):
            if name == "sign" and vv + s2 == 0:
                continue
            new = ch.partition(label, muv, vv, s2)
            old = _separate_partition(ch, label, muv, vv, s2)
            for a, b in zip(new, old, strict=True):
                assert a.shape == muv.shape
                assert _rel(a, b) <= 1e-13


@pytest.mark.parametrize("name", ["square", "absolute", "huber", "logistic", "hinge", "pseudo"])
def test_loss_derivatives_together_equal_one_by_one(name):
    import sympy as sp

    if name == "pseudo":
        loss = losses.Loss(sp.sqrt(1 + (losses.y - losses.z) ** 2) - 1, name="pseudo-huber")
    else:
        loss = losses.resolve(name)
    gen = np.random.default_rng(1)
    yv = gen.choice([-1.0, 1.0], size=400) if name in ("logistic", "hinge") else gen.normal(size=400)
    zv = gen.normal(scale=2.0, size=400)
    zv[:20] = 1.0 / yv[:20] if name == "hinge" else yv[:20]  # on the kinks
    d1, d2 = loss._d12(yv, zv)
    assert d1.shape == d2.shape == yv.shape
    assert _rel(d1, loss.d1(yv, zv)) <= 1e-13 and _rel(d2, loss.d2(yv, zv)) <= 1e-13


@pytest.mark.parametrize(("loss", "channel"), [("logistic", "logit"), ("logistic", "sign"),
                                               ("hinge", "sign"), ("hinge", "logit"),
                                               ("square", "sign"), ("huber", "gaussian"),
                                               ("absolute", "gaussian")])
def test_hats_equal_the_previous_code_path(loss, channel, monkeypatch):
    site = rm.GaussianPotts.random(60, shift=3.0, seed=2).masked_site(1)
    spec = site.spectrum
    lo, ch = losses.resolve(loss), channels.resolve(channel)
    points = [(0.7, 0.4, 0.2), (3.0, 1.5, 0.9), (0.05, 2.0, -0.3)]
    rho = spec.rho
    new = [energetic.hats(lo, ch, alpha=1.3, V=V, q=q, m=m * np.sqrt(q * rho), rho=rho, noise=spec.noise)
           for V, q, m in points]
    monkeypatch.setattr(channels.Channel, "partition", _separate_partition)
    monkeypatch.setattr(losses.Loss, "_d12", _separate_d12)
    old = [energetic.hats(lo, ch, alpha=1.3, V=V, q=q, m=m * np.sqrt(q * rho), rho=rho, noise=spec.noise)
           for V, q, m in points]
    for a, b in zip(new, old, strict=True):
        for key in a:
            assert _rel(a[key], b[key]) <= 1e-13, (key, a[key], b[key])


def test_curve_start_extrapolates_in_the_engines_unknowns():
    from replica_mlm.theory.studies import curve
    lim = rm.GaussianPotts.limit(shift=3.0)
    pts = [rm.solve(lim, alpha=a, lam=1e-2, loss="logistic", channel="sign") for a in (1.0, 1.2)]
    assert curve._extrapolated([], 1.4) is None and curve._extrapolated(pts[:1], 1.4) is pts[0]
    # backwards, a repeated alpha, or more than twice the last step: the last point itself
    for a in (1.1, 1.2, 1.65):
        assert curve._extrapolated(pts, a) is pts[1]
    start = curve._extrapolated(pts, 1.4)
    x = [np.array([np.log(p.V), np.log(p.q), np.arctanh(p.m / np.sqrt(p.q * p.rho))]) for p in pts]
    got = np.array([np.log(start.V), np.log(start.q), np.arctanh(start.m / np.sqrt(start.q * start.rho))])
    np.testing.assert_allclose(got, 2 * x[1] - x[0], rtol=1e-12, atol=1e-14)
    # closer to the solution at 1.4 than the last point is
    sol = rm.solve(lim, alpha=1.4, lam=1e-2, loss="logistic", channel="sign")
    x_sol = np.array([np.log(sol.V), np.log(sol.q), np.arctanh(sol.m / np.sqrt(sol.q * sol.rho))])
    assert np.abs(got - x_sol).max() < 0.5 * np.abs(x[1] - x_sol).max()


def test_curve_gives_the_numbers_of_cold_solves_with_residual_margin(monkeypatch):
    """Warm and extrapolated starts, and hybr's first-pass step tolerance, change the path only:
    each point equals its cold solve, and the residual is far below the 1e-10 of converged."""
    site = rm.GaussianPotts.random(60, shift=3.0, seed=2).masked_site(1)
    alphas = np.array([0.3, 0.8, 1.1, 1.6, 2.4, 2.6, 2.6, 4.0])
    c = rm.learning_curve(site, alpha=alphas, lam=1e-3, loss="hinge", channel="sign")
    assert np.all(c.residual <= 1e-12)
    for k in (1, 4, 7):
        cold = rm.solve(site, alpha=float(alphas[k]), lam=1e-3, loss="hinge", channel="sign")
        for key in ("V", "q", "m", "test_loss", "eg"):
            assert _rel(getattr(c, key)[k], getattr(cold, key)) <= 1e-10, key
