"""One Loss object for theory and simulation: a sympy loss is simulated by the generic Newton solver."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate, special

import replica_mlm as rm
from replica_mlm.learners import erm
from replica_mlm.theory.sides import losses


@pytest.fixture(scope="module")
def pseudo_huber():
    a, b = sp.symbols("a b", real=True)
    return rm.losses.Loss.from_sympy(sp.sqrt(1 + (a - b) ** 2) - 1, a, b, name="pseudo_huber")


def test_custom_loss_simulation_agrees_with_theory(site300, pseudo_huber):
    for alpha in (0.7, 2.0):
        sim = rm.simulate(site300, alpha=alpha, lam=0.1, seeds=8, rng=1, loss=pseudo_huber)
        assert sim.loss == "pseudo_huber" and sim.channel == "gaussian"
        assert np.max(sim.kkt_residual) < 1e-10
        th = rm.solve(site300, alpha=sim.alpha, lam=0.1, loss=pseudo_huber)
        for key in ("eg", "test_loss", "train_loss", "estimation_error"):
            z = (getattr(sim, f"{key}_mean")[0] - getattr(th, key)) / getattr(sim, f"{key}_stderr")[0]
            assert abs(z) < 4, (alpha, key, z)


def _data(channel, n=240, p=80, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    nu = x @ (rng.standard_normal(p) / math.sqrt(p))
    return x, rm.channels.resolve(channel).sample(nu, 0.25, rng)


@pytest.mark.parametrize("loss,channel", [(losses.resolve("logistic"), "sign"),
                                          (losses.Huber(0.7), "gaussian")])
def test_generic_solver_gives_the_specialised_estimator(loss, channel):
    x, y = _data(channel)
    lam = np.array([0.01, 0.3])
    w_fast, _ = erm.fit(x, y, lam, loss)
    w_gen, bound = erm.fit(x, y, lam, loss, generic=True)
    assert np.all(bound < 1e-10)
    for j in range(lam.size):
        assert np.linalg.norm(w_gen[:, j] - w_fast[:, j]) <= 1e-6 * np.linalg.norm(w_fast[:, j])


def test_generic_solver_refuses_a_kinked_custom_loss():
    a, b = sp.symbols("a b", real=True)
    kinked = rm.losses.Loss.from_sympy(sp.Abs(a - b) + (a - b) ** 2, a, b)
    x, y = _data("gaussian", n=30, p=10)
    with pytest.raises(ValueError, match="differentiable in z"):
        erm.fit(x, y, np.array([0.1]), kinked)


def _old_binary_test_loss(m, q, rho, noise, value):
    """The old adaptive-quadrature test loss of the sign channel (learners/erm.py before issue 23)."""
    slope, spread = m / q, math.sqrt(max(rho - m * m / q, 0.0) + noise)

    def integrand(t):
        pp = special.ndtr(slope * t / spread)
        return float(pp * value(1.0, t) + (1 - pp) * value(-1.0, t)) * math.exp(-0.5 * t * t / q) / \
            math.sqrt(2 * math.pi * q)

    cut = 40 * math.sqrt(q)
    edges = [-cut, -1.0, 0.0, 1.0, cut]
    return sum(integrate.quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-12, limit=400)[0]
               for lo, hi in itertools.pairwise(edges))


@pytest.mark.parametrize("name", ["logistic", "hinge", "square"])
@pytest.mark.parametrize("m,q,rho,noise", [(0.2, 0.5, 0.3, 0.4), (0.9, 1.1, 1.0, 0.1)])
def test_erm_test_loss_is_the_theory_integral_with_the_old_numbers(name, m, q, rho, noise):
    loss = losses.resolve(name)
    eg, tl = erm.test_quantities(m, q, rho, noise, loss, "sign")
    assert eg == pytest.approx(math.acos(m / math.sqrt(q * (rho + noise))) / math.pi, rel=1e-14)
    old = _old_binary_test_loss(m, q, rho, noise, lambda y, z: erm.pointwise(loss, y, z))
    assert tl == pytest.approx(old, rel=1e-12)
