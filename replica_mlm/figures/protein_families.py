"""Figures of real protein families: a site's learning curve beside the replica prediction, and
predicted contacts over a structure's contact map.

Drawn under :data:`replica_mlm.figures.style.STYLE` and written by
:func:`replica_mlm.figures.style.save`; the public names are listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.container import ErrorbarContainer
from matplotlib.ticker import FixedLocator

from replica_mlm._base.keywords import keywords
from replica_mlm.figures.style import STYLE, _finish, log_ticks, save
from replica_mlm.proteins.contacts import ranked_pairs
from replica_mlm.proteins.learning_curve import eigenbasis_theory_loss

__all__ = ["plot_contact_map", "plot_site_learning_curves"]


@keywords
def plot_site_learning_curves(curves: Sequence, *, pool: Sequence | None = None,
                              path: str | os.PathLike | None = None, title: str | None = None):
    """Measured test loss (markers, standard errors) and replica predictions (lines) against M, one
    panel per site (docs/proteins.md, "A site's learning curve against the replica prediction").

    Parameters
    ----------
    curves : sequence of SiteLearningCurve
        The held-out design (:func:`replica_mlm.proteins.learning_curve.site_learning_curve`), one
        panel per site (the bottom row when ``pool`` is given): the measured loss on the held-out
        rows; the theory alone (its noise the teacher's residual on the pool, dashed); the theory
        plus the named misspecification term ``teacher_floor - noise_floor`` (dash-dot); that plus
        the predicted cross term (solid); the teacher's own held-out loss (dotted).
    pool : sequence of PoolLearningCurve, optional
        The pool as the population (:func:`replica_mlm.proteins.pool_curve.pool_learning_curve`)
        for the same sites in the same order, drawn as the top row: the population loss on the
        real rows (circles) and on the Gaussian surrogate of the same moments (squares), and the
        theory (solid, on 24 sizes between the smallest and the largest M).
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not curves:
        raise ValueError("curves must hold at least one SiteLearningCurve")
    if pool is not None and [c.site for c in pool] != [c.site for c in curves]:
        raise ValueError(f"pool must hold the curves' sites in their order {[c.site for c in curves]}, "
                         f"got {[c.site for c in pool]}")
    n, rows = len(curves), 1 if pool is None else 2
    mark = {"ms": 3.5, "mfc": "white", "capsize": 2, "lw": 0.8}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, n, figsize=(2.6 * n + 2.6, 2.4 * rows + 0.5), squeeze=False,
                                 sharex=True)
        for j, c in enumerate(curves):
            ax = axes[-1, j]
            ax.errorbar(c.M, c.mean, yerr=c.stderr, fmt="o", color="black", label="measured on real rows",
                        **mark)
            ax.plot(c.M, c.theory, color="0.55", ls="--", label="theory alone (noise: pool residual)")
            ax.plot(c.M, c.theory_heldout, color="black", ls="-.", label="theory + misspecification")
            if getattr(c, "cross_predicted", None) is not None:
                ax.plot(c.M, c.theory_cross, color="black", ls="-",
                        label="theory + misspecification + predicted cross term")
            ax.axhline(c.teacher_floor, color="0.55", ls=":", lw=0.8, label="teacher's held-out loss")
            ax.set_title(f"site {c.site}: held-out rows" if pool is not None
                         else f"site {c.site} (entropy {c.entropy:.2f})", fontsize=8)
        for j, c in enumerate(pool or ()):
            ax = axes[0, j]
            for losses, fmt, colour, label in ((c.losses, "o", "black", "real rows"),
                                               (c.gaussian_losses, "s", "0.55",
                                                "Gaussian surrogate, same moments")):
                se = losses.std(axis=1, ddof=1) / np.sqrt(losses.shape[1])
                ax.errorbar(c.M, losses.mean(axis=1), yerr=se, fmt=fmt, color=colour, label=label, **mark)
            grid = np.unique(np.geomspace(c.M.min(), c.M.max(), 24).round().astype(int))
            ax.plot(grid, eigenbasis_theory_loss(c.sigma_eigenvalues, c.teacher, c.noise, M=grid, lam=c.lam,
                                                 p=c.p), color="black", ls="-", label="theory")
            ax.set_title(f"site {c.site}: pool as population", fontsize=8)
        sizes = np.concatenate([c.M for c in [*curves, *(pool or ())]])
        axes[0, 0].set_xscale("log")
        axes[0, 0].set_xlim(0.8 * sizes.min(), 1.25 * sizes.max())
        lo, hi = axes[0, 0].get_xlim()  # every fourfold step of M labelled, no crowding
        ticks = [t for t in 25 * 4.0 ** np.arange(-3, 8) if lo <= t <= hi] or None
        log_ticks(axes[0, 0].xaxis)
        if ticks is not None and len(ticks) >= 2:
            axes[0, 0].xaxis.set_major_locator(FixedLocator(ticks))
        for ax in axes[-1]:
            ax.set_xlabel(r"training sequences $M$")
        for i, name in enumerate(["pool as population", "held-out rows"][2 - rows:]):
            axes[i, 0].set_ylabel(f"{name}\n" + r"test loss $\frac{1}{2}|y - W^\top x|^2$")
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout(rect=(0.0, 0.0, 2.6 * n / (2.6 * n + 2.6), 1.0))  # the legends on the right
        for i in range(rows):  # one legend per row, right of its last panel, the measurements first
            handles, labels = axes[i, -1].get_legend_handles_labels()
            order = sorted(range(len(labels)), key=lambda k: not isinstance(handles[k], ErrorbarContainer))
            axes[i, -1].legend([handles[k] for k in order], [labels[k] for k in order], loc="center left",
                               fontsize=7, bbox_to_anchor=(1.05, 0.5))
        if path is not None:
            save(fig, path)
        return fig


@keywords
def plot_contact_map(scores, distances, *, top: int, cutoff: float = 8.0, min_separation: int = 6,
                     path: str | os.PathLike | None = None, title: str | None = None):
    """Predicted contacts (upper triangle) over the structure's contact map (both triangles).

    Parameters
    ----------
    scores : array (L, L)
        Pair scores over the alignment's columns
        (:func:`replica_mlm.proteins.contacts.coupling_scores`).
    distances : array (L, L)
        C-beta distances over the same columns (NaN where a column has no residue).
    top : int
        How many of the highest-scoring pairs with ``j - i >= min_separation`` to draw: filled
        black where the structure has a contact (distance < ``cutoff``), open where it has not
        (:func:`replica_mlm.proteins.contacts.ranked_pairs`, the ranking
        :func:`replica_mlm.contact_precision` counts).
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from replica_mlm._base import checks

    s = checks.finite_array(scores, "scores", ndim=2)
    dist = checks.real_array(distances, "distances").astype(float)  # NaN: a column without a residue
    top = checks.positive_int(top, "top")
    cutoff = checks.positive(cutoff, "cutoff")
    min_separation = checks.positive_int(min_separation, "min_separation")
    if s.ndim != 2 or s.shape[0] != s.shape[1] or dist.shape != s.shape:
        raise ValueError(f"scores and distances must be (L, L) of one shape, got {s.shape} and {dist.shape}")
    L = s.shape[0]
    checks.at_most(min_separation, L - 1, "min_separation", f"j - i of a pair of the L = {L} columns")
    pi, pj = ranked_pairs(s, dist, min_separation=min_separation)
    pi, pj = pi[:top], pj[:top]
    hit = dist[pi, pj] < cutoff
    far = np.abs(np.subtract.outer(np.arange(L), np.arange(L))) >= min_separation
    ci, cj = np.nonzero((np.nan_to_num(dist, nan=np.inf) < cutoff) & far)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(5.0, 5.6))
        ax.scatter(cj, ci, s=5, color="0.78", marker="s", linewidths=0,
                   label=f"structure: C$\\beta$ distance < {cutoff:g} \u00c5")
        # clip_on=False: a pair in the first or last column keeps its whole marker at the axes' edge
        ax.scatter(pj[hit], pi[hit], s=14, color="black", marker="o", clip_on=False,
                   label=f"top {len(pi)} predicted, in contact ({int(hit.sum())})")
        ax.scatter(pj[~hit], pi[~hit], s=14, facecolors="none", edgecolors="black", marker="o", clip_on=False,
                   label=f"top {len(pi)} predicted, not in contact ({int((~hit).sum())})")
        ax.plot([-0.5, L - 0.5], [-0.5, L - 0.5], color="0.5", linewidth=0.6, label="diagonal $i = j$")
        ax.set_xlim(-0.5, L - 0.5)
        ax.set_ylim(L - 0.5, -0.5)
        ax.set_aspect("equal")
        ax.set_xlabel("alignment column $j$")
        ax.set_ylabel("alignment column $i$")
        legend = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.13), "fontsize": "small"}
        return _finish(fig, ax, title=title, path=path, legend=legend)
