"""Contact scores from Potts couplings, and their precision against a structure.

``coupling_scores`` turns couplings J (L, L, q, q) into one score per pair of columns, the
pseudo-likelihood DCA convention (Ekeberg et al. 2013): each block J_ij put in the zero-sum gauge
over all q colours, its Frobenius norm over the amino acids only (the gap colour 0 excluded),
then the average product correction (APC, Dunn et al. 2008). ``contact_precision`` is the
fraction of true contacts among the top-ranked pairs.
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.learners.gauge import double_centre_in_place
from replica_mlm.proteins.structure import MappedStructure, Structure

#: bytes of couplings put in the zero-sum gauge at once by :func:`coupling_scores`
SCORE_BYTES = 1 << 24
_TOPS = {"L": 1, "L/2": 2, "L/5": 5, "L/10": 10}


def apc(scores) -> np.ndarray:
    """Average product correction: ``S_ij - S_i. S_.j / S_..`` (means over j != i), zero diagonal.

    Raises
    ------
    ValueError
        If scores is not a finite symmetric (L, L) matrix with L >= 3.
    """
    s = _checks.symmetric_matrix(scores, "scores").copy()
    L = s.shape[0]
    if L < 3:
        raise ValueError(f"scores must be at least 3 x 3 for the APC, got {L} x {L}")
    np.fill_diagonal(s, 0.0)
    row = s.sum(axis=1) / (L - 1)
    total = s.sum() / (L * (L - 1))
    out = s - np.outer(row, row) / total if total != 0 else s
    np.fill_diagonal(out, 0.0)
    return out


_apc = apc


def coupling_scores(couplings, *, apc: bool = True, include_gap: bool = False) -> np.ndarray:
    """One score per pair of columns from couplings J of shape (L, L, q, q).

    Each block J_ij is put in the zero-sum gauge (row and column means over all q colours
    removed), its Frobenius norm is taken over the amino acids a, b = 1..q-1 (the gap colour 0
    excluded, the usual choice; ``include_gap=True`` takes it over all q colours), the matrix
    is symmetrised ((F + F.T) / 2) and, if ``apc``, the average product correction is applied.
    The diagonal is zero.

    Returns
    -------
    ndarray, shape (L, L)
    """
    J = _checks.real_array(couplings, "couplings")  # read a band of rows at a time, never copied whole
    if J.ndim != 4 or J.size == 0 or J.shape[0] != J.shape[1] or J.shape[2] != J.shape[3] or J.shape[2] < 2:
        raise ValueError(f"couplings must have shape (L, L, q, q), got {J.shape}")
    L, q = J.shape[0], J.shape[2]
    first = 0 if _checks.flag(include_gap, "include_gap") else 1
    F = np.empty((L, L))
    rows = max(1, SCORE_BYTES // (8 * L * q * q))
    for k in range(0, L, rows):
        band = double_centre_in_place(_checks.finite_array(J[k:k + rows], "couplings", ndim=4))
        F[k:k + rows] = np.sqrt((band[:, :, first:, first:] ** 2).sum(axis=(2, 3)))
    F = (F + F.T) / 2
    np.fill_diagonal(F, 0.0)
    return _apc(F) if _checks.flag(apc, "apc") and L >= 3 else F


def _distances(structure_or_distances, L: int) -> np.ndarray:
    if isinstance(structure_or_distances, MappedStructure):
        d = structure_or_distances.distances
    elif isinstance(structure_or_distances, Structure):
        raise TypeError("structure_or_distances must be mapped to the alignment first: "
                        "structure.map_to(msa) (or pass structure.distances_for(msa))")
    else:
        d = _checks.real_array(structure_or_distances, "structure_or_distances")
    if d.shape != (L, L):
        raise ValueError(f"structure_or_distances must give an ({L}, {L}) distance matrix like "
                         f"scores, got shape {d.shape} (map the structure to the same msa)")
    if np.isinf(d).any() or (d < 0).any():
        raise ValueError("structure_or_distances must hold non-negative finite distances (NaN: no residue)")
    return d


@keywords
def contact_precision(scores, structure_or_distances, *, top: str | int = "L/5",
                      min_separation: int = 6, cutoff: float = 8.0) -> float:
    """Fraction of true contacts among the highest-scoring pairs of columns.

    Parameters
    ----------
    scores : array, shape (L, L)
        Pair scores (:func:`coupling_scores`); only i < j is read.
    structure_or_distances : MappedStructure or array (L, L)
        A structure mapped to the msa the scores were computed on
        (``structure.map_to(msa)``, or what ``rm.datasets.protein_family`` returns), or a
        distance matrix over the same columns. Pairs with a NaN distance (a column without a
        residue in the chain) are left out of the ranking.
    top : "L", "L/2", "L/5", "L/10" or int
        How many pairs to count: L // 5 for "L/5" (at least 1), with L the number of columns;
        all the eligible pairs if there are fewer.
    min_separation : int
        Only pairs with j - i >= min_separation (positions in the scores matrix) are ranked.
    cutoff : float
        A contact is a distance < cutoff (angstrom: C-beta < 8 by default).

    Ties in score are broken by (i, j) order, so the result does not depend on the sort.

    Raises
    ------
    ValueError
        Shapes that do not match, no eligible pair, or a wrong ``top``.
    TypeError
        A :class:`Structure` not mapped to an alignment.
    """
    s = _checks.finite_array(scores, "scores", ndim=2)
    L = s.shape[0]
    if s.shape != (L, L) or L < 2:
        raise ValueError(f"scores must be a square (L, L) matrix with L >= 2, got shape {s.shape}")
    d = _distances(structure_or_distances, L)
    sep = _checks.positive_int(min_separation, "min_separation")
    _checks.at_most(sep, L - 1, "min_separation", f"j - i of a pair of the L = {L} columns")
    cut = _checks.positive(cutoff, "cutoff")
    if isinstance(top, str):
        top = _checks.choice(top, tuple(_TOPS), "top")
        k = max(1, L // _TOPS[top])
    else:
        k = _checks.positive_int(top, "top")
    i, j = ranked_pairs(s, d, min_separation=sep)
    if i.size == 0:
        raise ValueError(f"no pair of columns with a distance and j - i >= min_separation = {sep}")
    return float(np.mean(d[i[:k], j[:k]] < cut))


def ranked_pairs(scores: np.ndarray, distances: np.ndarray, *,
                 min_separation: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(i, j)``, ``j - i >= min_separation``, with a distance, by decreasing score.

    Ties are broken by ``(i, j)`` order (a stable sort of the upper triangle, row by row): the
    ranking :func:`contact_precision` counts and the contact map draws.

    Parameters
    ----------
    scores, distances : array (L, L)
        Checked by the caller; pairs with a NaN distance are left out.
    min_separation : int
    """
    i, j = np.triu_indices(scores.shape[0], k=min_separation)
    keep = ~np.isnan(distances[i, j])
    i, j = i[keep], j[keep]
    order = np.argsort(-scores[i, j], kind="stable")
    return i[order], j[order]
