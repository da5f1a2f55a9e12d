"""Contact scores from fitted couplings (minimal version of the issue-24 contract).

:func:`coupling_scores` is the score of plmDCA (Ekeberg et al. 2013): couplings in the zero-sum
gauge, Frobenius norm of each ``q x q`` block over the amino acids ``a, b >= 1`` (the gap colour 0
excluded, the usual choice), then the average product correction (:func:`apc`).
"""

from __future__ import annotations

import numpy as np

from replica_mlm import _checks
from replica_mlm.learners.attention import zero_sum_gauge

__all__ = ["apc", "coupling_scores"]


def apc(scores) -> np.ndarray:
    """Average product correction ``S_ij - S_i. S_.j / S_..`` (means over ``j != i``), zero diagonal.

    Parameters
    ----------
    scores : array (L, L)
        Symmetric raw scores, ``L >= 3``; the diagonal is ignored.
    """
    S = _checks.square_matrix(scores, "scores")
    L = S.shape[0]
    if L < 3:
        raise ValueError(f"scores must be at least 3 x 3 for the average product correction, got {S.shape}")
    off = ~np.eye(L, dtype=bool)
    S = np.where(off, S, 0.0)
    row = S.sum(axis=1) / (L - 1)
    total = S.sum() / (L * (L - 1))
    if total == 0.0:
        return S
    out = S - np.outer(row, row) / total
    out[~off] = 0.0
    return out


def coupling_scores(couplings, *, apc: bool = True) -> np.ndarray:
    """Contact scores (L, L) from couplings (L, L, q, q): zero-sum gauge, gap-free Frobenius norm.

    ``couplings[i, j, a, b]`` couples colour ``a`` at column ``i`` to colour ``b`` at column ``j``;
    the blocks are symmetrised (``(W_ij + W_ji^T) / 2``), put in the zero-sum gauge, and scored
    by ``|W_ij[1:, 1:]|_F`` (colour 0 is the gap, excluded). With ``apc`` (default) the average
    product correction is applied. The result is symmetric with a zero diagonal.
    """
    W = _checks.finite_array(couplings, "couplings", ndim=4)
    if W.shape[0] != W.shape[1] or W.shape[2] != W.shape[3] or W.shape[2] < 2:
        raise ValueError(f"couplings must have shape (L, L, q, q) with q >= 2, got {W.shape}")
    do_apc = _checks.flag(apc, "apc")
    W = zero_sum_gauge(0.5 * (W + W.transpose(1, 0, 3, 2)))
    S = np.sqrt(np.sum(W[:, :, 1:, 1:] ** 2, axis=(2, 3)))
    np.fill_diagonal(S, 0.0)
    return _apc(S) if do_apc else S


_apc = apc
