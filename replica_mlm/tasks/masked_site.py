"""One masked site: linear regression of x_i on x_-i with intrinsic label noise."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.spectrum import Spectrum


class MaskedSite:
    """Gaussian-covariate ridge task ``y = w* . x + sqrt(sigma^2) xi``, ``x ~ N(0, Sigma)``.

    For the Gaussian Potts model (docs/theory.md, section 1) masking site i gives
    ``Sigma = C_{-i,-i}``, ``w* = -P_{-i,i} / P_ii`` and ``sigma^2 = 1 / P_ii``
    (see :meth:`GaussianPotts.masked_site`); any other covariance, teacher and noise define
    an equally valid task.

    Parameters
    ----------
    covariance : array, shape (p, p)
        Symmetric positive-definite covariance Sigma of the inputs, with trace (the sum of its
        eigenvalues) at most 1e150 (``_checks.MAX_MAGNITUDE``: beyond, products overflow).
    teacher : array, shape (p,)
        Teacher weights w*, with ``|w*|^2`` at most 1e150.
    noise : float
        Label noise variance sigma^2 >= 0.
    channel : str or rm.channels.Channel
        How labels arise from the teacher field ``nu = w* . x``: a name in
        ``rm.channels.names()`` -- ``"gaussian"``, ``y = nu + sigma xi`` (default, the Gaussian
        Potts site), ``"sign"``, ``y = sign(nu + sigma xi)``, or ``"logit"``,
        ``P(y | nu) = 1 / (1 + exp(-y nu))`` (an Ising spin) -- or a channel of one's own
        (``rm.channels.Channel``). Solvers and simulations use it as the default channel of the
        task; the name is checked there, by the one registry of channels
        (:func:`replica_mlm.theory.sides.channels.resolve`, which also refuses a nonzero noise
        for a channel that does not use it, e.g. ``"logit"``).

    Attributes
    ----------
    default_loss : str
        ``"square"`` (ridge MLM), whatever the channel: the loss :func:`replica_mlm.solve` and
        :func:`replica_mlm.simulate` use when none is named (:class:`~replica_mlm.tasks.protocol.Task`).
    """

    default_loss = "square"

    def __init__(self, *, covariance, teacher, noise: float, channel="gaussian") -> None:
        self.covariance = _checks.positive_definite(covariance, "covariance")
        _checks.not_vanishing(self.covariance, "covariance")
        self.teacher = _checks.bounded_array(teacher, "teacher", ndim=1)
        if self.teacher.shape[0] != self.covariance.shape[0]:
            raise ValueError(
                f"teacher has length {self.teacher.shape[0]} but covariance is "
                f"{self.covariance.shape}: they must match"
            )
        norm2 = float(np.dot(self.teacher / _checks.MAX_MAGNITUDE, self.teacher))
        if norm2 > 1.0:  # then rho = w*^T Sigma w* <= |w*|^2 tr Sigma <= 1e300 stays finite
            raise ValueError(f"teacher has norm |w*| = {np.sqrt(norm2) * 1e75:.3g}; |w*|^2 must be at most "
                             f"{_checks.MAX_MAGNITUDE:.0e} (it is the sum of the spectrum's teacher weights, "
                             "and w*^T Sigma w* would overflow): rescale the data")
        self.noise = _checks.nonnegative(noise, "noise")
        if not (isinstance(channel, str) or callable(getattr(channel, "sample", None))):
            raise TypeError(f"channel must be a name (a str) or a rm.channels.Channel, got "
                            f"{type(channel).__name__}")
        self.channel = channel
        self.covariance.setflags(write=False)
        self.teacher.setflags(write=False)

    def __repr__(self) -> str:
        extra = "" if self.channel == "gaussian" else f", channel={self.channel!r}"
        return f"MaskedSite(p={self.p}, rho={self.rho:.6g}, noise={self.noise:.6g}{extra})"

    @property
    def p(self) -> int:
        """Number of inputs (unmasked sites), p = L - 1 for a Potts model."""
        return self.covariance.shape[0]

    @cached_property
    def _eigh(self) -> tuple[np.ndarray, np.ndarray]:
        omega, u = np.linalg.eigh(self.covariance)
        return omega, u

    @cached_property
    def _eigen_teacher(self) -> np.ndarray:
        """The teacher in the eigenbasis of Sigma, ``U^T w*``."""
        return self._eigh[1].T @ self.teacher

    @cached_property
    def spectrum(self) -> Spectrum:
        """Eigenvalues of Sigma with bulk weights 1/p and teacher weights (u_k . w*)^2."""
        omega, _ = self._eigh
        theta = self._eigen_teacher
        return Spectrum(
            omega=omega, bulk=np.full(self.p, 1.0 / self.p), teacher=theta**2, noise=self.noise
        )

    @property
    def rho(self) -> float:
        """Teacher signal rho = w*^T Sigma w*."""
        return float(self.teacher @ self.covariance @ self.teacher)

    @property
    def c_ii(self) -> float:
        """Variance of the label, rho + sigma^2 (= C_ii for a Potts site)."""
        return self.rho + self.noise

    def generalisation_error(self, weights) -> np.ndarray:
        """eg = sigma^2 + (w - w*)^T Sigma (w - w*) for weights of shape (p,) or (p, k)."""
        w = _checks.finite_array(weights, "weights")
        if w.ndim not in (1, 2) or w.shape[0] != self.p:
            raise ValueError(f"weights must have shape (p,) or (p, k) with p = {self.p}, got {w.shape}")
        d = w - (self.teacher if w.ndim == 1 else self.teacher[:, None])
        omega, u = self._eigh
        proj = u.T @ d
        return self.noise + np.einsum("k,k...->...", omega, proj**2)

    def sample(self, n: int, *, rng: _checks.RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` samples: X of shape (n, p) with rows ~ N(0, Sigma), and y of shape (n,).

        ``rng`` is an int seed or a numpy Generator.
        """
        n = _checks.positive_int(n, "n")
        gen = _checks.as_generator(rng)
        # the normal draw, its scaled copy and X, plus y and its noise
        _checks.allocation(8 * (3 * n * self.p + 3 * n), f"sample(n={n}) on p = {self.p} inputs")
        omega, u = self._eigh
        x = (gen.standard_normal((n, self.p)) * np.sqrt(omega)) @ u.T
        y = x @ self.teacher + np.sqrt(self.noise) * gen.standard_normal(n)
        return x, y

    def draw(self, n: int, rng: _checks.RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """A training set's inputs in the eigenbasis of Sigma (a
        :class:`~replica_mlm.tasks.protocol.DrawnTask`).

        The inputs are those of :meth:`sample` rotated by ``U`` (``x' = x U = z sqrt(omega)``, the
        same normal draws without the n p^2 rotation); every measure of a linear fit is invariant
        under the rotation, and :meth:`measures` reads weights in this basis. The labels are the
        channel's to draw from the teacher's field (``channel.sample(nu, noise, rng)`` with the
        same generator, :class:`replica_mlm.theory.sides.channels.Channel`).

        Returns
        -------
        x : ndarray, shape (n, p)
        nu : ndarray, shape (n,)
            The teacher's field ``w* . x``.
        """
        n = _checks.positive_int(n, "n")
        gen = _checks.as_generator(rng)
        omega, _ = self._eigh
        x = gen.standard_normal((n, self.p)) * np.sqrt(omega)
        return x, x @ self._eigen_teacher

    def measures(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Exact test measures of weights (p, k) in the eigenbasis of Sigma (that of :meth:`draw`).

        Returns
        -------
        dict
            ``m`` (``w*^T Sigma w``), ``q`` (``w^T Sigma w``), ``error`` (``sigma^2 + (w - w*)^T
            Sigma (w - w*)``, the generalisation error of the gaussian channel) and
            ``estimation_error`` (``|w - w*|^2``), each of shape (k,).
        """
        w = np.asarray(weights, dtype=float)
        if w.ndim != 2 or w.shape[0] != self.p:
            raise ValueError(f"weights must have shape (p, k) with p = {self.p}, got {w.shape}")
        omega, _ = self._eigh
        teacher = self._eigen_teacher
        sw = omega[:, None] * w  # Sigma w in the eigenbasis
        d = w - teacher[:, None]
        return {"m": teacher @ sw, "q": np.einsum("ij,ij->j", w, sw), "error": self.noise + omega @ d**2,
                "estimation_error": np.sum(d**2, axis=0)}
