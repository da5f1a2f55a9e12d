"""Ridge weights along a path of ridge strengths, in closed form: :func:`ridge_path` (one SVD
for every lam, or one Cholesky factorisation of the Gram matrix per lam), the square-loss
estimator of :func:`.simulate.simulate`."""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks

#: ridge_path's Gram route: at lam = 0 its Cholesky factor must have a reciprocal condition number
#: (LAPACK dpocon, 1-norm) above this, else the SVD is used; far above the scale where the
#: Moore-Penrose cutoff of the SVD (singular values below max(n, p) eps s_max) can act, so both
#: routes give the same pseudo-inverse wherever the Gram route is taken
GRAM_RCOND_MIN = 1e-12
#: iterative-refinement steps of the Gram route (corrected semi-normal equations: residuals with X
#: itself, corrections with the Cholesky factor of the Gram matrix)
GRAM_REFINE = 2
#: above this many lam values one SVD is cheaper than a Cholesky factorisation per lam
GRAM_MAX_LAMS = 16


def ridge_path(x: np.ndarray, y: np.ndarray, lam: np.ndarray, *, method: str = "auto") -> np.ndarray:
    """Ridge weights for every lam, shape (p, len(lam)): ``w(lam) = (X^T X + lam p I)^{-1} X^T y``.

    At lam = 0 the Moore-Penrose solution ``X^+ y``.

    Parameters
    ----------
    x : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    lam : ndarray, shape (k,)
        Ridge strengths >= 0.
    method : {"auto", "svd", "gram"}
        ``"svd"``: one thin SVD of X serves every lam, ``V diag(s / (s^2 + lam p)) U^T y``, and
        lam = 0 drops singular values below ``max(n, p) eps s_max`` as numpy.linalg.pinv does.
        ``"gram"``: the Gram matrix of the smaller side (``X^T X`` if n >= p, else ``X X^T``,
        then ``w = X^T a``), one Cholesky factorisation per lam and :data:`GRAM_REFINE` steps of
        iterative refinement with residuals computed from X itself (corrected semi-normal
        equations, as accurate as the SVD when the Gram matrix is not near-singular). At
        lam = 0 it is used only where the factor's reciprocal condition number exceeds
        :data:`GRAM_RCOND_MIN` (X of full rank, where ``X^+ y`` is the unique least-squares
        or minimum-norm solution); otherwise, and if a factorisation fails, the SVD route
        gives the whole path. Cost ``max(n, p) m^2 + k m^3 / 3`` flops (m = min(n, p)) against
        about ``4 max(n, p) m^2 + 8 m^3`` for the SVD. ``"auto"``: ``"gram"`` for at most
        :data:`GRAM_MAX_LAMS` values of lam, else ``"svd"``.

    Returns
    -------
    ndarray, shape (p, k)
    """
    method = _checks.choice(method, ("auto", "svd", "gram"), "method")
    lam = np.asarray(lam, dtype=float)
    if method == "gram" or (method == "auto" and lam.size <= GRAM_MAX_LAMS):
        w = _ridge_gram(x, y, lam)
        if w is not None:
            return w
    return _ridge_svd(x, y, lam)


def _ridge_svd(x: np.ndarray, y: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The SVD route of :func:`ridge_path` (every lam from one thin SVD; the Moore-Penrose cutoff
    at lam = 0)."""
    n, p = x.shape
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    uty = u.T @ y
    cutoff = max(n, p) * np.finfo(float).eps * (s[0] if s.size else 0.0)
    keep = s > cutoff
    lam_p = np.asarray(lam)[None, :] * p
    with np.errstate(divide="ignore", invalid="ignore"):
        filt = np.where(lam_p > 0, s[:, None] / (s[:, None] ** 2 + lam_p),
                        np.where(keep[:, None], 1.0 / s[:, None], 0.0))
    return vt.T @ (filt * uty[:, None])


def _ridge_gram(x: np.ndarray, y: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """The Gram route of :func:`ridge_path`; None where it does not apply (then the SVD is used)."""
    from scipy.linalg import cho_solve, lapack

    n, p = x.shape
    primal = n >= p  # unknowns w (p of them) or a with w = X^T a (n of them)
    gram = x.T @ x if primal else x @ x.T  # symmetric product: BLAS syrk
    rhs = x.T @ y if primal else y
    m = gram.shape[0]
    out = np.empty((p, lam.size))
    norm1 = None
    for j, lam_j in enumerate(lam):
        shift = lam_j * p
        a = gram.copy()
        a[np.diag_indices(m)] += shift
        c, info = lapack.dpotrf(a, lower=0, clean=1, overwrite_a=1)
        if info != 0:
            return None
        if shift == 0:
            if norm1 is None:
                norm1 = float(np.abs(gram).sum(axis=0).max())
            rcond, info = lapack.dpocon(c, norm1)
            if info != 0 or not rcond > GRAM_RCOND_MIN:
                return None
        factor = (c, False)
        sol = cho_solve(factor, rhs)
        for _ in range(GRAM_REFINE):
            # residual of the normal equations with X itself, not with the Gram matrix
            if primal:
                resid = x.T @ (y - x @ sol) - shift * sol
            else:
                resid = y - x @ (x.T @ sol) - shift * sol
            sol = sol + cho_solve(factor, resid)
        out[:, j] = sol if primal else x.T @ sol
    return out
