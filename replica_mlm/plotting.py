"""Figures for papers: matplotlib only, vector PDF and PNG, readable in greyscale."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

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


def save(fig, path: str | os.PathLike, **savefig_kwargs) -> list[Path]:
    """Save ``fig`` as PNG and PDF next to each other (``path`` with or without a suffix).

    ``savefig_kwargs`` (e.g. ``dpi``, ``bbox_inches``) go to ``Figure.savefig``.
    """
    stem = Path(path).with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    # fontTools, which subsets the fonts embedded in the PDF, warns about the timestamps of
    # matplotlib's bundled DejaVu fonts on every save: keep that noise off the user's terminal
    font_log = logging.getLogger("fontTools")
    level = font_log.level
    font_log.setLevel(logging.ERROR)
    try:
        for ext in (".png", ".pdf"):
            out = stem.with_suffix(ext)
            fig.savefig(out, **savefig_kwargs)
            written.append(out)
    finally:
        font_log.setLevel(level)
    return written


def _finish(fig, ax, *, title: str | None, path, legend: dict | None = None):
    """Title, legend and saving shared by the figure functions; returns the figure."""
    if title:
        ax.set_title(title, fontsize=10)
    if legend is not None:
        ax.legend(**legend)
    if path is not None:
        save(fig, path)
    return fig


def plot_learning_curves(curves: Sequence, *, path: str | os.PathLike | None = None,
                         simulations: Sequence | None = None, title: str | None = None,
                         logy: bool = True):
    """eg(alpha) for several lam (docs/theory.md, section 3), optionally with simulation points.

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
        return _finish(fig, ax, title=title, path=path, legend=dict(loc="upper right"))


def _latex_number(x: float) -> str:
    if x == 0:
        return "0"
    mant_text, exp_text = f"{x:.12e}".split("e")  # no 10**exp: it underflows for subnormal x
    exp, mant = int(exp_text), float(mant_text)
    if abs(mant - 1) < 1e-12:
        return rf"10^{{{exp}}}"
    if -2 <= exp <= 2:
        return f"{x:g}"
    return rf"{mant:g}\times 10^{{{exp}}}"


def plot_z_histogram(z, *, excluded=None, path: str | os.PathLike | None = None,
                     title: str | None = None, bins: int = 24):
    """Histogram of z-scores (theory against simulation) with the N(0, 1) density.

    Parameters
    ----------
    z : array_like
        z-scores that enter the statistical checks.
    excluded : array_like, optional
        z-scores shown for information only (e.g. points with a known finite-size bias), drawn as
        an outline on the same bins.
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional
    bins : int
        Number of bins on the symmetric range covering all z (at least [-4, 4]).

    Returns
    -------
    matplotlib.figure.Figure
    """
    z = np.asarray(z, dtype=float)
    excl = np.asarray(excluded if excluded is not None else [], dtype=float)
    finite = np.concatenate([z, excl])
    finite = finite[np.isfinite(finite)]
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


def plot_excess_decay(curves: Sequence, *, noise: float, fit_range: tuple[float, float] | None = None,
                      path: str | os.PathLike | None = None, title: str | None = None):
    """Log-log plot of eg - sigma^2 against alpha, with the asymptote sigma^2 / alpha.

    Parameters
    ----------
    curves : sequence of (lam, alpha, excess) tuples
        ``excess = eg - sigma^2`` on the grid ``alpha``, one line per lam.
    noise : float
        sigma^2, the constant of the asymptote ``sigma^2 / alpha`` (docs/theory.md, section 5).
    fit_range : (float, float), optional
        Shaded alpha range (where the exponent is fitted).
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        n = len(curves)
        for i, (lam, alpha, excess) in enumerate(curves):
            ax.plot(alpha, np.where(np.asarray(excess) > 0, excess, np.nan), color=grey(i, n),
                    ls=LINESTYLES[i % len(LINESTYLES)], label=rf"$\lambda = {_latex_number(lam)}$")
        a = np.asarray(curves[0][1]) if curves else np.geomspace(1, 1000, 10)
        ax.plot(a, noise / a, color="0.0", lw=0.8, ls=(0, (1, 1.5)), label=r"$\sigma^2/\alpha$")
        if fit_range is not None:
            ax.axvspan(*fit_range, color="0.92", zorder=0, label="fit range")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_ylabel(r"$e_g - \sigma^2$")
        return _finish(fig, ax, title=title, path=path, legend=dict(loc="lower left"))


def plot_phase_diagram(pd, *, path: str | os.PathLike | None = None, title: str | None = None,
                       levels: int = 8):
    """Phase diagram of eg over (alpha, lam) or (alpha, shift).

    Colour: eg on a logarithmic scale (cividis: its lightness rises monotonically, so the figure
    reads in greyscale), with a labelled colour bar and labelled contours of eg. Drawn and
    labelled: the region where more data hurts (d eg / d alpha > 0, hatched, bounded by a dashed
    line), the optimal-lam line (lam diagrams), the location of the peak of eg in alpha, and the
    interpolation threshold alpha = 1.

    Parameters
    ----------
    pd : PhaseDiagram
    path : path, optional
        Where to save (PNG and PDF side by side).
    title : str, optional
    levels : int
        Number of labelled eg contours.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.colors import LogNorm
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    eg = np.where(np.isfinite(pd.eg), pd.eg, np.nan)
    with plt.rc_context({**STYLE, "figure.figsize": (5.6, 4.0)}):
        fig, ax = plt.subplots()
        vmin, vmax = np.nanmin(eg), np.nanmax(eg)
        norm = LogNorm(vmin=vmin, vmax=vmax)
        mesh = ax.pcolormesh(pd.alpha, pd.y, eg, norm=norm, cmap="cividis", shading="nearest",
                             rasterized=True)
        cbar = fig.colorbar(mesh, ax=ax, pad=0.02)
        cbar.set_label(r"generalisation error $e_g$")
        lv = np.geomspace(vmin, vmax, levels + 2)[1:-1]
        cs = ax.contour(pd.alpha, pd.y, eg, levels=lv, colors="0.15", linewidths=0.6)
        ax.clabel(cs, fmt=lambda v: f"{v:.2g}", fontsize=6.5, inline=True)
        hurts = (pd.deg_dalpha > 0).astype(float)
        ax.contourf(pd.alpha, pd.y, hurts, levels=[0.5, 1.5], colors="none", hatches=["////"])
        ax.contour(pd.alpha, pd.y, pd.deg_dalpha, levels=[0.0], colors="white", linewidths=1.4,
                   linestyles="--")
        handles = [Patch(facecolor="none", edgecolor="0.2", hatch="////",
                         label=r"more data hurts: $\partial e_g/\partial\alpha > 0$")]
        ax.axvline(pd.interpolation_alpha, color="0.85", ls=":", lw=1.2)
        handles.append(Line2D([], [], color="0.6", ls=":", lw=1.2, label=r"interpolation $\alpha = 1$"))
        ok = np.isfinite(pd.peak_alpha)
        if ok.any():
            ax.plot(pd.peak_alpha[ok], pd.y[ok], color="black", lw=1.2, ls="-.")
            handles.append(Line2D([], [], color="black", ls="-.", lw=1.2, label=r"peak of $e_g$ in $\alpha$"))
        if pd.optimal_lam is not None:
            inside = (pd.optimal_lam >= pd.y[0]) & (pd.optimal_lam <= pd.y[-1])
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="white", lw=2.4)
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="black", lw=1.0)
            handles.append(Line2D([], [], color="black", lw=1.0, label=r"optimal $\lambda^*(\alpha)$"))
        if pd.axis == "lam":
            ax.set_yscale("log")
            ax.set_ylabel(r"ridge strength $\lambda$")
        else:
            ax.set_ylabel(r"shift $s$ of $P = sI - J$")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_xlim(pd.alpha[0], pd.alpha[-1])
        ax.set_ylim(pd.y[0], pd.y[-1])
        return _finish(fig, ax, title=title, path=path,
                       legend=dict(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.15),
                                   ncol=2, fontsize=7.5, frameon=False))


def plot_erm_curves(lines: dict, rows: Sequence, *, alpha_c: float | None = None,
                    path: str | os.PathLike | None = None, title: str | None = None):
    """eg (left) and test loss (right) against alpha for several (loss, channel) pairs.

    Parameters
    ----------
    lines : dict
        ``(loss, channel) -> LearningCurve`` (theory lines; columns ``eg`` and ``test_loss``).
    rows : sequence of dict
        Simulated points with keys ``loss``, ``channel``, ``alpha``, ``eg_mean``, ``eg_stderr``,
        ``test_loss_mean``, ``test_loss_stderr`` (points at the curve's lam only are drawn:
        those whose ``lam`` equals the curve's).
    alpha_c : float, optional
        Separability threshold, drawn as a vertical line.
    path, title
        As in :func:`plot_learning_curves`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
        n = len(lines)
        for i, ((loss, channel), c) in enumerate(lines.items()):
            style = dict(color=grey(i, n), ls=LINESTYLES[i % len(LINESTYLES)])
            label = f"{loss} / {channel}"
            for ax, key in zip(axes, ("eg", "test_loss"), strict=True):
                ax.plot(c.alpha, getattr(c, key), label=label, **style)
                pts = [r for r in rows if r["loss"] == loss and r["channel"] == channel and r["lam"] == c.lam]
                if pts:
                    ax.errorbar([r["alpha"] for r in pts], [r[f"{key}_mean"] for r in pts],
                                yerr=[r[f"{key}_stderr"] for r in pts], fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                                color=grey(i, n), mfc="white", capsize=2, lw=0.8)
        for ax, ylabel in zip(axes, ("generalisation error $e_g$", "test loss"), strict=True):
            ax.axvline(1.0, color="0.85", lw=0.7, zorder=0)
            if alpha_c is not None:
                ax.axvline(alpha_c, color="0.6", lw=0.7, ls=":", zorder=0, label=r"$\alpha_c$")
            ax.set_xlabel(r"$\alpha = n/p$")
            ax.set_ylabel(ylabel)
            ax.set_yscale("log")
        axes[1].legend(loc="upper right", fontsize=7)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        if path is not None:
            save(fig, path)
        return fig
