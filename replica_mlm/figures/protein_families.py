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

from replica_mlm._base.keywords import keywords
from replica_mlm.figures.style import LINESTYLES, MARKERS, STYLE, _finish, grey
from replica_mlm.proteins.contacts import ranked_pairs

__all__ = ["plot_contact_map", "plot_site_learning_curves"]


@keywords
def plot_site_learning_curves(curves: Sequence, *, path: str | os.PathLike | None = None,
                              title: str | None = None):
    """Measured test loss (markers, standard errors) and replica prediction (lines) against M.

    Parameters
    ----------
    curves : sequence of SiteLearningCurve
        From :func:`replica_mlm.proteins.learning_curve.site_learning_curve`; one colour per site.
        The teacher's loss on the held-out rows is a dotted horizontal line; the prediction from the
        class-conditional moments (``mixture``), when the curve has it, a thin line with crosses in
        the site's grey and line style.
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not curves:
        raise ValueError("curves must hold at least one SiteLearningCurve")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        n = len(curves)
        for i, c in enumerate(curves):
            colour = grey(i, n)
            ax.plot(c.M, c.theory, color=colour, ls=LINESTYLES[i % len(LINESTYLES)],
                    label=f"site {c.site} (entropy {c.entropy:.2f})")
            ax.errorbar(c.M, c.mean, yerr=c.stderr, fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                        color=colour, mfc="white", capsize=2, lw=0.8)
            ax.axhline(c.teacher_floor, color=colour, ls=":", lw=0.8)
        for i, c in enumerate(curves):  # after the sites: the legend lists them first
            if getattr(c, "mixture", None) is not None:
                ax.plot(c.M, c.mixture, color=grey(i, n), ls=LINESTYLES[i % len(LINESTYLES)], lw=0.6,
                        marker="+", ms=5, label="class-conditional moments" if i == 0 else None)
        ax.set_xscale("log")
        ax.set_xlabel(r"training sequences $M$")
        ax.set_ylabel(r"test loss $\frac{1}{2}|y - W^\top x|^2$")
        ax.set_xlim(0.8 * min(np.min(c.M) for c in curves), 1.25 * max(np.max(c.M) for c in curves))
        return _finish(fig, ax, title=title, path=path,
                       legend={"fontsize": 7, "loc": "lower left", "bbox_to_anchor": (0.0, 0.16)})


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
