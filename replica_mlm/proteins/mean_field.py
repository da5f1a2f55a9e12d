"""Mean-field direct coupling analysis (mfDCA, Morcos et al. 2011): the baseline for contacts.

Couplings are minus the inverse of the connected correlation matrix of the reweighted,
pseudocount-regularised one- and two-site frequencies, with the gap (colour 0) as the reference
state (its rows and columns are left out of the inversion and are zero in the couplings).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from replica_mlm._base import checks as _checks
from replica_mlm.proteins.msa import MSA


def frequencies(msa: MSA, *, reweight: float | None = 0.8,
                pseudocount: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Regularised one-site (L, q) and two-site (L, L, q, q) frequencies.

    f_i = (1 - lam) f_i^data + lam / q and f_ij = (1 - lam) f_ij^data + lam / q^2 for i != j,
    f_ii(a, b) = f_i(a) delta_ab, with sequence weights at identity ``reweight`` (None: all 1).
    """
    if not isinstance(msa, MSA):
        raise TypeError(f"msa must be an MSA, got {type(msa).__name__}")
    w = np.ones(msa.N) if reweight is None else msa.weights(reweight)
    return weighted_frequencies(msa.sequences, w, msa.q, pseudocount=pseudocount)


def weighted_frequencies(s: np.ndarray, w: np.ndarray, q: int, *,
                         pseudocount: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """:func:`frequencies` of sequences ``s`` (N, L) with weights ``w`` (N,), checked by the caller."""
    lam = _checks.as_scalar(pseudocount, "pseudocount")
    if not 0 <= lam < 1:
        raise ValueError(f"pseudocount must be in [0, 1), got {lam}")
    N, L = s.shape
    _checks.allocation(8 * (L * q) ** 2, "the two-site frequencies (L q)^2")
    X = np.zeros((N, L * q))
    X[np.arange(N)[:, None], np.arange(L) * q + s] = 1.0
    w = w / w.sum()
    fi = (w @ X).reshape(L, q)
    fij = ((X * w[:, None]).T @ X).reshape(L, q, L, q).transpose(0, 2, 1, 3)
    fi = (1 - lam) * fi + lam / q
    fij = (1 - lam) * fij + lam / q**2
    idx = np.arange(L)
    fij[idx, idx] = fi[:, :, None] * np.eye(q)
    return fi, fij


def mean_field_couplings(msa: MSA, *, reweight: float | None = 0.8,
                         pseudocount: float = 0.5) -> np.ndarray:
    """Mean-field DCA couplings J, shape (L, L, q, q), gap as the reference state.

    Parameters
    ----------
    msa : MSA
    reweight : float or None
        Identity threshold of the sequence weights (:meth:`MSA.weights`); None: no reweighting.
    pseudocount : float in [0, 1)
        Weight lam of the uniform distribution mixed into the frequencies.

    Returns
    -------
    ndarray, shape (L, L, q, q)
        J_ij(a, b) = -(C^-1)_{ia, jb} over the amino acids a, b = 1..q-1, where
        C_{ia, jb} = f_ij(a, b) - f_i(a) f_j(b); zero for the gap and on the diagonal i = j.
        Score pairs with :func:`replica_mlm.proteins.contacts.coupling_scores`.
    """
    return couplings_from_frequencies(*frequencies(msa, reweight=reweight, pseudocount=pseudocount))


def couplings_from_frequencies(fi: np.ndarray, fij: np.ndarray) -> np.ndarray:
    """Mean-field couplings ``-(C^-1)`` from the frequencies of :func:`weighted_frequencies`
    (see :func:`mean_field_couplings`)."""
    L, q = fi.shape
    C = fij[:, :, 1:, 1:] - fi[:, None, 1:, None] * fi[None, :, None, 1:]
    C = C.transpose(0, 2, 1, 3).reshape(L * (q - 1), L * (q - 1))
    # C is the covariance of the pseudocount mixture: positive definite for a pseudocount > 0,
    # inverted through its Cholesky factor (half the work of a general inverse)
    factor, info = lapack.dpotrf(C, lower=0, overwrite_a=1)
    if info != 0:
        raise ValueError("the connected correlations are singular (a state never seen with pseudocount 0): "
                         "mean-field couplings need a pseudocount in (0, 1)")
    inv, info = lapack.dpotri(factor, lower=0, overwrite_c=1)
    inv = np.triu(inv) + np.triu(inv, 1).T
    inv = inv.reshape(L, q - 1, L, q - 1).transpose(0, 2, 1, 3)
    J = np.zeros((L, L, q, q))
    J[:, :, 1:, 1:] = -inv
    idx = np.arange(L)
    J[idx, idx] = 0.0
    return J


def mean_field_fields(fi: np.ndarray, J: np.ndarray) -> np.ndarray:
    """Mean-field fields ``h_i(a) = log(f_i(a) / f_i(0)) - sum_{j != i} sum_b J_ij(a, b) f_j(b)``.

    The fields of the mean-field model with couplings ``J`` (:func:`couplings_from_frequencies`,
    zero for the gap and on the diagonal) whose one-site marginals are ``fi`` (L, q) in the
    mean-field approximation, the gap as the reference state (``h_i(0) = 0``; Morcos et al. 2011).
    """
    return np.log(fi / fi[:, :1]) - np.einsum("ijab,jb->ia", J, fi)
