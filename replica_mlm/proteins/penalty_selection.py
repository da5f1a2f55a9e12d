"""Choosing a Potts fit's coupling penalty on held-out pseudo-likelihood.

docs/proteins.md, "Choosing the penalty".

:func:`select_penalty` splits the alignment's sequences once (seeded) into a training part and a
held-out part, fits the model on the training part at every ``lambda_J`` of a grid and keeps the
one whose fit has the lowest weighted MLM loss (the per-site negative log conditional summed over
sites, :meth:`~replica_mlm.proteins.potts_fit.PottsFit.mlm_loss`) on the held-out part, with the
held-out part's own identity weights. The contacts never enter. A held-out sequence never enters
a fit used for the choice: with ``start="plm"`` the factored fits start from a plm fit of the
*training* part only, with ``start="mean-field"`` from the mean-field couplings of the training
part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import RngLike, as_generator
from replica_mlm.proteins.potts_fit import PottsFit, fit_potts

#: the fits with a coupling penalty to choose (mean-field DCA has none)
PENALISED = ("plm", "factored")

__all__ = ["PenaltySelection", "held_out_split", "select_penalty"]

STARTS = ("random", "mean-field", "plm")


@dataclass(frozen=True, eq=False)
class PenaltySelection:
    """Result of :func:`select_penalty`.

    Attributes
    ----------
    method : str
    heads : int or None
    lambdas : ndarray
        The ``lambda_J`` tried, in the order tried (the refined points last).
    held_out_loss : ndarray
        Weighted held-out MLM loss of the training fit at each ``lambda_J``.
    best : float
        The ``lambda_J`` with the lowest held-out loss.
    train, held_out : ndarray of int
        Row indices of the two parts (disjoint, sorted).
    start : str
        ``"random"`` or ``"plm"`` (the factored fits started from a plm fit of the training part).
    fits : tuple of PottsFit
        The training fits, one per ``lambda_J``.
    """

    method: str
    heads: int | None
    lambdas: np.ndarray
    held_out_loss: np.ndarray
    best: float
    train: np.ndarray
    held_out: np.ndarray
    start: str
    fits: tuple

    @property
    def bracketed(self) -> bool:
        """True if the best ``lambda_J`` has a larger tried value on each side (an interior minimum)."""
        return bool(self.lambdas.min() < self.best < self.lambdas.max())

    def to_frame(self):
        """A pandas DataFrame, one row per ``lambda_J`` (sorted): lambda_J, held_out_loss,
        iterations, converged, gradient_norm, objective, cpu_seconds, best."""
        import pandas as pd

        order = np.argsort(self.lambdas)
        fits = [self.fits[k] for k in order]
        return pd.DataFrame({"lambda_J": self.lambdas[order], "held_out_loss": self.held_out_loss[order],
                             "iterations": [f.iterations for f in fits],
                             "converged": [f.converged for f in fits],
                             "gradient_norm": [f.gradient_norm for f in fits],
                             "objective": [f.objective for f in fits],
                             "cpu_seconds": [f.cpu_seconds for f in fits],
                             "best": self.lambdas[order] == self.best})


def held_out_split(n: int, fraction: float = 0.15, *, rng: RngLike = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train, held_out): sorted, disjoint row indices of ``n`` sequences, ``round(fraction n)``
    held out by a seeded permutation (the convention of ``bench_contacts.py --select-penalty``)."""
    n = _checks.positive_int(n, "n")
    fraction = _checks.positive(fraction, "fraction")
    if fraction >= 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    n_out = round(fraction * n)
    if n_out < 1 or n_out > n - 1:
        raise ValueError(f"fraction = {fraction} of n = {n} sequences leaves an empty part")
    order = as_generator(rng).permutation(n)
    return np.sort(order[n_out:]), np.sort(order[:n_out])


def select_penalty(msa, method: str = "factored", lambdas=(0.01, 0.1, 1.0, 10.0), *,
                   held_out: float = 0.15, rng: RngLike = 0, start: str = "random",
                   refine: bool = False, plm_lambda_J: float = 0.01, reweight: float = 0.8,
                   callback=None, **fit_kwargs) -> PenaltySelection:
    """``lambda_J`` of ``method`` with the lowest weighted held-out MLM loss (module docstring).

    Parameters
    ----------
    msa : MSA
        The alignment (``.subset``, ``.weights``).
    method : {"plm", "factored"}
    lambdas : sequence of float > 0
        The grid (at least two values).
    held_out : float in (0, 1)
        Fraction of the sequences held out (default 0.15).
    rng : int, Generator or None
        Seeds the split (default 0); the fits' own ``rng`` goes in ``fit_kwargs``.
    start : {"random", "mean-field", "plm"}
        Factored model only: :func:`fit_potts`'s ``init="random"`` or ``init="mean-field"`` (of
        the training part), or the best rank-``H`` factorisation of a plm fit (at
        ``plm_lambda_J``) of the training part.
    refine : bool
        If True, also try the geometric midpoints between the best grid value and its neighbours
        (two more fits) and choose among all.
    plm_lambda_J : float >= 0
        Penalty of the plm fit used by ``start="plm"`` (default 0.01).
    reweight : float
        Identity threshold of the weights, for the fits and the held-out loss (default 0.8).
    callback : callable, optional
        Called as ``callback(lambda_J, held_out_loss, fit)`` after each training fit (progress).
    **fit_kwargs
        Passed on to :func:`fit_potts` (``heads``, ``max_iter``, ``precision``, ...).

    Returns
    -------
    PenaltySelection
    """
    method = _checks.choice(method, PENALISED, "method")
    start = _checks.choice(start, STARTS, "start")
    grid = _checks.finite_array(lambdas, "lambdas", ndim=1)
    if grid.size < 2 or np.any(grid <= 0.0):
        raise ValueError(f"lambdas must hold at least two positive values, got {grid.tolist()}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    if start != "random" and method != "factored":
        raise ValueError(f"start={start!r} applies to method='factored' only")
    for key in ("lambda_J", "init", "reweight"):
        if key in fit_kwargs:
            raise TypeError(f"select_penalty chooses {key} itself; do not pass it in fit_kwargs")
    if not hasattr(msa, "subset") or not hasattr(msa, "N"):
        raise TypeError(f"msa must be an MSA (with .subset and .N), got {type(msa).__name__}")
    train_idx, held_idx = held_out_split(msa.N, held_out, rng=rng)
    train, held = msa.subset(train_idx), msa.subset(held_idx)
    w_held = held.weights(identity=reweight)
    if start == "plm":
        plm_kwargs = {k: v for k, v in fit_kwargs.items() if k != "heads"}
        fit_kwargs = dict(fit_kwargs, init=fit_potts(train, "plm", reweight=reweight,
                                                     lambda_J=plm_lambda_J, **plm_kwargs))
    elif method == "factored":
        fit_kwargs = dict(fit_kwargs, init=start)
    tried: list[float] = []
    losses: list[float] = []
    fits: list[PottsFit] = []

    def attempt(lam: float) -> None:
        fit = fit_potts(train, method, reweight=reweight, lambda_J=float(lam), **fit_kwargs)
        tried.append(float(lam))
        losses.append(fit.mlm_loss(held, weights=w_held))
        fits.append(fit)
        if callback is not None:
            callback(float(lam), losses[-1], fit)

    for lam in grid:
        attempt(lam)
    if refine:
        ordered = np.sort(grid)
        k = int(np.argmin([losses[tried.index(v)] for v in ordered]))
        for j in (k - 1, k + 1):
            if 0 <= j < ordered.size:
                attempt(float(np.sqrt(ordered[k] * ordered[j])))
    best = tried[int(np.argmin(losses))]
    return PenaltySelection(method=method, heads=fits[0].heads, lambdas=np.array(tried),
                            held_out_loss=np.array(losses), best=best, train=train_idx,
                            held_out=held_idx, start=start, fits=tuple(fits))
