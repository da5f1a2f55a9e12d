"""Figures for papers: matplotlib only, vector PDF and PNG, readable in greyscale."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt
import numpy as np

#: line styles that stay distinct in greyscale
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "x")

STYLE = {
    "figure.figsize": (4.8, 3.4),
    "figure.dpi": 150,
    "savefig.dpi": 300,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.labelsize": 11,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "pdf.fonttype": 42,
}


def grey(i: int, n: int) -> str:
    """The i-th of n greys from black to mid-grey (distinct when printed without colour)."""
    return str(0.6 * i / max(n - 1, 1))


def save(fig, path: str | os.PathLike) -> list[Path]:
    """Save ``fig`` as PNG and PDF next to each other (``path`` with or without a suffix)."""
    stem = Path(path).with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for ext in (".png", ".pdf"):
        out = stem.with_suffix(ext)
        fig.savefig(out)
        written.append(out)
    return written


def plot_learning_curves(curves: Sequence, *, path: str | os.PathLike | None = None,
                         simulations: Sequence | None = None, title: str | None = None,
                         logy: bool = True):
    """eg(alpha) for several lam (THEORY.md section 4), optionally with simulation points.

    Parameters
    ----------
    curves : sequence of LearningCurve
        One line per lam.
    path : path, optional
        Where to save (PNG and PDF).
    simulations : sequence of (alpha, lam, mean, stderr) tuples, optional
        Points with error bars, matched to curves by lam.
    title : str, optional
    logy : bool
        Logarithmic eg axis (the interpolation peak spans decades at small lam).

    Returns
    -------
    matplotlib.figure.Figure
    """
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        n = len(curves)
        lam_index = {}
        for i, c in enumerate(curves):
            lam_index[c.lam] = i
            eg = np.where(np.isfinite(c.eg), c.eg, np.nan)
            ax.plot(c.alpha, eg, color=grey(i, n), ls=LINESTYLES[i % len(LINESTYLES)],
                    label=rf"$\lambda = {_latex_number(c.lam)}$")
        if simulations:
            for alpha, lam, mean, err in simulations:
                i = lam_index.get(lam, 0)
                ax.errorbar(alpha, mean, yerr=err, fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                            color=grey(i, n), mfc="white", capsize=2, lw=0.8)
        if curves:
            ax.axhline(curves[0].rho + curves[0].noise, color="0.75", lw=0.7, zorder=0,
                       label=r"$C_{ii}$ (no learning)")
            ax.axhline(curves[0].noise, color="0.75", lw=0.7, ls=(0, (6, 2)), zorder=0,
                       label=r"$\sigma^2$ (Bayes floor)")
            ax.axvline(1.0, color="0.85", lw=0.7, zorder=0)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_ylabel(r"generalisation error $e_g$")
        if title:
            ax.set_title(title, fontsize=10)
        ax.legend(loc="upper right")
        if path is not None:
            save(fig, path)
        return fig


def _latex_number(x: float) -> str:
    if x == 0:
        return "0"
    exp = int(np.floor(np.log10(abs(x))))
    mant = x / 10**exp
    if abs(mant - 1) < 1e-12:
        return rf"10^{{{exp}}}"
    if -2 <= exp <= 2:
        return f"{x:g}"
    return rf"{mant:g}\times 10^{{{exp}}}"
