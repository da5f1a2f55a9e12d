"""The gaussian channel ``y = nu + sigma eps``: the masked-site regression (docs/theory.md, section
"The general engine"); real labels, ``Z = N(y; mu, v + sigma^2)``, error ``rho + sigma^2 - 2 m + q``.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.theory.sides.channels.label_channel import Channel, normal

NAME = "gaussian"


def parts() -> tuple:
    """``(P_out, Z, error)`` in sympy."""
    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import mu, nu, v, y

    return normal(y, nu, P.noise), normal(y, mu, v + P.noise), P.rho + P.noise - 2 * P.m + P.q


def sample(nu: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``nu + sigma eps``: one normal draw per sample."""
    return nu + np.sqrt(noise) * rng.standard_normal(nu.shape)


def channel() -> Channel:
    """``y = nu + sigma eps`` (the masked-site regression)."""
    return Channel.lazy(NAME, labels="real", build=parts, sampler=sample, uses_noise=True,
                        cache_name=f"channel:{NAME}")
