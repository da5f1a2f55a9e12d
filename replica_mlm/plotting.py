"""Figures for papers: one style, one writer, vector PDF and 300 dpi PNG, readable in greyscale.

Every figure the package writes is drawn under :data:`STYLE` (the style sheet
``replica_mlm/styles/paper.mplstyle``) and written by :func:`save`. Use the same style in your own
figures with ``plt.style.use(rm.plotting.STYLE)`` (a dict), ``plt.style.use(rm.plotting.STYLE_FILE)``
(the file) or, with matplotlib >= 3.7, ``plt.style.use("replica_mlm.styles.paper")`` (by name).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from replica_mlm.io import atomic_open

#: line styles that stay distinct in greyscale
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "x")

#: the style sheet shipped with the package (package data)
STYLE_FILE = str(Path(__file__).with_name("styles") / "paper.mplstyle")
#: its name for ``plt.style.use`` (matplotlib >= 3.7 finds it inside the package)
STYLE_NAME = "replica_mlm.styles.paper"
#: the style as rcParams: ``plt.style.use(STYLE)`` or ``plt.rc_context(STYLE)``
STYLE = dict(mpl.rc_params_from_file(STYLE_FILE, use_default_template=False))

#: what :func:`save` writes: PNG (raster, for screens) and PDF (vector, for papers)
FORMATS = (".png", ".pdf")


def style():
    """Context manager drawing figures in the package's style: ``with rm.plotting.style(): ...``."""
    return plt.rc_context(STYLE)


def styled(draw):
    """Decorator: run a function that draws figures inside :func:`style` (the package's style).

    Styles apply when artists are created, so the whole drawing function runs in the context.
    """
    import functools

    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return draw(*args, **kwargs)

    return wrapper


def grey(i: int, n: int) -> str:
    """The i-th of n greys from black to mid-grey (distinct when printed without colour)."""
    return str(0.6 * i / max(n - 1, 1))


def save(fig, path: str | os.PathLike, *, formats: Sequence[str] = FORMATS, **savefig_kwargs) -> list[Path]:
    """Write ``fig`` as 300 dpi PNG and vector PDF side by side; the package's one figure writer.

    ``path`` is taken with or without a suffix (``out/curve``, ``out/curve.png`` and
    ``out/curve.pdf`` all write ``out/curve.png`` and ``out/curve.pdf``). The output settings of
    :data:`STYLE` apply wherever ``save`` is called (inside a style context or not): 300 dpi, a
    tight bounding box with a margin (so no label is cut off), white background, TrueType fonts in
    the PDF, no creation date in the PDF (identical input, identical file). Each file is written
    atomically (:func:`replica_mlm.io.atomic_open`): a run killed while saving leaves the previous
    file or none, never a partial one; a full disk raises an OSError naming the file. ``savefig_kwargs`` go
    to :meth:`matplotlib.figure.Figure.savefig` and override those settings; ``formats`` picks a
    subset of ``(".png", ".pdf")``.

    Returns
    -------
    list of pathlib.Path
        The files written, PNG first.
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {tuple(formats)!r}")
    stem = Path(path)
    if stem.suffix.lower() in FORMATS:
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    # fontTools, which subsets the fonts embedded in the PDF, warns about the timestamps of
    # matplotlib's bundled DejaVu fonts on every save: keep that noise off the user's terminal
    font_log = logging.getLogger("fontTools")
    level = font_log.level
    font_log.setLevel(logging.ERROR)
    try:
        with plt.rc_context({k: v for k, v in STYLE.items() if k.startswith(("savefig.", "pdf."))}):
            boxes = _tight_boxes(fig, savefig_kwargs) if len(formats) > 1 else None
            for ext in formats:
                out = stem.parent / (stem.name + ext)
                kwargs = dict(savefig_kwargs)
                if boxes is not None:
                    kwargs["bbox_inches"] = boxes[ext]
                if ext == ".pdf":
                    kwargs.setdefault("metadata", {"CreationDate": None})
                kwargs["format"] = ext[1:]  # the temporary file's name has another suffix
                with atomic_open(out, "wb") as fh:  # never a partial figure under its name
                    fig.savefig(fh, **kwargs)
                written.append(out)
    finally:
        font_log.setLevel(level)
    return written


def _tight_boxes(fig, savefig_kwargs: dict) -> dict | None:
    """The PNG's and the PDF's bounding box from one layout pass, or None (each file its own).

    With ``bbox_inches="tight"`` matplotlib lays a figure out and measures every artist before
    each file it writes, about a sixth of the time of writing a PNG and a PDF. Here the figure is
    measured once, as savefig does for the PNG (Agg, at the PNG's dpi), so the PNG is the file
    savefig writes. The PDF's text is wider than Agg's hinted raster metrics (measured: 2.1 pt on a
    2-panel figure with a legend), so its box gets twice the margin: every side keeps at least
    the margin matplotlib's own PDF box has. None when the caller asked for another box or the
    figure has a layout engine (it needs its own pass).
    """
    if (savefig_kwargs.get("bbox_inches", mpl.rcParams["savefig.bbox"]) != "tight"
            or fig.get_layout_engine() is not None):
        return None
    dpi = savefig_kwargs.get("dpi", mpl.rcParams["savefig.dpi"])
    pad = savefig_kwargs.get("pad_inches", mpl.rcParams["savefig.pad_inches"])
    if dpi == "figure" or pad == "layout":
        return None
    old = fig.dpi
    fig.dpi = dpi
    try:
        fig.draw_without_rendering()
        box = fig.get_tightbbox(bbox_extra_artists=savefig_kwargs.get("bbox_extra_artists"))
    finally:
        fig.dpi = old
    return {".png": box.padded(pad), ".pdf": box.padded(2 * pad)}


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
    simulations : sequence of Simulation or of (alpha, lam, mean, stderr) tuples, optional
        Points with error bars, matched to curves by lam. A :class:`~replica_mlm.Simulation`
        (e.g. from ``rm.simulate(site, alpha=[...], lam=[...])``; one alone is taken as a list of
        one) gives one point per lam: its realised alpha, ``eg_mean`` and ``eg_stderr``. A tuple
        is 4 finite real numbers (TypeError for other shapes, e.g. a nested list).
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
            for alpha, lam, mean, err in _simulation_points(simulations):
                i = lam_index.get(lam, 0)
                ax.errorbar(alpha, mean, yerr=err, fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                            color=grey(i, n), mfc="white", capsize=2, lw=0.8)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_ylabel(r"generalisation error $e_g$")
        legend = _mark_learning_curves(ax, curves)
        return _finish(fig, ax, title=title, path=path, legend=legend)


def beats_no_learning(curve) -> float:
    """The alpha beyond the peak of ``curve.eg`` from which eg stays below C_ii = rho + sigma^2.

    C_ii is the error of predicting the mean (no learning). Returns ``nan`` when the curve does not
    get below C_ii after its peak on its alpha grid (e.g. the grid stops too early).

    Parameters
    ----------
    curve : LearningCurve

    Returns
    -------
    float
    """
    eg = np.where(np.isfinite(curve.eg), curve.eg, np.inf)
    alpha = np.asarray(curve.alpha, dtype=float)
    c_ii = curve.rho + curve.noise
    start = int(np.argmax(eg))
    above = np.nonzero(eg[start:] >= c_ii)[0]
    first = start + (above[-1] + 1 if above.size else 0)
    return float(alpha[first]) if first < alpha.size else float("nan")


def _mark_learning_curves(ax, curves: Sequence) -> dict:
    """The reference lines, annotations and legend of a learning-curve figure.

    Draws C_ii (no learning), sigma^2 (Bayes floor) and the interpolation threshold alpha = 1 as
    thin coloured lines (each in the legend), an arrow where a lam = 0 curve diverges at alpha = 1,
    and where the smallest-lam curve first beats no learning after its peak. With simulation
    points (error-bar containers on ``ax``), a panel below shows their relative deviation from the
    theory line of the same lam, where the error bars are visible (on the log axis they are
    shorter than the markers). Returns the keyword arguments of the legend (outside the axes, on
    the right): one entry per lam, line and marker together.
    """
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    handles = []
    pairs = []
    for ln in lines:
        marks = [c for c in ax.containers
                 if c.lines[0] is not None and c.lines[0].get_color() == ln.get_color()]
        pairs += [(ln, c) for c in marks]
        if marks:
            m = marks[0].lines[0]
            handles.append((ln, Line2D([], [], ls="none", marker=m.get_marker(), ms=m.get_markersize(),
                                       color=m.get_color(), mfc=m.get_markerfacecolor())))
        else:
            handles.append(ln)
    labels = [ln.get_label() for ln in lines]
    legend = dict(handles=handles, labels=labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  handler_map={tuple: HandlerTuple(ndivide=1)})
    if curves:
        c0 = curves[0]
        c_ii, noise = c0.rho + c0.noise, c0.noise
        refs = [(c_ii, rf"$C_{{ii}} = {c_ii:.3g}$ (no learning)", "#0072B2", (0, (7, 2))),
                (noise, rf"$\sigma^2 = {noise:.3g}$ (Bayes floor)", "#D55E00", (0, (1, 1.5)))]
        for y, label, color, ls in refs:
            handles.append(ax.axhline(y, color=color, lw=0.9, ls=ls, zorder=1))
            labels.append(label)
        handles.append(ax.axvline(1.0, color="0.6", lw=0.8, zorder=0))
        labels.append(r"interpolation, $\alpha = 1$")
        top = blended_transform_factory(ax.transData, ax.transAxes)
        zero = [c for c in curves if c.lam == 0]
        if zero and zero[0].alpha[0] < 1 < zero[0].alpha[-1]:
            ax.annotate(r"$\lambda = 0$: $e_g \to \infty$", xy=(1.0, 1.0), xycoords=top, xytext=(12, -6),
                        textcoords="offset points", fontsize=7.5, ha="left", va="top",
                        arrowprops=dict(arrowstyle="->", color="0.2", lw=0.8, shrinkA=1, shrinkB=0))
        smallest = min(curves, key=lambda c: c.lam)
        beat = beats_no_learning(smallest)
        if np.isfinite(beat) and beat > 1:
            ax.annotate(rf"$e_g < C_{{ii}}$ for $\alpha > {beat:.2g}$", xy=(beat, c_ii), xytext=(0, 18),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7.5,
                        arrowprops=dict(arrowstyle="->", color="0.2", lw=0.8, shrinkA=0, shrinkB=1))
    if ax.get_yscale() == "log":
        log_ticks(ax.yaxis)
    if pairs:
        labels.append("lines: replica theory\nmarkers: simulation\n(mean $\\pm$ s.e.)")
        handles.append(Line2D([], [], ls="none"))
        _deviation_panel(ax, pairs)
    return legend


def _deviation_panel(ax, pairs) -> None:
    """A panel below ``ax``: (simulation - theory) / theory in %, with the error bars, per lam.

    ``pairs`` are (theory Line2D, ErrorbarContainer) of the same lam; the theory is interpolated
    linearly in log eg on the line's grid at the simulated alpha.
    """
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    fig = ax.figure
    fig.set_figheight(1.35 * fig.get_figheight())
    below = make_axes_locatable(ax).append_axes("bottom", size="35%", pad=0.12, sharex=ax)
    lo, hi = ax.get_xlim()
    colors = list(dict.fromkeys(line.get_color() for line, _ in pairs))
    for line, cont in pairs:
        # points of different lam at the same alpha side by side (the offset is 1 % of the axis)
        dodge = 0.01 * (hi - lo) * (colors.index(line.get_color()) - (len(colors) - 1) / 2)
        xs, ys = (np.asarray(v, dtype=float) for v in cont.lines[0].get_data())
        ga, ge = (np.asarray(v, dtype=float) for v in line.get_data())
        ok = np.isfinite(ge) & (ge > 0)
        theory = np.exp(np.interp(xs, ga[ok], np.log(ge[ok]), left=np.nan, right=np.nan))
        segs = cont.lines[2][0].get_segments() if cont.lines[2] else []
        err = np.array([abs(sg[1][1] - sg[0][1]) / 2 for sg in segs]) if segs else np.zeros_like(ys)
        m = cont.lines[0]
        below.errorbar(xs + dodge, 100 * (ys / theory - 1), yerr=100 * err / theory, ls="none",
                       marker=m.get_marker(), ms=m.get_markersize(), color=m.get_color(),
                       mfc=m.get_markerfacecolor(), capsize=2, lw=0.8)
    below.axhline(0.0, color="0.4", lw=0.7, zorder=0)
    below.axvline(1.0, color="0.6", lw=0.8, zorder=0)
    below.set_ylabel("sim. $-$ theory\n(% of theory)", fontsize=8.5)
    below.set_xlabel(ax.get_xlabel())
    ax.set_xlabel("")
    ax.tick_params(labelbottom=False)


def log_ticks(axis) -> None:
    """Plain-number labels (0.3, 0.5, 1, 2, ...) on a logarithmic axis, as many as fit.

    Parameters
    ----------
    axis : matplotlib.axis.Axis
        ``ax.xaxis`` or ``ax.yaxis`` of a log-scaled axis, after its limits are set.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax = axis.axes
    lo, hi = sorted(ax.get_ylim() if axis is ax.yaxis else ax.get_xlim())
    decades = np.log10(hi / lo) if lo > 0 else np.inf
    subs = ((1.0, 2.0, 5.0) if decades > 2.5 else (1.0, 2.0, 3.0, 5.0) if decades > 0.8
            else np.arange(1.0, 10.0) if decades > 0.4 else np.arange(1.0, 10.0, 0.5))
    axis.set_major_locator(LogLocator(subs=subs, numticks=12))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(LogLocator(subs=np.arange(1.0, 10.0), numticks=12))
    axis.set_minor_formatter(NullFormatter())


def _simulation_points(simulations: Sequence) -> list[tuple]:
    """(alpha, lam, mean, stderr) per point: Simulation objects expanded over their lam axis.

    TypeError naming ``simulations`` for anything but a sequence of Simulations and of flat
    (alpha, lam, mean, stderr) tuples of real numbers; ValueError for non-finite numbers.
    """
    from replica_mlm import _checks
    from replica_mlm.learners.simulate import Simulation

    shapes = "a sequence of Simulation objects or of (alpha, lam, mean, stderr) tuples of 4 real numbers"
    if isinstance(simulations, Simulation):
        simulations = [simulations]
    if isinstance(simulations, str | bytes) or not isinstance(simulations, Sequence | np.ndarray):
        raise TypeError(f"simulations must be {shapes}, got {type(simulations).__name__}")
    points = []
    for k, sim in enumerate(simulations):
        if isinstance(sim, Simulation):
            points += [(sim.alpha, float(lam), m, e)
                       for lam, m, e in zip(sim.lam, sim.eg_mean, sim.eg_stderr, strict=True)]
            continue
        row = _checks.real_array(sim, f"simulations[{k}]")  # TypeError for strings, None, complex
        if row.shape != (4,):
            raise TypeError(f"simulations must be {shapes}; simulations[{k}] has shape {row.shape}")
        points.append(tuple(map(float, _checks.finite_array(row, f"simulations[{k}]"))))
    return points


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
        z-scores that enter the statistical checks: 1-d, finite real numbers (ValueError for NaN
        or inf, TypeError for complex numbers).
    excluded : array_like, optional
        z-scores shown for information only (e.g. points with a known finite-size bias), drawn as
        an outline on the same bins; the same rules as ``z``.
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional
    bins : int
        Number of bins on the symmetric range covering all z (at least [-4, 4]).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from replica_mlm._checks import finite_vector

    z, excl = finite_vector(z, "z"), finite_vector([] if excluded is None else excluded, "excluded")
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


def plot_excess_decay(curves: Sequence, *, noise: float, fit_range: tuple[float, float] | None = None,
                      simulations: Sequence | None = None, path: str | os.PathLike | None = None,
                      title: str | None = None):
    """Log-log plot of eg - sigma^2 against alpha, with the asymptote sigma^2 / alpha.

    Parameters
    ----------
    curves : sequence of (lam, alpha, excess) tuples
        ``excess = eg - sigma^2`` on the grid ``alpha``, one line per lam.
    noise : float
        sigma^2, the constant of the asymptote ``sigma^2 / alpha`` (docs/theory.md, section 5).
    fit_range : (float, float), optional
        Shaded alpha range (where the exponent is fitted).
    simulations : sequence of (alpha, lam, mean, stderr) tuples, optional
        Simulated ``eg - sigma^2`` (mean and standard error over training sets), drawn as markers
        with error bars in the style of the line of the same lam.
    path : path, optional
        Where to save (PNG and PDF).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        n = len(curves)
        handles, labels = [], []
        for i, (lam, alpha, excess) in enumerate(curves):
            (line,) = ax.plot(alpha, np.where(np.asarray(excess) > 0, excess, np.nan), color=grey(i, n),
                              ls=LINESTYLES[i % len(LINESTYLES)])
            pts = [s for s in simulations or () if s[1] == lam]
            handle = line
            if pts:
                a_s, _, m_s, e_s = (np.asarray(v, dtype=float) for v in zip(*pts, strict=True))
                ax.errorbar(a_s, m_s, yerr=e_s, fmt=MARKERS[i % len(MARKERS)], color=grey(i, n), mfc="white",
                            capsize=2, lw=0.8, zorder=3)
                handle = (line, Line2D([], [], ls="none", marker=MARKERS[i % len(MARKERS)], color=grey(i, n),
                                       mfc="white"))
            handles.append(handle)
            labels.append(rf"$\lambda = {_latex_number(lam)}$")
        a = np.asarray(curves[0][1]) if curves else np.geomspace(1, 1000, 10)
        handles.append(ax.plot(a, noise / a, color="0.0", lw=0.8, ls=(0, (1, 1.5)))[0])
        labels.append(r"$\sigma^2/\alpha$")
        if fit_range is not None:
            handles.append(ax.axvspan(*fit_range, color="0.92", zorder=0))
            labels.append("fit range")
        if simulations:
            handles.append(Line2D([], [], ls="none"))
            labels.append("lines: replica theory\nmarkers: simulation\n(mean $\\pm$ s.e.)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_ylabel(r"$e_g - \sigma^2$")
        return _finish(fig, ax, title=title, path=path,
                       legend=dict(handles=handles, labels=labels, loc="upper left",
                                   bbox_to_anchor=(1.01, 1.0), handler_map={tuple: HandlerTuple(ndivide=1)}))


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
