"""The Gaussian (mean-field) Potts model: x ~ N(0, C), C = (s I - J)^{-1} (docs/theory.md, section 1)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.gaussian_potts_limit import GaussianPottsLimit
from replica_mlm.tasks.masked_site import MaskedSite


def goe(L: int, *, rng: _checks.RngLike = None) -> np.ndarray:
    """GOE(L) matrix: symmetric, J_ij ~ N(0, 1/L) off the diagonal, J_ii ~ N(0, 2/L)."""
    L = _checks.positive_int(L, "L")
    gen = _checks.as_generator(rng)
    # the L x L draw, its symmetrisation, the checks' copies, the precision and its factor
    _checks.allocation(8 * 8 * L * L, f"a GOE coupling matrix of size L = {L}")
    a = gen.standard_normal((L, L))
    return (a + a.T) / np.sqrt(2 * L)


class GaussianPotts:
    """Gaussian relaxation of the Potts model with precision ``P = shift * I - J``.

    Parameters
    ----------
    couplings : array, shape (L, L)
        Symmetric coupling matrix J, entries at most 1e150 in magnitude (``_checks.MAX_MAGNITUDE``).
    shift : float
        The diagonal shift s; ``s I - J`` must be positive definite (s > largest eigenvalue
        of J; for a GOE J that tends to 2 as L grows).
    """

    def __init__(self, *, couplings, shift: float) -> None:
        self.couplings = _checks.symmetric_matrix(couplings, "couplings")
        self.shift = _checks.positive(shift, "shift")
        if self.couplings.shape[0] < 2:
            raise ValueError("couplings must be at least 2 x 2 (one site masked, one observed)")
        precision = self.shift * np.eye(self.L) - self.couplings
        try:
            np.linalg.cholesky(precision)
        except np.linalg.LinAlgError:
            top = float(np.linalg.eigvalsh(self.couplings)[-1])
            raise ValueError(
                f"shift={self.shift:g} is too small for these couplings: shift * I - J must be "
                f"positive definite, so shift must exceed the largest eigenvalue of J, {top:.6g}"
            ) from None
        self.couplings.setflags(write=False)

    @classmethod
    def random(cls, L: int, shift: float = 3.0, *, rng: _checks.RngLike = _checks.NOT_GIVEN,
               seed: _checks.RngLike = _checks.NOT_GIVEN) -> GaussianPotts:
        """A model with GOE couplings (docs/theory.md, section 1).

        ``rng`` is an int seed, a numpy Generator or None (fresh entropy, the default);
        ``seed=`` is its alias (kept from earlier versions; ValueError if both are given).
        """
        return cls(couplings=goe(L, rng=_checks.rng_or_seed(rng, seed)), shift=shift)

    @staticmethod
    def limit(shift: float = 3.0) -> GaussianPottsLimit:
        """A masked site in the thermodynamic limit L -> infinity (docs/limit.md).

        Usable wherever a :class:`MaskedSite` is accepted by the theory; ``shift`` must be > 2.
        """
        return GaussianPottsLimit(shift=shift)

    def __repr__(self) -> str:
        return f"GaussianPotts(L={self.L}, shift={self.shift:g})"

    @property
    def L(self) -> int:
        """Number of sites."""
        return self.couplings.shape[0]

    @cached_property
    def precision(self) -> np.ndarray:
        """P = shift * I - J."""
        p = self.shift * np.eye(self.L) - self.couplings
        p.setflags(write=False)
        return p

    @cached_property
    def covariance(self) -> np.ndarray:
        """C = P^{-1}, symmetrised."""
        chol = np.linalg.cholesky(self.precision)
        inv_chol = np.linalg.solve(chol, np.eye(self.L))
        c = inv_chol.T @ inv_chol
        c = 0.5 * (c + c.T)
        c.setflags(write=False)
        return c

    def masked_site(self, i: int) -> MaskedSite:
        """The regression task of predicting x_i from the other sites (docs/theory.md, section 1).

        ``w* = -P_{-i,i} / P_ii``, ``sigma^2 = 1 / P_ii`` and ``Sigma = C_{-i,-i}``.
        """
        if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer):
            raise TypeError(f"site index i must be an int, got {type(i).__name__} {i!r}")
        if not 0 <= i < self.L:
            raise ValueError(f"site index {i} is out of range: 0 <= i < L = {self.L}")
        keep = np.arange(self.L) != i
        p_ii = self.precision[i, i]
        return MaskedSite(
            covariance=self.covariance[np.ix_(keep, keep)],
            teacher=-self.precision[keep, i] / p_ii,
            noise=1.0 / p_ii,
        )
