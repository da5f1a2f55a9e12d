"""The logit channel ``P(y | nu) = 1 / (1 + exp(-y nu))``, no further noise: an Ising spin given
its neighbours (docs/theory.md, sections "The general engine" and "Discrete spins"); ``Z`` by
Gauss-Hermite quadrature over ``nu``.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.theory.sides.channels.label_channel import Channel

NAME = "logit"


def parts() -> tuple:
    """``(P_out, None, None)``: no closed-form Z or error."""
    from replica_mlm.theory.symbolic.expressions import Sigmoid, nu, y

    return Sigmoid(y * nu), None, None


def sample(nu: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """+1 with probability ``1 / (1 + exp(-nu))``: one uniform draw per sample.

    One normal draw per sample comes first and is not used (``noise`` is ignored): the sign and
    gaussian channels draw their noise there, and the simulations drew it for every channel
    before the channels carried their samplers, so fixed seeds keep their labels.
    """
    from scipy import special

    rng.standard_normal(nu.shape)
    return np.where(rng.random(nu.shape) < special.expit(nu), 1.0, -1.0)


def channel() -> Channel:
    """``P(y | nu) = 1 / (1 + exp(-y nu))``; Z by Gauss-Hermite quadrature over nu."""
    return Channel.lazy(NAME, labels="binary", build=parts, sampler=sample, uses_noise=False,
                        cache_name=f"channel:{NAME}")
