"""A site's learning curve with the alignment as the population: the clean experiment.

docs/proteins.md, "The pool as the population". The held-out design of
:mod:`replica_mlm.proteins.learning_curve` fits its teacher, noise and covariance in-sample on the
pool and tests on other rows: its disagreement with the theory mixes the teacher's overfitting,
the shift from pool to population and the non-Gaussian inputs. Here the rows of the alignment
(all of them, unweighted: the *pool*) are the population itself:

* **training sets**: ``M`` rows drawn uniformly *with replacement* from the pool, i.e. ``M``
  i.i.d. draws from the population;
* **test loss**: the population loss of the fitted ``W``, exactly,
  ``E_pool |y - W^T x|^2 / 2 = (sum_a noise_a + tr((W - W*)^T Sigma (W - W*))) / 2``;
* **task**: ``Sigma = E_pool x x^T`` (the inputs centred by the pool's mean), ``W* = Sigma^-1
  E_pool x y^T`` the population least squares and ``noise_a = E_pool (y_a - W*_a^T x)^2``: exact
  for that population, so the formula above holds (the normal equations kill the cross term).

Inputs and labels are those of :mod:`replica_mlm.proteins.learning_curve` (reduced one-hot
coordinates, ridge ``sum |y - W^T x|^2 / 2 + (lam p / 2) |W|_F^2``, ``p`` = columns - 1), and so is
the theory (the Gaussian reduction, computed in that eigenbasis by
:func:`~replica_mlm.proteins.learning_curve.eigenbasis_theory_loss`: no Lanczos rule). The
null directions of ``Sigma`` (colours absent from a column, the simplex constraint of a column
whose colours are all present) carry no input on any row: ``x`` is rotated into the eigenbasis of
``Sigma`` and only the ``d`` eigenvalues above ``NULL * max`` are kept, for the fits and the theory
alike (ridge regression is rotation invariant; the fitted predictions are those of the full
coordinates).

The only approximation of the theory left is that of Gaussian inputs with noise independent of
them. Beside the real rows the same curve is measured on a **Gaussian surrogate** with the same
moments: ``x ~ N(0, Sigma)``, ``y = W*^T x + e``, ``e ~ N(0, diag(noise))``, whose population loss
has the same formula; there the theory is exact up to its finite-``d`` corrections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.learners.multinomial_pl import reduced_inputs
from replica_mlm.proteins.learning_curve import _columns, eigenbasis_theory_loss, ridge_fit
from replica_mlm.tasks.potts_site import simplex_basis

__all__ = ["PoolLearningCurve", "pool_learning_curve"]

#: eigenvalues of Sigma below this fraction of the largest are null directions (dropped)
NULL = 1e-10


@dataclass(frozen=True)
class PoolLearningCurve:
    """Population loss of a site's ridge against ``M``, real rows and Gaussian surrogate, and theory.

    Attributes
    ----------
    site : int
        Column of the msa whose residue is predicted.
    columns : ndarray of int
        The columns used (the site among them).
    lam : float
    p, d : int
        Columns used minus one, and the input dimension kept (``Sigma``'s non-null directions).
    n_pool : int
        Rows of the pool (the population).
    M : ndarray of int
    losses, gaussian_losses : ndarray, shape (len(M), subsamples)
        Population loss of each training set's fit, on the real rows and on the surrogate.
    theory : ndarray, shape (len(M),)
    floor : float
        ``sum_a noise_a / 2``: the population loss of ``W*`` (M -> infinity).
    sigma_eigenvalues, teacher, noise : ndarray
        The task: ``Sigma``'s kept eigenvalues (d,), ``W*`` in its eigenbasis (d, K), ``noise`` (K,).
    """

    site: int
    columns: np.ndarray
    lam: float
    p: int
    d: int
    n_pool: int
    M: np.ndarray
    losses: np.ndarray
    gaussian_losses: np.ndarray
    theory: np.ndarray
    floor: float
    sigma_eigenvalues: np.ndarray = field(repr=False)
    teacher: np.ndarray = field(repr=False)
    noise: np.ndarray = field(repr=False)

    @staticmethod
    def _z(losses: np.ndarray, theory: np.ndarray) -> np.ndarray:
        se = losses.std(axis=1, ddof=1) / np.sqrt(losses.shape[1])
        return (theory - losses.mean(axis=1)) / se

    @property
    def z(self) -> np.ndarray:
        """``(theory - mean) / stderr`` of the real rows, per M."""
        return self._z(self.losses, self.theory)

    @property
    def z_gaussian(self) -> np.ndarray:
        """The same for the Gaussian surrogate."""
        return self._z(self.gaussian_losses, self.theory)

    def table(self) -> str:
        """One markdown row per M: M, M / n_pool, real mean (se, z), surrogate mean (se, z), theory."""
        rows = ["| M | M / pool | real rows | se | z | Gaussian surrogate | se | z | theory |",
                "|---|---|---|---|---|---|---|---|---|"]
        for k, m in enumerate(self.M):
            r, g = self.losses[k], self.gaussian_losses[k]
            se_r, se_g = r.std(ddof=1) / np.sqrt(r.size), g.std(ddof=1) / np.sqrt(g.size)
            rows.append(f"| {m} | {m / self.n_pool:.2f} | {r.mean():.4f} | {se_r:.4f} | {self.z[k]:+.1f} "
                        f"| {g.mean():.4f} | {se_g:.4f} | {self.z_gaussian[k]:+.1f} | {self.theory[k]:.4f} |")
        return "\n".join(rows)


def _population_loss(W: np.ndarray, teacher: np.ndarray, eig: np.ndarray, floor: float) -> float:
    """``(sum noise + tr((W - W*)^T Sigma (W - W*))) / 2`` with ``Sigma = diag(eig)``."""
    D = W - teacher
    return floor + 0.5 * float(np.sum(eig[:, None] * D * D))


def pool_learning_curve(msa, site: int, *, M, lam: float, subsamples: int = 20,
                        rng: _checks.RngLike = 0, columns=None) -> PoolLearningCurve:
    """The learning curve of ``site`` with the alignment's rows as the population (module docstring).

    Parameters
    ----------
    msa : MSA
    site : int
        Column of ``msa`` whose residue is predicted.
    M : sequence of int
        Training-set sizes (rows drawn with replacement; at most the pool size).
    lam : float
        Ridge strength (> 0), penalty ``(lam p / 2) |W|_F^2``.
    subsamples : int
        Training sets per M (>= 2: the standard error is their spread), for each of the real
        rows and the surrogate.
    rng : int, Generator or None
        Draws the training sets and the surrogate.
    columns : sequence of int, optional
        The columns used (the site among them); default all.

    Returns
    -------
    PoolLearningCurve

    Raises
    ------
    ValueError
        A site or column outside the alignment, an M outside [1, N], ``subsamples`` < 2.
    """
    from replica_mlm.proteins.msa import MSA

    if not isinstance(msa, MSA):
        raise TypeError(f"msa must be an MSA, got {type(msa).__name__}")
    site = _checks.site_index(site, msa.L)
    lam = _checks.positive(lam, "lam")
    subsamples = _checks.positive_int(subsamples, "subsamples")
    if subsamples < 2:
        raise ValueError(f"subsamples must be >= 2 (the error bar is their spread), got {subsamples}")
    gen = _checks.as_generator(rng)
    cols = _columns(columns, msa.L, site)
    sizes = np.atleast_1d(np.asarray(M))
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or sizes.size == 0:
        raise TypeError("M must be an int or a 1-d sequence of ints")
    if sizes.min() < 1 or sizes.max() > msa.N:
        raise ValueError(f"M must be in [1, {msa.N}] (the pool: the alignment's rows)")

    pool = msa.sequences[:, cols].astype(np.intp)
    local = int(np.flatnonzero(cols == site)[0])
    P, p, N = simplex_basis(msa.q), cols.size - 1, pool.shape[0]
    mean = P[pool].mean(axis=0)
    x = reduced_inputs(pool, local, P, mean)
    y = P[pool[:, local]] - mean[local]
    eig, vec = np.linalg.eigh(x.T @ x / N)
    keep = eig > NULL * eig[-1]
    eig, x = eig[keep], x @ vec[:, keep]  # the eigenbasis of Sigma, null directions dropped
    teacher = (x.T @ y / N) / eig[:, None]
    noise = np.mean((y - x @ teacher) ** 2, axis=0)
    floor = float(noise.sum() / 2)
    theory = eigenbasis_theory_loss(eig, teacher, noise, M=sizes, lam=lam, p=p)

    losses = np.empty((sizes.size, subsamples))
    gaussian = np.empty_like(losses)
    for k, m in enumerate(sizes):
        for s in range(subsamples):
            rows = gen.integers(0, N, size=int(m))
            losses[k, s] = _population_loss(ridge_fit(x[rows], y[rows], lam, p), teacher, eig, floor)
            xg = gen.standard_normal((int(m), eig.size)) * np.sqrt(eig)
            yg = xg @ teacher + gen.standard_normal((int(m), noise.size)) * np.sqrt(noise)
            gaussian[k, s] = _population_loss(ridge_fit(xg, yg, lam, p), teacher, eig, floor)
    return PoolLearningCurve(site=site, columns=cols, lam=lam, p=p, d=int(eig.size), n_pool=N,
                             M=sizes, losses=losses, gaussian_losses=gaussian, theory=theory,
                             floor=floor, sigma_eigenvalues=eig, teacher=teacher, noise=noise)
