"""The z-score histogram of a validation: theory against simulation, with the N(0, 1) density.

Drawn under :data:`replica_mlm.figures.style.STYLE` and written by
:func:`replica_mlm.figures.style.save`; listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm._base.keywords import keywords
from replica_mlm.figures.style import STYLE, _finish

__all__ = ["MAX_BINS", "plot_z_histogram"]

#: most bins of :func:`plot_z_histogram`: more than the figure's pixels across
MAX_BINS = 10_000


@keywords
def plot_z_histogram(z, *, excluded=None, path: str | os.PathLike | None = None,
                     title: str | None = None, bins: int = 24):
    """Histogram of z-scores (theory against simulation) with the N(0, 1) density.

    Parameters
    ----------
    z : array_like
        z-scores that enter the statistical checks: 1-d, finite real numbers (ValueError for NaN
        or inf, TypeError for complex numbers).
    excluded : array_like, optional
        z-scores shown for information only (e.g. points with a known finite-size bias), drawn as
        an outline on the same bins; the same rules as ``z``.
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional
    bins : int
        Number of bins on the symmetric range covering all z (at least [-4, 4]): an int in
        ``[1, MAX_BINS]`` (TypeError for a bool, a float or a sequence of edges).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from replica_mlm._base.checks import at_most, finite_vector, positive_int

    z, excl = finite_vector(z, "z"), finite_vector([] if excluded is None else excluded, "excluded")
    bins = positive_int(bins, "bins")
    at_most(bins, MAX_BINS, "bins", "more bins than pixels of the figure")
    finite = np.concatenate([z, excl])
    top = max(4.0, float(np.ceil(np.max(np.abs(finite))))) if finite.size else 4.0
    edges = np.linspace(-top, top, bins + 1)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.hist(z, bins=edges, density=True, color="0.75", edgecolor="0.35", lw=0.6,
                label=f"compared ({z.size})")
        if excl.size:
            # scaled so that the outline and the filled histogram share one count-per-area unit
            w = np.full(excl.size, 1.0 / (max(z.size, 1) * (edges[1] - edges[0])))
            ax.hist(excl, bins=edges, weights=w, histtype="step", color="0.0", ls="--", lw=1.0,
                    label=f"excluded, finite-p bias ({excl.size})")
        x = np.linspace(-top, top, 400)
        ax.plot(x, np.exp(-x**2 / 2) / np.sqrt(2 * np.pi), color="0.0", lw=1.4, label=r"$\mathcal{N}(0, 1)$")
        ax.set_xlabel(r"$z$ = (simulation $-$ replica) / standard error")
        ax.set_ylabel("density")
        ax.set_ylim(0, 1.45 * max(ax.get_ylim()[1], 0.4))  # room for the legend above the bars
        return _finish(fig, ax, title=title, path=path,
                       legend=dict(loc="upper left", ncols=2, fontsize=7.5))
