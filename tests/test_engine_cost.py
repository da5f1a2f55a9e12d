"""The cheaper general engine gives the numbers of the previous code.

The channel's ``(Z, dZ)`` (or ``(P_out, dP_out/dnu)``) and the loss's ``(loss', loss'')`` are now
lambdified together with common-subexpression elimination; here they are compared with the
previous code path, one lambdified function per expression, restored by monkeypatching.
"""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.theory import channels, energetic, losses
from replica_mlm.theory.symbolic import lambdify, mu, nu, v, y


def _separate_partition(self, yv, muv, vv, s2):
    """``Channel.partition`` as it was: Z and dZ (or P and dP) lambdified one by one."""
    from replica_mlm.theory import potentials as P

    muv = np.asarray(muv, dtype=float)
    if self.z_closed is not None:
        zf, dzf = (lambdify((y, mu, v, P.noise), e) for e in (self.z_closed, self.dz_closed))
        return (np.broadcast_to(zf(yv, muv, vv, s2), muv.shape),
                np.broadcast_to(dzf(yv, muv, vv, s2), muv.shape))
    pf, dpf = (lambdify((y, nu, P.noise), e) for e in (self.p_out, self.p_out.diff(nu)))
    nodes, weights = channels._hermite(channels.NU_NODES)
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
