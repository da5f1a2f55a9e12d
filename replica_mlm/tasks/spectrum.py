"""Spectral description of a Gaussian-covariate ridge task: what the replica theory needs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks


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

    @classmethod
    def from_site(cls, site, method: str = "eigh", rank: int | None = None) -> Spectrum:
        """The spectral data the solver uses, from a site with ``covariance``, ``teacher`` and
        ``noise`` (a :class:`~replica_mlm.tasks.masked_site.MaskedSite`; docs/theory.md, section
        "Large p: the spectrum without eigenvectors").

        Parameters
        ----------
        site : MaskedSite
            Any object with a positive-definite ``covariance`` (p, p), a ``teacher`` (p,) and a
            ``noise`` (a MaskedSite has them checked).
        method : {"eigh", "lanczos"}
            ``"eigh"``: the full eigendecomposition, one mode per eigenvector with bulk weight 1/p
            and teacher weight ``(u_k . w*)^2`` (the site's own ``spectrum``). ``"lanczos"``: the
            eigenvalues alone (``eigvalsh``, bulk weights 1/p, teacher weight 0) plus the Gauss
            rule of the teacher's measure by Lanczos started from w* (:mod:`.lanczos`; nodes
            with bulk weight 0 and teacher weight ``|w*|^2 s_j^2``): no eigenvector matrix.
        rank : int, optional
            ``"lanczos"`` only: the number of Lanczos steps (nodes of the teacher's rule, at most
            p). None: until the rule has converged to rounding (the estimate of
            ``w*^T Sigma^-1 w*`` stable to 4 eps in two steps) or the Krylov space is exhausted.

        Raises
        ------
        TypeError
            If ``site`` lacks ``covariance``, ``teacher`` or ``noise``, or ``rank`` is not an int.
        ValueError
            For an unknown ``method``, ``rank`` < 1 or given with ``"eigh"``.
        """
        from replica_mlm._base.errors import ConvergenceError
        from replica_mlm.tasks import lanczos

        method = _checks.choice(method, ("eigh", "lanczos"), "method")
        missing = [a for a in ("covariance", "teacher", "noise") if not hasattr(site, a)]
        if missing:
            raise TypeError(f"site must have covariance, teacher and noise (a MaskedSite); "
                            f"{type(site).__name__} lacks {missing}")
        if rank is not None:
            rank = _checks.positive_int(rank, "rank")
            if method == "eigh":
                raise ValueError("rank is the number of Lanczos steps: give it with method='lanczos' "
                                 "only (None with 'eigh')")
        if method == "eigh":
            own = getattr(site, "spectrum", None)
            if isinstance(own, Spectrum):
                return own
            omega, u = np.linalg.eigh(site.covariance)
            return cls(omega=omega, bulk=np.full(omega.size, 1.0 / omega.size),
                       teacher=(u.T @ site.teacher) ** 2, noise=site.noise)
        cov = np.asarray(site.covariance, dtype=float)
        teacher = np.asarray(site.teacher, dtype=float)
        omega = np.linalg.eigvalsh(cov)
        rule = lanczos.gauss_rule(cov, teacher, steps=rank)
        if rank is None and not rule.exhausted and rule.change > lanczos.TOL:
            raise ConvergenceError(
                f"the Lanczos rule of the teacher's measure did not settle in {rule.steps} steps "
                "(give rank= to accept a fixed number of nodes)", last={"steps": rule.steps},
                residual=rule.change, iterations=rule.steps)
        nodes, bulk, weights = lanczos.modes(omega, rule)
        return cls(omega=nodes, bulk=bulk, teacher=weights, noise=site.noise)

    @cached_property
    def rho(self) -> float:
        """Teacher signal rho = w*^T Sigma w* (computed once: the arrays are read-only)."""
        return float(np.dot(self.teacher, self.omega))

    def moment(self, weights: str, k: int) -> float:
        """``sum_j weight_j omega_j^k`` for ``weights`` in {"bulk", "teacher"} (cached per k)."""
        key = (weights, k)
        cache = self.__dict__.setdefault("_moments", {})
        if key not in cache:  # only checked arguments enter the cache
            _checks.choice(weights, ("bulk", "teacher"), "weights")
            k = _checks.as_int(k, "k")
            ws = self.bulk if weights == "bulk" else self.teacher
            cache[key] = float(np.dot(ws, self.omega ** float(k)))
        return cache[key]

    @property
    def c_ii(self) -> float:
        """Variance of the masked site, C_ii = rho + sigma^2."""
        return self.rho + self.noise

    @cached_property
    def mean_omega(self) -> float:
        """Bulk mean of the eigenvalues, (1/p) tr Sigma (computed once)."""
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
