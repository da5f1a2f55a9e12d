"""Sparse coupling matrices: periodic square lattices, random regular graphs, contact-map-like bands.

docs/discrete.md, section "Sparse couplings". Each function returns the symmetric coupling matrix
``J`` (zero diagonal) of :class:`~replica_mlm.potts.model.PottsModel`; the colours ``U`` are chosen
apart (:meth:`PottsModel.ising` for spins, ``U = identity`` for the standard Potts model). These
are the instances on which both dense theories of a site fail (a site's label depends on a few
neighbours, not on many weak terms) and the local theory is built for.
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import RngLike

__all__ = ["banded", "random_regular", "square_lattice"]

#: the sign patterns of the couplings: all +1 (ferromagnet) or independent +-1 (a glass)
SIGNS = ("ferro", "glass")


def square_lattice(side: int, *, signs: str = "ferro", rng: RngLike = 0) -> np.ndarray:
    """Nearest-neighbour couplings of a periodic ``side x side`` square lattice, ``L = side**2``.

    Parameters
    ----------
    side : int
        Sites per row, ``>= 3`` (so that the four neighbours of a site are distinct).
    signs : {"ferro", "glass"}
        ``J_ij = 1`` on every bond, or independent ``+-1`` (Edwards-Anderson). The Ising
        ferromagnet orders at ``beta_c = log(1 + sqrt 2) / 2 = 0.4407`` in the infinite lattice.
    rng : int, Generator or None
        Seed of the glass's signs (unused for the ferromagnet).

    Site ``(r, c)`` has index ``r * side + c``.
    """
    side = _checks.positive_int(side, "side")
    if side < 3:
        raise ValueError(f"side must be >= 3 (four distinct neighbours on a periodic lattice), got {side}")
    L = side * side
    _checks.allocation(8 * L * L, f"square_lattice(side={side})")
    index = np.arange(L).reshape(side, side)
    bonds = np.concatenate([np.stack([index.ravel(), np.roll(index, -1, axis=a).ravel()], axis=1)
                            for a in (0, 1)])
    return _couplings(L, bonds, signs, rng)


def random_regular(L: int, *, degree: int = 3, signs: str = "ferro", rng: RngLike = 0) -> np.ndarray:
    """Couplings on a random ``degree``-regular graph of ``L`` sites (no loops, no double edges).

    Drawn by pairing ``L * degree`` half-edges uniformly and redrawing a pairing that makes a loop
    or a double edge (uniform over simple regular graphs). ``signs`` as in :func:`square_lattice`;
    the ferromagnetic Ising model on it orders at ``tanh(beta_c) = 1 / (degree - 1)``, the +-1 glass at
    ``tanh(beta_c)**2 = 1 / (degree - 1)`` (the Bethe lattice).
    """
    L = _checks.positive_int(L, "L")
    degree = _checks.positive_int(degree, "degree")
    if degree >= L or (L * degree) % 2:
        raise ValueError(f"a {degree}-regular graph needs degree < L and L * degree even, got L = {L}")
    _checks.allocation(8 * L * L, f"random_regular(L={L})")
    gen = _checks.as_generator(rng)
    stubs = np.repeat(np.arange(L), degree)
    for _ in range(10_000):
        pairs = gen.permutation(stubs).reshape(-1, 2)
        pairs.sort(axis=1)
        if np.all(pairs[:, 0] != pairs[:, 1]) and np.unique(pairs, axis=0).shape[0] == pairs.shape[0]:
            return _couplings(L, pairs, signs, gen)
    raise ValueError(f"no simple {degree}-regular graph on {L} sites found in 10,000 pairings: "
                     "use a smaller degree")


def banded(L: int, *, width: int = 2, contacts: float = 1.0, rng: RngLike = 0) -> np.ndarray:
    """Contact-map-like couplings: a band ``|i - j| <= width`` and a few long-range contacts.

    Every pair in the band and ``round(contacts * L / 2)`` random pairs with ``|i - j| > width``
    (about ``contacts`` long-range partners per site, as a protein's contact map has besides its
    backbone) carry ``J_ij ~ N(0, 1)``. A site has about ``2 width + contacts`` neighbours, whatever
    ``L``, so the family follows a sparse site from ``L = 16`` to the thermodynamic limit.
    """
    L = _checks.positive_int(L, "L")
    width = _checks.positive_int(width, "width")
    contacts = _checks.nonnegative(contacts, "contacts")
    if L < 2 * width + 2:
        raise ValueError(f"L must be >= 2 width + 2 = {2 * width + 2}, got L = {L}")
    _checks.allocation(8 * L * L, f"banded(L={L})")
    gen = _checks.as_generator(rng)
    i, j = np.triu_indices(L, 1)
    far = (j - i) > width
    band = np.stack([i[~far], j[~far]], axis=1)
    extra = round(contacts * L / 2)
    chosen = gen.choice(int(far.sum()), size=min(extra, int(far.sum())), replace=False)
    pairs = np.concatenate([band, np.stack([i[far][chosen], j[far][chosen]], axis=1)])
    J = np.zeros((L, L))
    J[pairs[:, 0], pairs[:, 1]] = gen.standard_normal(pairs.shape[0])
    return J + J.T


def _couplings(L: int, pairs: np.ndarray, signs: str, rng) -> np.ndarray:
    signs = _checks.choice(signs, SIGNS, "signs")
    values = (np.ones(pairs.shape[0]) if signs == "ferro"
              else _checks.as_generator(rng).choice([-1.0, 1.0], size=pairs.shape[0]))
    J = np.zeros((L, L))
    J[pairs[:, 0], pairs[:, 1]] = values
    return J + J.T
