"""The Gaussian Potts model in the thermodynamic limit L -> infinity (docs/limit.md).

The precision of the unmasked sites is the Schur complement ``Sigma^{-1} = A - b b^T / P_ii`` with
``A = s I - J'`` (J' a GOE of size p) independent of ``b = P_{-i,i}``. As L -> infinity:

* the bulk of the spectrum of Sigma^{-1} is the shifted semicircle,
  ``(1/p) tr f(Sigma) -> int f(1/x) rho_sc(s - x) dx`` on ``[s - 2, s + 2]``,
  ``rho_sc(u) = sqrt(4 - u^2) / (2 pi)``;
* the teacher ``w* = -b / P_ii`` sees the spectral measure nu of Sigma^{-1} at b, whose Stieltjes
  transform is ``g_nu(z) = s h / (s - h)``, ``h(z) = G(s - z)``, ``G(zeta) = (zeta - sqrt(zeta^2 - 4))/2``
  (Sherman-Morrison). On the cut ``|h| = 1`` and ``Im h = sqrt(4 - zeta^2)/2`` with ``zeta = s - x``, so

      nu(x) = s^2 sqrt(4 - zeta^2) / (2 pi (s^2 - s zeta + 1)),

  and ``w*^T f(Sigma) w* -> (1/s^2) int f(1/x) nu(x) dx``.

With ``x = s + 2t``, ``t in [-1, 1]``, both densities are ``sqrt(1 - t^2)`` times a function analytic
near [-1, 1]:

    bulk:     (2/pi) sqrt(1 - t^2) dt
    teacher:  (2/pi) sqrt(1 - t^2) / (s^2 + 2 s t + 1) dt

so Gauss-Chebyshev quadrature of the second kind integrates them with the square-root edges built
in, converging geometrically at the rate of the Bernstein ellipse through the nearest singularity of
the integrands, the pole of omega = 1/x at ``t = -s/2``.
"""

from __future__ import annotations

import math
from functools import cache, cached_property

import mpmath
import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.spectrum import Spectrum

#: most quadrature nodes used (reached only for shifts within ~1e-5 of 2)
MAX_NODES = 20_000


def semicircle_stieltjes(z: float) -> float:
    """G(z) = (z - sqrt(z^2 - 4)) / 2, the Stieltjes transform of the semicircle, for real z > 2."""
    return (z - math.sqrt(z * z - 4.0)) / 2.0 if z < 1e8 else 1.0 / z + 1.0 / z**3


def nodes_for(shift: float, digits: float) -> int:
    """Gauss-Chebyshev nodes for relative accuracy ``10**-digits`` at ``shift``.

    The error decays like ``r^(-2N)`` with ``r = s/2 + sqrt(s^2/4 - 1)``, the Bernstein-ellipse
    parameter of the pole at ``t = -s/2``; the margin of 12 nodes covers the poles of order up to
    three of the summands.
    """
    half = shift / 2.0
    log_r = math.log(half + math.sqrt(half * half - 1.0))
    nodes = digits * math.log(10.0) / (2.0 * log_r) + 12  # compared before ceil: may be huge
    return MAX_NODES if nodes >= MAX_NODES else math.ceil(nodes)


class GaussianPottsLimit:
    """A masked site of the Gaussian Potts model as L -> infinity, at shift s > 2.

    Use it wherever a :class:`MaskedSite` is accepted by the theory (:func:`solve`,
    :func:`learning_curve`, :func:`phase_diagram`, ...). Build it with
    ``GaussianPotts.limit(shift=...)``.

    Attributes
    ----------
    shift : float
        s > 2.
    rho, noise, c_ii : float
        ``G(s) - 1/s``, ``1/s`` and ``G(s)`` in closed form.
    spectrum : Spectrum
        Quadrature nodes omega_j = 1/(s + 2 t_j) with bulk and teacher weights.
    channel, default_loss : str
        ``"gaussian"`` and ``"square"`` (:class:`~replica_mlm.tasks.protocol.Task`).
    """

    channel = "gaussian"
    default_loss = "square"

    def __init__(self, *, shift: float, digits: float = 17.0) -> None:
        shift = _checks.as_scalar(shift, "shift")
        if shift <= 2.0:
            raise ValueError(
                f"shift must be > 2 in the limit L -> infinity (the semicircle reaches 2), got {shift}"
            )
        self.shift = shift
        self.digits = _checks.positive(digits, "digits")
        if self.digits > _checks.MAX_DIGITS:
            raise ValueError(f"digits must be <= {_checks.MAX_DIGITS} (beyond about 17 only the "
                             f"number of nodes grows, up to {MAX_NODES}), got {self.digits:g}")

    def __repr__(self) -> str:
        return f"GaussianPotts.limit(shift={self.shift:g})"

    @property
    def c_ii(self) -> float:
        """C_ii -> G(s)."""
        return semicircle_stieltjes(self.shift)

    @property
    def noise(self) -> float:
        """sigma^2 = 1/P_ii -> 1/s."""
        return 1.0 / self.shift

    @property
    def rho(self) -> float:
        """rho = C_ii - sigma^2 -> G(s) - 1/s."""
        return self.c_ii - self.noise

    @cached_property
    def spectrum(self) -> Spectrum:
        """Quadrature of the bulk and teacher densities (float64, relative error ~ 1e-16)."""
        n = nodes_for(self.shift, self.digits)
        theta = np.arange(1, n + 1) * np.pi / (n + 1)
        t = np.cos(theta)
        bulk = 2.0 / (n + 1) * np.sin(theta) ** 2
        teacher = bulk / (self.shift**2 + 2.0 * self.shift * t + 1.0)
        bulk = bulk / bulk.sum()
        return Spectrum(omega=1.0 / (self.shift + 2.0 * t), bulk=bulk, teacher=teacher,
                        noise=self.noise)

    def mp_spectrum(self, dps: int) -> tuple[list, list, list, mpmath.mpf]:
        """The same quadrature at ``dps`` significant digits (mpmath): omega, bulk, teacher, noise."""
        return _mp_quadrature(self.shift, _checks.precision_digits(dps, "dps", minimum=1))


@cache
def _mp_quadrature(shift: float, dps: int):
    n = nodes_for(shift, dps + 5)
    with mpmath.workdps(dps + 10):
        s = mpmath.mpf(shift)
        omega, bulk, teacher = [], [], []
        for j in range(1, n + 1):
            theta = j * mpmath.pi / (n + 1)
            t = mpmath.cos(theta)
            w = 2 * mpmath.sin(theta) ** 2 / (n + 1)
            omega.append(1 / (s + 2 * t))
            bulk.append(w)
            teacher.append(w / (s * s + 2 * s * t + 1))
        total = mpmath.fsum(bulk)
        bulk = [w / total for w in bulk]
        return omega, bulk, teacher, 1 / s
