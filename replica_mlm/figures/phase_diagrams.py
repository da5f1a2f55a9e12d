"""The phase-diagram figure: the learning regimes in the (alpha, lambda) plane.

Drawn under :data:`replica_mlm.figures.style.STYLE` and written by
:func:`replica_mlm.figures.style.save`; the public name is listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm._base.keywords import keywords
from replica_mlm.figures.style import STYLE, _finish, latex_number, log_ticks

__all__ = ["plot_phase_diagram"]

#: most labelled eg contours of a phase diagram (their labels need room on the axes)
MAX_LEVELS = 50


@keywords
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
    in alpha, and the interpolation threshold alpha = 1 (square loss: ``pd.interpolation_alpha``).
    What is not there is not in the legend: no hatch entry where no point is hatched, and an
    optimal-lam line outside the axes is a note saying on which side.

    Parameters
    ----------
    pd : PhaseDiagram
    path : path, optional
        Where to save (PNG and PDF side by side).
    title : str, optional
    levels : int
        Number of labelled eg contours, 1 to :data:`MAX_LEVELS`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.patches import Patch

    from replica_mlm._base import checks
    from replica_mlm.theory.studies.phase import PhaseDiagram

    checks.of_type(pd, PhaseDiagram, "pd", "a PhaseDiagram (rm.phase_diagram or rm.shift_phase_diagram)")
    levels = checks.positive_int(levels, "levels")
    checks.at_most(levels, MAX_LEVELS, "levels", "more labelled contours than fit on the figure")
    eg = np.where(np.isfinite(pd.eg), pd.eg, np.nan)
    rc = {**STYLE, "figure.figsize": (5.6, 4.6), "hatch.color": "0.85", "hatch.linewidth": 0.6}
    with plt.rc_context(rc):
        fig, ax = plt.subplots()
        cs, colors = _eg_colours(fig, ax, pd, eg, levels)
        hurts = (pd.deg_dalpha > 0).astype(float)
        ax.contourf(pd.alpha, pd.y, hurts, levels=[0.5, 1.5], colors="none", hatches=["////"])
        # every line with its own explicit linestyle (the style's cycler cycles linestyles), the
        # legend's proxy drawn with the same; d eg/d alpha = 0 is the hatched region's edge, whose
        # right-hand part is the peak line: drawing both would put one line on top of the other
        # the hatch's entry only where some point is hatched (a legend names what is drawn)
        handles = [Patch(facecolor="0.3", edgecolor="0.85", hatch="////",
                         label=r"more data hurts: $\partial e_g/\partial\alpha > 0$")] if hurts.any() else []
        handles.append(_contour_handle(colors))
        lines, peak_xy = _regime_lines(ax, pd)
        handles += lines
        if pd.axis == "lam":
            ax.set_yscale("log")
            ax.set_ylabel(r"ridge strength $\lambda$")
        else:
            ax.set_ylabel(r"shift $s$ of $P = sI - J$")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_xlim(pd.alpha[0], pd.alpha[-1])
        ax.set_ylim(pd.y[0], pd.y[-1])
        alpha_1 = [[pd.interpolation_alpha, v] for v in pd.y] if np.isfinite(pd.interpolation_alpha) else []
        avoid = np.vstack([peak_xy.reshape(-1, 2), np.reshape(alpha_1, (-1, 2))])
        _label_contours_apart(ax, cs, avoid)
        return _finish(fig, ax, title=title, path=path,
                       legend=dict(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                                   ncol=2, fontsize=7.5, frameon=False))


def _eg_colours(fig, ax, pd, eg: np.ndarray, levels: int):
    """Draw eg in colour (log scale, smallest value to 99th percentile), its colour bar and contours.

    Returns the contour set and each contour's colour (white on the dark half of cividis).
    """
    from matplotlib.colors import LogNorm

    vmin, vmax = np.nanmin(eg), np.nanpercentile(eg, 99)
    norm = LogNorm(vmin=vmin, vmax=vmax)
    cmap = plt.get_cmap("cividis")
    mesh = ax.pcolormesh(pd.alpha, pd.y, eg, norm=norm, cmap=cmap, shading="nearest", rasterized=True)
    cbar = fig.colorbar(mesh, ax=ax, pad=0.02, extend="max" if np.nanmax(eg) > vmax else "neither")
    # a shift diagram is drawn at one lam: say which
    at = "" if pd.axis == "lam" else rf" at $\lambda = {latex_number(float(pd.lam))}$"
    cbar.set_label(r"generalisation error $e_g$" + at)
    log_ticks(cbar.ax.yaxis)
    lv = np.geomspace(vmin, vmax, levels + 2)[1:-1]
    # contour colour against the colour under it: white on the dark half of cividis
    colors = ["white" if norm(v) < 0.55 else "black" for v in lv]
    cs = ax.contour(pd.alpha, pd.y, eg, levels=lv, colors=colors, linewidths=0.7)
    return cs, colors


def _regime_lines(ax, pd) -> tuple[list, np.ndarray]:
    """Draw the interpolation threshold, the peak of eg in alpha and the optimal-lam line.

    Each line is drawn black on a white underlay. Returns their legend handles and the points of
    the peak and optimal-lam lines (which the contour labels avoid).
    """
    from matplotlib.lines import Line2D

    handles = []
    if np.isfinite(pd.interpolation_alpha):  # the square loss's n = p; other losses have none at 1
        ax.axvline(pd.interpolation_alpha, color="white", ls="-", lw=2.2)
        ax.axvline(pd.interpolation_alpha, color="black", ls=":", lw=1.0)
        handles.append(Line2D([], [], color="black", ls=":", lw=1.0,
                              label=rf"interpolation, $\alpha = {pd.interpolation_alpha:g}$"))
    ok = np.isfinite(pd.peak_alpha)
    peak_xy = np.column_stack([pd.peak_alpha[ok], pd.y[ok]])
    if ok.any():
        ax.plot(pd.peak_alpha[ok], pd.y[ok], color="white", ls="-", lw=2.6)
        ax.plot(pd.peak_alpha[ok], pd.y[ok], color="black", ls="-.", lw=1.2)
        handles.append(Line2D([], [], color="black", ls="-.", lw=1.2,
                              label=r"peak of $e_g$ in $\alpha$ ($\partial e_g/\partial\alpha = 0$)"))
    if pd.optimal_lam is not None:
        inside = (pd.optimal_lam >= pd.y[0]) & (pd.optimal_lam <= pd.y[-1])
        if inside.any():
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="white", ls="-", lw=2.6)
            ax.plot(pd.alpha[inside], pd.optimal_lam[inside], color="black", ls="-", lw=1.2)
            handles.append(Line2D([], [], color="black", ls="-", lw=1.2,
                                  label=r"optimal $\lambda^*(\alpha)$"))
        else:  # a note, no line: where the optimum lies
            side = "above" if np.all(pd.optimal_lam > pd.y[-1]) else "below" if np.all(
                pd.optimal_lam < pd.y[0]) else "outside"
            handles.append(Line2D([], [], ls="none", label=rf"optimal $\lambda^*(\alpha)$: {side} the "
                                                          r"$\lambda$ range shown, at every $\alpha$"))
        peak_xy = np.vstack([peak_xy, np.column_stack([pd.alpha[inside], pd.optimal_lam[inside]])])
    return handles, peak_xy


def _contour_handle(colors: list[str]):
    """The legend entry of the eg contours: black (as drawn on light colours), or white with a
    black edge if every contour is white (as drawn on dark colours)."""
    from matplotlib import patheffects
    from matplotlib.lines import Line2D

    if "black" in colors:
        return Line2D([], [], color="black", ls="-", lw=0.7, label=r"contours of $e_g$ (labelled)")
    return Line2D([], [], color="white", ls="-", lw=0.7, label=r"contours of $e_g$ (labelled)",
                  path_effects=[patheffects.withStroke(linewidth=1.8, foreground="black")])


def _label_contours_apart(ax, cs, avoid: np.ndarray) -> None:
    """Label each contour level once, as far as possible from the lines in ``avoid`` and from the
    labels placed before it.

    The eg contours of a phase diagram are nested arcs around the interpolation peak, which the
    peak line, the optimal-lam line and alpha = 1 cross: each label goes to the point of its
    contour (inside the axes, away from the edges) whose distance, in axes coordinates, to the
    points of ``avoid`` (data coordinates) and to the labels already placed is largest (the
    smallest contours first: they have the least room).
    """
    to_axes = ax.transData + ax.transAxes.inverted()
    taken = list(to_axes.transform(avoid)) if len(avoid) else []
    chosen = []
    for path in _contour_paths(cs)[::-1]:
        v = to_axes.transform(path.vertices)
        ok = (v[:, 0] > 0.06) & (v[:, 0] < 0.94) & (v[:, 1] > 0.06) & (v[:, 1] < 0.94)
        if ok.sum() < 3:
            continue
        cand, data = v[ok], path.vertices[ok]
        if taken:
            far = np.min(np.hypot(cand[:, None, 0] - np.asarray(taken)[None, :, 0],
                                  cand[:, None, 1] - np.asarray(taken)[None, :, 1]), axis=1)
        else:
            far = np.ones(len(cand))
        k = int(np.argmax(far))
        chosen.append(tuple(data[k]))
        # a label is about 0.08 x 0.03 of the axes: block its neighbourhood for the next ones
        taken += [cand[k] + d for d in ((0, 0), (0.04, 0), (-0.04, 0), (0, 0.02), (0, -0.02))]
    if chosen:
        # as many digits as tell the levels apart (two levels both labelled "0.45" say nothing)
        digits = next((d for d in range(2, 7) if len({f"{v:.{d}g}" for v in cs.levels}) == len(cs.levels)), 7)
        texts = ax.clabel(cs, fmt=lambda v: f"{v:.{digits}g}", fontsize=6.5, inline=True, manual=chosen[::-1])
        # upright: a label along a contour drawn leftwards would read "8.0" for 0.8; and the
        # near-vertical ones (within 10 degrees) all read upwards, like the y label, none downwards
        for text in texts:
            angle = text.get_rotation() % 180
            text.set_rotation(angle - 180 if angle > 100 else angle)


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
