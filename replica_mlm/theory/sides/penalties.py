"""Prior sides other than the plain ridge: the covariance-shaped ridge (docs/theory.md, section 8).

The prior side of the saddle point (:mod:`.prior`) is the l2 penalty ``(lam p / 2) |w|^2``. A
penalty ``(lam p / 2) w^T Gamma w`` with ``Gamma = g(Sigma)`` (``g > 0`` a function of the
eigenvalue, so Gamma shares the eigenbasis of Sigma) is the same penalty in other coordinates: with
``w' = Gamma^{1/2} w`` and ``x' = Gamma^{-1/2} x``,

* ``w . x = w' . x'`` (every field, label, loss and error of the sample is unchanged),
* the penalty is ``(lam p / 2) |w'|^2``, the plain ridge on ``w'``,
* ``x'`` has covariance ``Gamma^{-1/2} Sigma Gamma^{-1/2}``, eigenvalues ``omega_k / g_k``, and the
  teacher ``w*' = Gamma^{1/2} w*`` has mode weights ``g_k theta_k^2``; the bulk weights stay.

So eg, the test and train losses, m, q and V (overlaps of fields) are those of the plain ridge on
the transformed :class:`~replica_mlm.tasks.spectrum.Spectrum` (:meth:`Penalty.transform`), for any
loss and channel. Only the estimation error ``E |w_hat - w*|^2`` is measured in the original
coordinates: per mode ``(w_k - theta_k)^2 = (w'_k - theta'_k)^2 / g_k``, so it is the sum of the
transformed problem's per-mode summands (:func:`.potentials.estimation_mode`) weighted by ``1 / g_k``
(:meth:`Penalty.estimation_error`). That summand is linear in the mode's weights ``(b, c)``, so the
weighted sum is the plain summand at ``(omega_k / g_k, b_k / g_k, c_k)``.

:func:`resolve` turns the ``penalty=`` of ``rm.solve`` and ``rm.learning_curve`` into a
:class:`Penalty` (None: :class:`Ridge`), and :func:`corrected` replaces the estimation error of a
result solved on the transformed spectrum by the one in the original metric.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import prior
from replica_mlm.theory.symbolic.compiled import compiled_estimation

__all__ = ["Penalty", "Ridge", "ShapedRidge", "corrected", "resolve"]


class Penalty:
    """A prior side ``(lam p / 2) w^T g(Sigma) w``: what the solvers need of a penalty.

    Subclasses give :meth:`factors` (``g_k`` on each mode of a spectrum); the rest follows
    (docs/theory.md, section 8).
    """

    name = "penalty"

    def factors(self, spec: Spectrum) -> np.ndarray:
        """``g_k > 0`` on each mode ``omega_k`` of ``spec`` (shape of ``spec.omega``)."""
        raise NotImplementedError

    def is_plain(self, spec: Spectrum) -> bool:
        """True if the penalty is the plain ridge on ``spec`` (every ``g_k`` is 1): the
        transformed problem is the original one, bit for bit."""
        return bool(np.all(self.factors(spec) == 1.0))

    def transform(self, spec: Spectrum) -> Spectrum:
        """The spectrum of the plain-ridge problem in ``w' = Gamma^{1/2} w``: modes ``omega_k / g_k``,
        the same bulk weights, teacher weights ``g_k theta_k^2``, the same noise (``spec`` itself
        where the penalty is plain).

        Raises
        ------
        ValueError
            If the transformed eigenvalues leave the range a Spectrum holds (``(0, 1e150]``, largest
            at least 1e-100): ``g`` too large or too small for the spectrum.
        """
        g = self.factors(spec)
        if np.all(g == 1.0):
            return spec
        with np.errstate(over="ignore", under="ignore"):
            omega, teacher = spec.omega / g, spec.teacher * g
        try:
            return Spectrum(omega=omega, bulk=spec.bulk, teacher=teacher, noise=spec.noise)
        except ValueError as exc:
            raise ValueError(f"the penalty {self!r} maps the spectrum out of range (eigenvalues "
                             f"omega / g in [{omega.min():.3g}, {omega.max():.3g}], teacher weights "
                             f"g theta^2 up to {teacher.max():.3g}): {exc}") from None

    def _metric(self, spec: Spectrum) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(omega / g, b / g, c)``: the modes at which the plain estimation-error summand, summed,
        is the error in the original metric (the summand is linear in ``b`` and ``c``)."""
        g = self.factors(spec)
        with np.errstate(over="ignore", under="ignore"):
            return spec.omega / g, spec.bulk / g, spec.teacher

    def estimation_error(self, spec: Spectrum, lam: float, V_hat: float, q_hat: float,
                         m_hat: float) -> float:
        """``E |w_hat - w*|^2`` in the original metric from the hats of the transformed problem.

        Parameters
        ----------
        spec : Spectrum
            The ORIGINAL spectrum (of Sigma and w*), not :meth:`transform`'s.
        lam, V_hat, q_hat, m_hat : float
            Ridge strength and the hats at the saddle point (V_hat > 0 or lam > 0).

        Notes
        -----
        ``sum_k [c_k (m_hat w_k / (lam + V_hat w_k) - 1)^2 + (b_k / g_k) q_hat w_k / (lam + V_hat w_k)^2]``
        with ``w_k = omega_k / g_k`` (docs/theory.md, section 8). Overflow of the squared
        denominators at huge lam is the rounded value 0, as in :func:`.prior.estimation_error`.
        """
        omega, bulk, teacher = self._metric(spec)
        with np.errstate(over="ignore"):
            est = compiled_estimation()[0](omega, bulk, teacher, lam, V_hat, q_hat, m_hat)
        return float(np.sum(np.broadcast_to(est, omega.shape)))

    def estimation_error_reduced(self, spec: Spectrum, kappa: float, eg: float, alpha: float) -> float:
        """The same for the square loss with the gaussian channel, from the reduced variables
        (``kappa = lam / V_hat``, eg, alpha; :func:`.potentials.estimation`), finite at lam = 0;
        inf where eg is. ``spec`` is the original spectrum."""
        if not math.isfinite(eg):
            return math.inf
        omega, bulk, teacher = self._metric(spec)
        est = compiled_estimation()[1](omega, bulk, teacher, kappa, eg, alpha)
        return float(np.sum(np.broadcast_to(est, omega.shape)))


class Ridge(Penalty):
    """The plain ridge ``(lam p / 2) |w|^2`` (``g = 1``): today's prior side (:mod:`.prior`),
    the same numbers bit for bit."""

    name = "ridge"

    def factors(self, spec: Spectrum) -> np.ndarray:
        return np.ones(spec.omega.shape)

    def is_plain(self, spec: Spectrum) -> bool:
        return True

    def transform(self, spec: Spectrum) -> Spectrum:
        return spec

    def estimation_error(self, spec, lam, V_hat, q_hat, m_hat) -> float:
        return prior.estimation_error(spec, lam, V_hat, q_hat, m_hat)

    def __repr__(self) -> str:
        return "Ridge()"

    def __eq__(self, other) -> bool:
        return type(other) is Ridge

    def __hash__(self) -> int:
        return hash("Ridge")


class ShapedRidge(Penalty):
    """The covariance-shaped ridge ``(lam p / 2) w^T Gamma w``, ``Gamma = g(Sigma)``
    (docs/theory.md, section 8).

    Parameters
    ----------
    power : float, optional
        ``Gamma = Sigma^power`` (``g(omega) = omega^power``); 0 is the plain ridge, 1 penalises
        ``w^T Sigma w`` (the variance of the field), -1 ``w^T Sigma^-1 w``.
    g : callable, optional
        ``g(omega) -> array``: one finite value > 0 per eigenvalue, for a 1-d array ``omega`` of
        eigenvalues of Sigma (read-only; the modes of a spectrum, also quadrature nodes in the
        thermodynamic limit). Give exactly one of ``power`` and ``g``.

    Raises
    ------
    TypeError
        If ``power`` is not a real number, or ``g`` is not callable.
    ValueError
        If neither or both of ``power`` and ``g`` are given, or ``power`` is not finite. The values
        of ``g`` are checked where a spectrum is met: ValueError unless one finite value > 0 per
        eigenvalue.
    """

    name = "shaped_ridge"

    def __init__(self, power: float | None = None, *, g: Callable | None = None) -> None:
        if (power is None) == (g is None):
            raise ValueError("ShapedRidge takes exactly one of power= (Gamma = Sigma^power) and g= "
                             "(Gamma = g(Sigma), a callable of the eigenvalues)")
        if power is not None:
            self.power: float | None = _checks.as_scalar(power, "power")
            self.g = None
        else:
            if not callable(g):
                raise TypeError(f"g must be a callable g(omega) -> array of one value > 0 per "
                                f"eigenvalue, got {type(g).__name__}")
            self.power, self.g = None, g

    def factors(self, spec: Spectrum) -> np.ndarray:
        omega = spec.omega
        if self.power is not None:
            if self.power == 0.0:
                return np.ones(omega.shape)
            with np.errstate(over="ignore", under="ignore"):
                g = omega ** self.power
            bad = ~(np.isfinite(g) & (g > 0))
            if bad.any():
                raise ValueError(f"power={self.power:g} gives Sigma^power outside float64 on this spectrum "
                                 f"(omega in [{omega.min():.3g}, {omega.max():.3g}]): g = omega^power must "
                                 "be finite and > 0")
            return g
        out = self.g(omega)
        try:
            g = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"g must return real numbers, one per eigenvalue; got {type(out).__name__}") \
                from None
        if g.shape != omega.shape:
            raise ValueError(f"g must return one value per eigenvalue: an array of shape {omega.shape}, "
                             f"got shape {g.shape}")
        bad = ~(np.isfinite(g) & (g > 0))
        if bad.any():
            raise ValueError(f"g must return finite values > 0 (Gamma = g(Sigma) positive definite); got "
                             f"{g[bad][0]!r} at omega = {omega[bad][0]:.6g}")
        return g

    def __repr__(self) -> str:
        if self.power is not None:
            return f"ShapedRidge(power={self.power:g})"
        return f"ShapedRidge(g={getattr(self.g, '__name__', repr(self.g))})"


def resolve(penalty) -> Penalty:
    """The :class:`Penalty` of a ``penalty=`` argument: None is :class:`Ridge`, a Penalty itself.

    Raises
    ------
    TypeError
        For anything else.
    """
    if penalty is None:
        return Ridge()
    if isinstance(penalty, Penalty):
        return penalty
    raise TypeError(f"penalty must be None (the ridge) or a Penalty of replica_mlm.theory.sides.penalties "
                    f"(Ridge() or ShapedRidge(power=... or g=...)), got {type(penalty).__name__}")


def refuse(penalty, route: str) -> None:
    """ValueError unless ``penalty`` is None or the plain :class:`Ridge` (``route`` names where it
    does not apply, e.g. ``"theory='mixture'"``)."""
    if penalty is not None and not isinstance(resolve(penalty), Ridge):
        raise ValueError(f"penalty= applies to the Gaussian-covariate theory of a scalar task (the fast "
                         f"path and the general engine); {route} takes the ridge only (penalty=None), "
                         f"got {penalty!r}")


def corrected(penalty: Penalty, spec: Spectrum, result):
    """``result`` (a SaddlePoint or a LearningCurve solved on ``penalty.transform(spec)``) with its
    estimation error in the original metric; ``result`` itself where the penalty is plain.

    ``spec`` is the original spectrum. The reduced form (:meth:`Penalty.estimation_error_reduced`)
    is used where ``result.method == "root"`` (exact also at lam = 0), the hats otherwise.
    """
    if penalty.is_plain(spec):
        return result
    scalar = np.ndim(result.eg) == 0
    cols = [np.atleast_1d(np.asarray(getattr(result, k), dtype=float))
            for k in ("alpha", "kappa", "eg", "V_hat", "q_hat", "m_hat")]
    if result.method == "root":
        est = [penalty.estimation_error_reduced(spec, k, e, a) for a, k, e, *_ in zip(*cols, strict=True)]
    else:
        est = [penalty.estimation_error(spec, result.lam, vh, qh, mh)
               for *_, vh, qh, mh in zip(*cols, strict=True)]
    return dataclasses.replace(result, estimation_error=est[0] if scalar else np.array(est))
