"""Swendsen-Wang cluster updates for ferromagnetic Potts models (docs/potts.md, "Cluster updates").

Single-site Gibbs stalls on a ferromagnet near and below its ordering temperature: the chains
stay in one ordered state, and at the transition the autocorrelation grows as a power of the
size. When every coupling is ferromagnetic (``J_ij >= 0``) and the colour matrix has the Potts
form ``U = a I + b 1 1^T`` with ``a > 0`` (the Ising model, ``U_ab = sigma_a sigma_b``, is
``a = 2, b = -1``), the Boltzmann weight is, up to a constant,
``exp(beta a sum_{i<j} J_ij [s_i = s_j])`` and the Fortuin-Kasteleyn representation gives an
exact cluster update (Swendsen & Wang 1987): every bond joining two equal colours is kept with
probability ``1 - exp(-beta a J_ij)``; each connected cluster of kept bonds then takes a new
colour, uniform over the ``q``. One update leaves the Boltzmann law invariant and moves whole
ordered domains, including the global flip between ordered states.

:func:`cluster_form` decides whether a model admits the update; :func:`cluster_sweep` performs
one update of every chain at once (the clusters of all chains from one sparse-graph search).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from replica_mlm.potts.kernel import PottsLike

__all__ = ["ClusterBonds", "cluster_form", "cluster_sweep", "refusal"]


def _potts_scale(U: np.ndarray) -> float | None:
    """``a`` when ``U = a I + b 1 1^T`` with ``a > 0``, else None."""
    q = U.shape[0]
    off, diag = U[~np.eye(q, dtype=bool)], np.diag(U)
    tol = 1e-12 * max(float(np.abs(U).max()), 1e-300)
    if q < 2 or np.ptp(off) > tol or np.ptp(diag) > tol or diag[0] <= off[0]:
        return None
    return float(diag[0] - off[0])


def cluster_form(model: PottsLike) -> float | None:
    """``a`` when ``U = a I + b 1 1^T`` with ``a > 0`` and every ``J_ij >= 0``; else None.

    Only then is the Swendsen-Wang update exact (its bond probabilities ``1 - exp(-beta a J_ij)``
    need ``a J_ij >= 0``; any other colour matrix weighs unequal colours differently).
    """
    a = _potts_scale(np.asarray(model.colours, dtype=float))
    return None if a is None or np.min(model.couplings) < 0 else a


def refusal(model: PottsLike) -> str | None:
    """Why the cluster update does not apply to ``model`` (None when it does)."""
    if cluster_form(model) is not None:
        return None
    why = []
    if np.min(model.couplings) < 0:
        why.append(f"a negative coupling (min J_ij = {float(np.min(model.couplings)):.3g})")
    if _potts_scale(np.asarray(model.colours, dtype=float)) is None:
        why.append("a colour matrix not of that form")
    return ('method="cluster" needs ferromagnetic couplings (every J_ij >= 0) and a colour matrix '
            "of the Potts form U = a I + b 1 1^T with a > 0 (Ising spins, or U = identity); "
            f"this model has {' and '.join(why)}")


class ClusterBonds:
    """The bonds of a model that admits the update: the pairs ``i < j`` with ``J_ij > 0`` and
    their keep probabilities ``1 - exp(-beta a J_ij)`` at the model's ``beta`` (ValueError naming
    why for a model that admits none)."""

    def __init__(self, model: PottsLike) -> None:
        a = cluster_form(model)
        if a is None:
            raise ValueError(refusal(model))
        J = np.asarray(model.couplings, dtype=float)
        i, j = np.nonzero(np.triu(J, 1) > 0)
        self.i, self.j = i, j
        self.J = J[i, j]
        self.keep = -np.expm1(-model.beta * a * self.J)
        self.q = model.q
        self.U = np.asarray(model.colours, dtype=float)

    def energies(self, s: np.ndarray) -> np.ndarray:
        """``H(s_c) = -sum_{i<j} J_ij U[s_ci, s_cj]`` of every chain (C,), without beta."""
        return -(self.U[s[:, self.i], s[:, self.j]] * self.J).sum(axis=1)


def cluster_sweep(bonds: ClusterBonds, s: np.ndarray, gen: np.random.Generator) -> None:
    """One Swendsen-Wang update of every chain ``s`` (C, L), in place.

    A bond of chain ``c`` is kept when its two sites have the same colour and a uniform draw falls
    below its keep probability; the clusters of all chains are the connected components of one
    graph on ``C L`` nodes (chain ``c``'s sites are nodes ``c L .. c L + L - 1``), and each takes a
    uniform new colour.
    """
    C, L = s.shape
    same = s[:, bonds.i] == s[:, bonds.j]
    kept = same & (gen.random(same.shape) < bonds.keep)
    c, b = np.nonzero(kept)
    rows, cols = c * L + bonds.i[b], c * L + bonds.j[b]
    graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(C * L, C * L))
    n, label = connected_components(graph, directed=False)
    s[:] = gen.integers(0, bonds.q, size=n)[label].reshape(C, L)
