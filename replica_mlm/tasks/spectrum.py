"""Spectral description of a Gaussian-covariate ridge task: what the replica theory needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm import _checks


@dataclass(frozen=True, eq=False)
class Spectrum:
    """Modes of the covariance Sigma with their bulk and teacher weights (docs/theory.md, section 2).

    For a finite instance with ``Sigma = sum_k omega_k u_k u_k^T``: ``omega`` are the
    eigenvalues, ``bulk = 1/p`` each and ``teacher = theta_k^2 = (u_k . w*)^2``. In the
    thermodynamic limit the modes are quadrature nodes and the weights are those of the bulk
    density and of the teacher-weighted density (docs/limit.md).

    Parameters
    ----------
    omega : array, shape (K,)
        Mode eigenvalues, > 0 and at most 1e150 (``_checks.MAX_MAGNITUDE``, as for covariances).
    bulk : array, shape (K,)
        Weights of the bulk measure, >= 0, summing to one: (1/p) tr f(Sigma) = sum bulk f(omega).
    teacher : array, shape (K,)
        Teacher weights, >= 0 and at most 1e150: w*^T f(Sigma) w* = sum teacher f(omega).
    noise : float
        Intrinsic label noise variance sigma^2 >= 0.
    """

    omega: np.ndarray
    bulk: np.ndarray
    teacher: np.ndarray
    noise: float

    def __post_init__(self) -> None:
        omega = _checks.bounded_array(self.omega, "omega", ndim=1)
        bulk = _checks.finite_array(self.bulk, "bulk", ndim=1)
        teacher = _checks.bounded_array(self.teacher, "teacher", ndim=1)
        if not (omega.shape == bulk.shape == teacher.shape):
            raise ValueError(
                f"omega, bulk and teacher must have one shape, got {omega.shape}, {bulk.shape}, "
                f"{teacher.shape}"
            )
        if np.any(omega <= 0):
            raise ValueError(f"omega must be > 0 (Sigma positive definite), min is {omega.min():.3g}")
        _checks.not_vanishing(omega, "omega")
        if np.any(bulk < 0) or np.any(teacher < 0):
            raise ValueError("bulk and teacher weights must be >= 0")
        total = float(np.sum(bulk))
        if abs(total - 1.0) > 1e-10:
            raise ValueError(f"bulk weights must sum to 1, got {total!r}")
        noise = _checks.nonnegative(self.noise, "noise")
        for name, value in (("omega", omega), ("bulk", bulk), ("teacher", teacher)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "noise", noise)

    @property
    def rho(self) -> float:
        """Teacher signal rho = w*^T Sigma w*."""
        return float(np.dot(self.teacher, self.omega))

    @property
    def c_ii(self) -> float:
        """Variance of the masked site, C_ii = rho + sigma^2."""
        return self.rho + self.noise

    @property
    def mean_omega(self) -> float:
        """Bulk mean of the eigenvalues, (1/p) tr Sigma."""
        return float(np.dot(self.bulk, self.omega))

    @property
    def spectrum(self) -> Spectrum:
        """Itself, so that a Spectrum can be passed wherever a task is expected."""
        return self

    @property
    def channel(self) -> str:
        """``"gaussian"``: a spectrum alone describes the regression task (name another channel
        to the solver)."""
        return "gaussian"

    @property
    def default_loss(self) -> str:
        """``"square"``, the loss of ridge MLM (:class:`~replica_mlm.tasks.protocol.Task`)."""
        return "square"
