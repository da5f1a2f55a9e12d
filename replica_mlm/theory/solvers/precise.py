"""The reduced saddle point at arbitrary precision: :func:`.root.solve_reduced` on mpmath numbers.

Used by ``solve(..., precision=digits)`` for near-singular points (alpha near 1, lam -> 0) and for
checking asymptotic expansions at 30-100 digits. The algorithm is that of :mod:`.root`, run on
the backend :func:`.backend.mpmath_backend` (numpy object arrays of ``mpmath.mpf``) with 10 guard
digits; finite spectra are taken as exact (their float64 eigenvalues promoted), the
thermodynamic limit supplies its quadrature at the requested precision.
"""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solvers import root
from replica_mlm.theory.solvers.backend import mpmath_backend

GUARD = 10


class PrecisionFailure(ArithmeticError):
    """Newton's method did not reach the requested digits (turned into ConvergenceError by solve)."""

    def __init__(self, message: str, *, kappa, step, iterations: int) -> None:
        super().__init__(message)
        self.kappa, self.step, self.iterations = kappa, step, iterations


class PreciseSpectrum:
    """Modes, weights and noise as mpmath numbers; bulk weights renormalised to sum to one.

    ``omega``, ``bulk`` and ``teacher`` are numpy object arrays of ``mpmath.mpf``, so that
    :func:`.root.solve_reduced` treats this spectrum like a float64 :class:`.Spectrum`.
    """

    def __init__(self, omega, bulk, teacher, noise) -> None:
        def array(xs):
            return np.array([mpmath.mpf(x) for x in xs] or [], dtype=object)

        self.omega = array(omega)
        total = mpmath.fsum(mpmath.mpf(x) for x in bulk)
        self.bulk = array([mpmath.mpf(x) / total for x in bulk])
        self.teacher = array(teacher)
        self.noise = mpmath.mpf(noise)
        self.rho = mpmath.fsum(c * w for c, w in zip(self.teacher, self.omega, strict=True))
        self.mean_omega = mpmath.fsum(b * w for b, w in zip(self.bulk, self.omega, strict=True))

    def moment(self, weights: str, k: int):
        """``sum_j weight_j omega_j^k`` for ``weights`` in {"bulk", "teacher"}."""
        ws = self.bulk if weights == "bulk" else self.teacher
        return mpmath.fsum(x * w**k for x, w in zip(ws, self.omega, strict=True))


def precise_spectrum(task, spec: Spectrum, dps: int) -> PreciseSpectrum:
    """The task's spectrum at ``dps`` digits: the limit's own quadrature, or the float one promoted."""
    make = getattr(task, "mp_spectrum", None)
    if make is not None:
        return PreciseSpectrum(*make(dps))
    return PreciseSpectrum(spec.omega.tolist(), spec.bulk.tolist(), spec.teacher.tolist(), spec.noise)


def solve_precise(task, spec: Spectrum, alpha: float, lam: float, dps: int,
                  max_iter: int | None = None) -> dict:
    """Saddle point at ``dps`` significant digits. Returns mpmath numbers keyed like :mod:`.root`.

    :func:`.root.solve_reduced` with the mpmath backend at ``dps + GUARD`` digits: Newton's
    method stops when the relative step is below ``10^-(dps + 5)`` or |G| is at the rounding
    level of its terms at the working precision; the raw-equation residual then decides whether
    the point converged (:func:`.root.converged`, residual <= ``10^-dps``; key ``converged``).
    ``max_iter`` overrides the backend's Newton step limit (2000).
    """
    with mpmath.workdps(dps + GUARD):
        ps = precise_spectrum(task, spec, dps)
        backend = mpmath_backend(dps, GUARD)
        if max_iter is not None:
            backend = dataclasses.replace(backend, max_iter=max_iter)
        try:
            out = root.solve_reduced(ps, mpmath.mpf(alpha), mpmath.mpf(lam), backend=backend)
        except root.NewtonFailure as exc:
            kappa = exc.kappa[0]
            raise PrecisionFailure(f"Newton's method did not reach {dps} digits in {exc.iterations} steps",
                                   kappa=kappa, step=abs(exc.step[0] / kappa),
                                   iterations=exc.iterations) from None
        res = {}
        for name in root.FIELDS:
            value = out[name][0]
            res[name] = int(value) if name == "iterations" else +mpmath.mpf(value)
        res["regime"] = int(out["regime"][0])
        res["converged"] = bool(root.converged(out, backend=backend)[0])
        return res
