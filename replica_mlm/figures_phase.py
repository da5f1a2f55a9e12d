"""The phase-diagram figure: the learning regimes in the (alpha, lambda) plane.

Drawn under :data:`replica_mlm.figure_style.STYLE` and written by
:func:`replica_mlm.figure_style.save`; the public name is listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm.figure_style import STYLE, _finish, log_ticks

__all__ = ["plot_phase_diagram"]


def plot_phase_diagram(pd, *, path: str | os.PathLike | None = None, title: str | None = None,
                       levels: int = 7):
    """Phase diagram of eg over (alpha, lam) or (alpha, shift).

    Colour: eg on a logarithmic scale (cividis: its lightness rises monotonically, so the figure
    reads in greyscale) from its smallest value to its 99th percentile, so that the few points
    next to a divergence do not squeeze every other value into one colour; larger values take the
    top colour (the triangle on the colour bar). Labelled contours of eg, white on dark colours and
    black on light ones, labelled along a ray from the peak (away from the crowded alpha = 1).
    Drawn, each in the legend: the region where more data hurts (d eg / d alpha > 0, hatched,
    bounded by a dashed line), the optimal-lam line (lam diagrams), the location of the peak of eg
    in alpha, and the interpolation threshold alpha = 1.

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
    rc = {**STYLE, "figure.figsize": (5.6, 4.6), "hatch.color": "0.85", "hatch.linewidth": 0.6}
    with plt.rc_context(rc):
        fig, ax = plt.subplots()
        vmin, vmax = np.nanmin(eg), np.nanpercentile(eg, 99)
        norm = LogNorm(vmin=vmin, vmax=vmax)
        cmap = plt.get_cmap("cividis")
        mesh = ax.pcolormesh(pd.alpha, pd.y, eg, norm=norm, cmap=cmap, shading="nearest", rasterized=True)
        cbar = fig.colorbar(mesh, ax=ax, pad=0.02, extend="max" if np.nanmax(eg) > vmax else "neither")
        cbar.set_label(r"generalisation error $e_g$")
        log_ticks(cbar.ax.yaxis)
        lv = np.geomspace(vmin, vmax, levels + 2)[1:-1]
        # contour colour against the colour under it: white on the dark half of cividis
        colors = ["white" if norm(v) < 0.55 else "black" for v in lv]
        cs = ax.contour(pd.alpha, pd.y, eg, levels=lv, colors=colors, linewidths=0.7)
        hurts = (pd.deg_dalpha > 0).astype(float)
        ax.contourf(pd.alpha, pd.y, hurts, levels=[0.5, 1.5], colors="none", hatches=["////"])
        ax.contour(pd.alpha, pd.y, pd.deg_dalpha, levels=[0.0], colors="white", linewidths=2.4)
        ax.contour(pd.alpha, pd.y, pd.deg_dalpha, levels=[0.0], colors="black", linewidths=1.1,
                   linestyles=[(0, (4, 2))])
        handles = [Patch(facecolor="0.3", edgecolor="0.85", hatch="////",
                         label=r"more data hurts: $\partial e_g/\partial\alpha > 0$"),
                   Line2D([], [], color="black", ls=(0, (4, 2)), lw=1.1,
                          label=r"$\partial e_g/\partial\alpha = 0$"),
                   Line2D([], [], color="0.5", lw=0.7, label=r"contours of $e_g$ (labelled)")]
        ax.axvline(pd.interpolation_alpha, color="white", lw=2.2)
        ax.axvline(pd.interpolation_alpha, color="black", ls=":", lw=1.0)
        handles.append(Line2D([], [], color="black", ls=":", lw=1.0, label=r"interpolation, $\alpha = 1$"))
        ok = np.isfinite(pd.peak_alpha)
        if ok.any():
            ax.plot(pd.peak_alpha[ok], pd.y[ok], color="white", lw=2.6)
            ax.plot(pd.peak_alpha[ok], pd.y[ok], color="black", lw=1.2, ls="-.")
            handles.append(Line2D([], [], color="black", ls="-.", lw=1.2, label=r"peak of $e_g$ in $\alpha$"))
        if pd.optimal_lam is not None:
            inside = (pd.optimal_lam >= pd.y[0]) & (pd.optimal_lam <= pd.y[-1])
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="white", lw=2.6)
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="black", lw=1.2)
            handles.append(Line2D([], [], color="black", lw=1.2, label=r"optimal $\lambda^*(\alpha)$"))
        if pd.axis == "lam":
            ax.set_yscale("log")
            ax.set_ylabel(r"ridge strength $\lambda$")
        else:
            ax.set_ylabel(r"shift $s$ of $P = sI - J$")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_xlim(pd.alpha[0], pd.alpha[-1])
        ax.set_ylim(pd.y[0], pd.y[-1])
        _label_contours_on_ray(ax, cs, (pd.interpolation_alpha, pd.y[0]))
        return _finish(fig, ax, title=title, path=path,
                       legend=dict(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                                   ncol=2, fontsize=7.5, frameon=False))


def _label_contours_on_ray(ax, cs, origin: tuple[float, float]) -> None:
    """Label each contour level once, where it crosses a ray at 62 degrees from ``origin``.

    The eg contours of a phase diagram are nested arcs around the interpolation peak (``origin``,
    at alpha = 1 and the bottom of the diagram): along a ray leaving it up and to the right they
    cross one after the other, so their labels are spread out instead of crowding at alpha = 1.
    """
    to_axes = ax.transData + ax.transAxes.inverted()
    ox, oy = to_axes.transform(origin)
    manual = []
    for path in _contour_paths(cs):
        v = to_axes.transform(path.vertices)
        dx, dy = v[:, 0] - ox, v[:, 1] - oy
        ok = (dx > 0.02) & (v[:, 0] < 0.97) & (v[:, 1] > 0.03) & (v[:, 1] < 0.97)
        if ok.sum() < 3:
            continue
        angle = np.where(ok, np.arctan2(dy, dx), np.inf)
        k = int(np.argmin(np.abs(angle - np.deg2rad(62))))
        manual.append(tuple(path.vertices[k]))
    if manual:
        ax.clabel(cs, fmt=lambda v: f"{v:.2g}", fontsize=6.5, inline=True, manual=manual)


def _contour_paths(cs) -> list:
    """The longest piece of each level of a contour set (matplotlib >= 3.8 and older)."""
    out = []
    if hasattr(cs, "get_paths"):
        pieces = [p.cleaned().to_polygons(closed_only=False) for p in cs.get_paths()]
        from matplotlib.path import Path as MplPath
        for polys in pieces:
            polys = [q for q in polys if len(q)]
            out.append(MplPath(max(polys, key=len)) if polys else MplPath(np.zeros((1, 2))))
    else:  # pragma: no cover - matplotlib < 3.8
        for coll in cs.collections:
            paths = coll.get_paths()
            from matplotlib.path import Path as MplPath
            out.append(max(paths, key=lambda q: len(q.vertices)) if paths else MplPath(np.zeros((1, 2))))
    return out
