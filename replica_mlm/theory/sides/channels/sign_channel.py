"""The sign channel ``y = sign(nu + sigma eps)``: a binarised masked spin (docs/theory.md, section
"The general engine"); ``Z = Phi(y mu / sqrt(v + sigma^2))`` and the classification error
``arccos(m / sqrt(q (rho + sigma^2))) / pi`` in closed form.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.theory.sides.channels.label_channel import Channel, phi

NAME = "sign"


def parts() -> tuple:
    """``(P_out, Z, error)`` in sympy."""
    import sympy as sp

    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import mu, nu, v, y

    return (phi(y * nu / sp.sqrt(P.noise)), phi(y * mu / sp.sqrt(v + P.noise)),
            sp.acos(P.m / sp.sqrt(P.q * (P.rho + P.noise))) / sp.pi)


def sample(nu: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """The sign of ``nu + sigma eps`` (+1 at 0): one normal draw per sample."""
    noisy = nu + np.sqrt(noise) * rng.standard_normal(nu.shape)
    return np.where(noisy >= 0, 1.0, -1.0)


def channel() -> Channel:
    """``y = sign(nu + sigma eps)`` (a binarised masked spin); classification error in closed form."""
    return Channel.lazy(NAME, labels="binary", build=parts, sampler=sample, uses_noise=True,
                        cache_name=f"channel:{NAME}")
