"""A new theory variant is one file (issue 35, item 3): a channel side written here, in this file
alone, composed with the package's ridge prior side on the one problem and driver of the general
engine, reproduces the exact reduced solver.

The toy side is the square loss ``(y - z)^2 / 2`` on the gaussian channel in closed form (the
proximal point of the square loss is linear, so every integral over the fields is a moment):
``V_hat = m_hat = alpha / (1 + V)``, ``q_hat = alpha E_g / (1 + V)^2`` with
``E_g = rho + sigma^2 - 2 m + q``; the training loss is ``E_g / (2 (1 + V)^2)``. None of this
uses the package's quadrature, proximal operators or channel objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import replica_mlm as rm
from replica_mlm.theory.sides import losses, prior
from replica_mlm.theory.sides.interfaces import ChannelSide, PriorSide
from replica_mlm.theory.solvers import engine


@dataclass(frozen=True)
class ClosedFormSquare:
    """The channel side of ridge regression with gaussian labels, in closed form."""

    rho: float
    noise: float
    name: str = "gaussian"
    loss: object = losses.resolve("square")

    def _eg(self, q: float, m: float) -> float:
        return self.rho + self.noise - 2.0 * m + q

    def hats(self, alpha: float, V: float, q: float, m: float) -> dict[str, float]:
        eg = self._eg(q, m)
        return {"V_hat": alpha / (1.0 + V), "m_hat": alpha / (1.0 + V), "q_hat": alpha * eg / (1.0 + V) ** 2,
                "train_loss": eg / (2.0 * (1.0 + V) ** 2)}

    def error(self, q: float, m: float) -> float:
        return self._eg(q, m)

    def test_loss(self, q: float, m: float) -> float:
        return self._eg(q, m) / 2.0


@pytest.mark.parametrize("alpha, lam", [(0.4, 0.05), (1.0, 0.1), (3.0, 1.0), (8.0, 1e-3)])
def test_a_variant_in_one_file_reproduces_the_reduced_solver(alpha, lam):
    site = rm.GaussianPotts.random(L=60, shift=3.0, seed=11).masked_site(3)
    spec = site.spectrum
    side = ClosedFormSquare(rho=spec.rho, noise=spec.noise)
    ridge = prior.RidgePrior(spec, lam)
    assert isinstance(side, ChannelSide) and isinstance(ridge, PriorSide)
    out = engine.solve_point(engine.Problem(side, ridge, alpha))
    exact = rm.solve(site, alpha=alpha, lam=lam)  # Newton on the reduced scalar equation
    assert out["residual"] <= engine.TOL
    for key in ("V", "q", "m", "V_hat", "q_hat", "m_hat", "eg", "train_loss", "test_loss",
                "estimation_error"):
        assert out[key] == pytest.approx(getattr(exact, key), rel=1e-9), key
