"""Figures of real protein families: a site's learning curve beside the replica prediction.

Drawn under :data:`replica_mlm.figure_style.STYLE` and written by
:func:`replica_mlm.figure_style.save`; the public names are listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm.figure_style import LINESTYLES, MARKERS, STYLE, _finish, grey

__all__ = ["plot_site_learning_curves"]


def plot_site_learning_curves(curves: Sequence, *, path: str | os.PathLike | None = None,
                              title: str | None = None):
    """Measured test loss (markers, standard errors) and replica prediction (lines) against M.

    Parameters
    ----------
    curves : sequence of SiteLearningCurve
        From :func:`replica_mlm.proteins.learning_curve.site_learning_curve`; one colour per site.
        The teacher's loss on the held-out rows is a dotted horizontal line.
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
        ax.set_xscale("log")
        ax.set_xlabel(r"training sequences $M$")
        ax.set_ylabel(r"test loss $\frac{1}{2}|y - W^\top x|^2$")
        ax.set_xlim(0.8 * min(np.min(c.M) for c in curves), 1.25 * max(np.max(c.M) for c in curves))
        return _finish(fig, ax, title=title, path=path, legend={"fontsize": 7})
