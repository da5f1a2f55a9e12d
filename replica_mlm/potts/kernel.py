"""The Gibbs kernel of :class:`~replica_mlm.potts.model.PottsModel`: what every sampler needs.

A Gibbs state is a pair ``(s, Nq)``: the colours ``s`` (C, L) of ``C`` chains and their
colour-resolved local fields ``Nq[c, b, i] = sum_k J_ik [s_ck == b]`` (C, q, L), kept up to date
incrementally when a spin changes. Every function takes the model as an argument and reads only
its public attributes (``couplings``, ``colours``, ``beta``, ``L``, ``q``); the samplers
(:mod:`~replica_mlm.potts.sampling`, :mod:`~replica_mlm.potts.tempering`, the pilot runs of
:mod:`~replica_mlm.potts.pilot`) build on these.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["PottsLike", "colour_fields", "energies_from_fields", "gibbs_sweep", "init_fields"]


class PottsLike(Protocol):
    """What the samplers read of a Potts model: :class:`~replica_mlm.potts.model.PottsModel` is one.

    The kernel, the pilot runs, the samplers and the tuner take the model as an argument and use
    only these, so none of them imports the model's module (which builds on them).
    """

    L: int
    q: int
    beta: float
    couplings: np.ndarray
    colours: np.ndarray

    def with_beta(self, beta: float) -> PottsLike: ...

    def gibbs_diagnostics(self, **options: Any) -> Any: ...


def colour_fields(model: PottsLike, s: np.ndarray) -> np.ndarray:
    """``N[n, i, b] = sum_k J_ik [s_k == b]`` for checked sequences ``s`` (n, L): shape (n, L, q)."""
    X = np.eye(model.q)[s]  # (n, L, q) one-hot
    return np.matmul(model.couplings, X)


def init_fields(model: PottsLike, s: np.ndarray) -> np.ndarray:
    """Colour-major fields ``Nq[c, b, i] = sum_k J_ik [s_ck == b]``, shape (C, q, L).

    With this layout the update after a colour change of site ``k`` in chain ``c`` touches two
    contiguous rows of length L (``Nq[c, old, :]`` and ``Nq[c, new, :]``).
    """
    return np.ascontiguousarray(colour_fields(model, s).transpose(0, 2, 1))


def energies_from_fields(model: PottsLike, s: np.ndarray, Nq: np.ndarray) -> np.ndarray:
    """``H(s_c) = -1/2 sum_i sum_b Nq[c, b, i] U[s_ci, b]`` of every chain, shape (C,), without beta."""
    Ug = model.colours[s]  # (C, L, q): U[s_ci, b]
    return -0.5 * np.einsum("cbi,cib->c", Nq, Ug)


#: up to this many colours the draw of :func:`gibbs_sweep` reduces over the colours column by column:
#: numpy reduces a short row row by row, which made the sweep 1.2-1.7x slower at q = 2, 3 with 100 to
#: 1000 chains; above it numpy's own reductions are faster. Both give the same draws to the bit (the
#: maximum, a sequential cumulative sum, a count).
SHORT = 8


def _draw(z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """New colours of the chains with logits ``z`` (C, q), in place on ``z``, by inverting the
    cumulative distribution at the uniforms ``u`` (C,)."""
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    np.cumsum(z, axis=1, out=z)
    return (z < (u * z[:, -1])[:, None]).sum(axis=1)


def _draw_by_column(z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`_draw` with its reductions written over the q columns (same draws)."""
    q = z.shape[1]
    top = z[:, 0].copy()
    for b in range(1, q):
        np.maximum(top, z[:, b], out=top)
    z -= top[:, None]
    np.exp(z, out=z)
    for b in range(1, q):
        z[:, b] += z[:, b - 1]
    threshold = u * z[:, -1]
    new = (z[:, 0] < threshold).astype(np.int64)
    for b in range(1, q):
        new += z[:, b] < threshold
    return new


def gibbs_sweep(model: PottsLike, s: np.ndarray, Nq: np.ndarray, gen: np.random.Generator,
                betas: np.ndarray | None = None) -> None:
    """One systematic-scan Gibbs sweep of all chains, in place, with incremental fields.

    For each site ``i`` the logits of all chains are ``beta Nq[:, :, i] U`` (C x q times
    q x q), or ``betas[c] (Nq[c, :, i] U)`` with one inverse temperature per chain (parallel
    tempering); a new colour is drawn by inverting the cumulative distribution; for the chains
    whose colour changed the fields of every site move by ``J[i]`` from the old to the new
    colour row.
    """
    C = s.shape[0]
    bU = model.colours if betas is not None else model.beta * model.colours
    bcol = None if betas is None else np.asarray(betas, dtype=float)[:, None]
    J = model.couplings
    u = gen.random((model.L, C))
    by_column = model.q <= SHORT
    for i in range(model.L):
        z = Nq[:, :, i] @ bU
        if bcol is not None:
            z *= bcol
        new = _draw_by_column(z, u[i]) if by_column else _draw(z, u[i])
        old = s[:, i]
        chg = np.flatnonzero(new != old)
        if chg.size:
            newc = new[chg]
            oldc = old[chg]
            Nq[chg, oldc, :] -= J[i]
            Nq[chg, newc, :] += J[i]
            s[chg, i] = newc
