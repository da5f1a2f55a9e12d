"""Learning-curve figures: test error against alpha (theory lines, simulation markers, the
deviation panel), the excess-error decay and the ERM curves (the z-score histogram is in
:mod:`replica_mlm.figures.z_scores`).

Drawn under :data:`replica_mlm.figures.style.STYLE` and written by
:func:`replica_mlm.figures.style.save`; the public names are listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm._base.keywords import keywords
from replica_mlm.figures.style import LINESTYLES, MARKERS, STYLE, _finish, grey, latex_number, log_ticks, save

#: width (inches) of a learning-curve figure, whose legend sits below the axes in two columns
LEGEND_BELOW_WIDTH = 5.8

__all__ = ["beats_no_learning", "plot_erm_curves", "plot_excess_decay", "plot_learning_curves"]


@keywords
def plot_learning_curves(curves: Sequence, *, path: str | os.PathLike | None = None,
                         simulations: Sequence | None = None, optimal=None, title: str | None = None,
                         logy: bool = True, bayes_optimal=None, labels: Sequence[str] | None = None):
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
    optimal : OptimalLambda, optional
        The error at the optimal ridge strength, ``eg_opt`` against ``alpha`` (from
        ``rm.optimal_lambda(site, alpha=grid)``; docs/limit.md, optimal regularisation): drawn as a
        coloured line, the lower envelope of every fixed-lam curve. An OptimalLambda among
        ``curves`` is taken as ``optimal``, so ``plot_learning_curves([best])`` draws it alone.
    title : str, optional
    logy : bool
        Logarithmic eg axis (the interpolation peak spans decades at small lam).
    bayes_optimal : BayesOptimalCurve, optional
        The Bayes-optimal error (:func:`replica_mlm.bayes_optimal_curve`) drawn as a solid green
        line beside the ERM curves (docs/bayes_optimal.md); with ``optimal``, which can lie on it,
        it is drawn on top, dashed, so that both stay visible.
    labels : sequence of str, optional
        One legend label per curve of ``curves`` (default ``lambda = ...``), e.g. to tell apart
        curves of the same lam from two theories.

    Returns
    -------
    matplotlib.figure.Figure
    """
    curves, optimal = _split_optimal(curves, optimal)
    names = _labels(labels, curves)
    with plt.rc_context(STYLE):
        # wider than the style's column: the legend goes below the axes, in two columns
        fig, ax = plt.subplots(figsize=(LEGEND_BELOW_WIDTH, STYLE["figure.figsize"][1]))
        n = len(curves)
        lam_index = {}
        for i, c in enumerate(curves):
            lam_index[c.lam] = i
            eg = np.where(np.isfinite(c.eg), c.eg, np.nan)
            ax.plot(c.alpha, eg, color=grey(i, n), ls=LINESTYLES[i % len(LINESTYLES)],
                    label=names[i] if names else rf"$\lambda = {latex_number(c.lam)}$")
        if bayes_optimal is not None:
            _draw_bayes_optimal(ax, bayes_optimal, on_top=optimal is not None)
        if optimal is not None:
            order = np.argsort(np.ravel(optimal.alpha))
            ax.plot(np.ravel(optimal.alpha)[order], np.ravel(optimal.eg_opt)[order], color="#CC79A7",
                    ls="-", lw=2.2, zorder=3, label=r"$e_g$ at the optimal $\lambda^*(\alpha)$")
        if simulations:
            for alpha, lam, mean, err in _simulation_points(simulations):
                i = lam_index.get(lam, 0)
                ax.errorbar(alpha, mean, yerr=err, fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                            color=grey(i, n), mfc="white", capsize=2, lw=0.8)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(r"$\alpha = n/p$")
        ax.set_ylabel(r"generalisation error $e_g$")
        legend = _mark_learning_curves(ax, curves, reference=optimal)
        return _finish(fig, ax, title=title, path=path, legend=legend)


def _labels(labels, curves: list) -> list[str] | None:
    """``labels`` checked: None, or one string per curve (TypeError / ValueError naming it)."""
    if labels is None:
        return None
    if isinstance(labels, str | bytes) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence of str, one per curve, got {type(labels).__name__}")
    if len(labels) != len(curves) or not all(isinstance(x, str) for x in labels):
        raise ValueError(f"labels must hold one str per curve ({len(curves)}), got {list(labels)[:5]!r}")
    return list(labels)


def _draw_bayes_optimal(ax, bo, *, on_top: bool = False) -> None:
    # imported here: the Bayes-optimal solver derives with sympy, which plotting alone does not need
    from replica_mlm.theory.studies.bayes_optimal import BayesOptimalCurve

    if not isinstance(bo, BayesOptimalCurve):
        raise TypeError(f"bayes_optimal must be a BayesOptimalCurve (rm.bayes_optimal_curve), got "
                        f"{type(bo).__name__}")
    if on_top:  # the optimal-lam line can lie on it: dashed on top, both visible
        ax.plot(bo.alpha, bo.eg, color="#009E73", lw=1.6, ls=(0, (4, 2)), zorder=3.5,
                label="Bayes-optimal (dashed, on top)")
        return
    # wide and light, under the ERM lines, so that an ERM line on top of it stays visible
    ax.plot(bo.alpha, bo.eg, color="#009E73", lw=3.2, alpha=0.55, ls="-", zorder=1.5, label="Bayes-optimal")


def _split_optimal(curves, optimal):
    """The fixed-lam curves and the OptimalLambda (``optimal=`` or one found among ``curves``);
    TypeError naming the argument for anything else."""
    from replica_mlm.theory.studies.curve import LearningCurve
    from replica_mlm.theory.studies.phase import OptimalLambda

    if isinstance(curves, LearningCurve | OptimalLambda):
        curves = [curves]
    if isinstance(curves, str | bytes) or not isinstance(curves, Sequence):
        raise TypeError(f"curves must be a sequence of LearningCurve (and at most one OptimalLambda), "
                        f"got {type(curves).__name__}")
    for k, c in enumerate(curves):
        if not isinstance(c, OptimalLambda) and not all(hasattr(c, a) for a in ("alpha", "eg", "lam")):
            raise TypeError(f"curves[{k}] must be a LearningCurve (rm.learning_curve) or an OptimalLambda, "
                            f"got {type(c).__name__}")
    found = [c for c in curves if isinstance(c, OptimalLambda)]
    curves = [c for c in curves if not isinstance(c, OptimalLambda)]
    if optimal is not None and not isinstance(optimal, OptimalLambda):
        raise TypeError(f"optimal must be an OptimalLambda (rm.optimal_lambda), got {type(optimal).__name__}")
    if len(found) + (optimal is not None) > 1:
        raise ValueError("give at most one OptimalLambda (optimal= or among curves)")
    optimal = optimal if optimal is not None else (found[0] if found else None)
    if not curves and optimal is None:
        raise ValueError("curves is empty: give at least one LearningCurve or an OptimalLambda")
    return curves, optimal


@keywords
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


def _mark_learning_curves(ax, curves: Sequence, *, reference=None) -> dict:
    """The reference lines, annotations and legend of a learning-curve figure.

    Draws C_ii (no learning), sigma^2 (the noise floor) and the interpolation threshold alpha = 1 (for
    binary channels only chance, eg = 1/2, instead) as
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
    legend = dict(handles=handles, labels=labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                  handler_map={tuple: HandlerTuple(ndivide=1)})
    binary = bool(curves) and getattr(curves[0], "channel", "gaussian") != "gaussian"
    if binary:
        # classification error: chance is 1/2; C_ii, sigma^2 and alpha = 1 belong to the regression
        handles.append(ax.axhline(0.5, color="#0072B2", lw=0.9, ls=(0, (7, 2)), zorder=1))
        labels.append(r"$e_g = 1/2$ (chance)")
    elif curves or reference is not None:
        c0 = curves[0] if curves else reference  # rho and noise of the task (an OptimalLambda has them)
        c_ii, noise = c0.rho + c0.noise, c0.noise
        refs = [(c_ii, rf"$C_{{ii}} = {c_ii:.3g}$ (no learning)", "#0072B2", (0, (7, 2))),
                (noise, rf"$\sigma^2 = {noise:.3g}$ (noise floor)", "#D55E00", (0, (1, 1.5)))]
        ref_lines = [ax.axhline(y, color=color, lw=0.9, ls=ls, zorder=1) for y, _, color, ls in refs]
        handles += ref_lines
        labels += [label for _, label, _, _ in refs]
        if getattr(c0, "loss", "square") == "square":  # n = p is the square loss's threshold only
            handles.append(ax.axvline(1.0, color="0.6", ls="-", lw=0.8, zorder=0))
            labels.append(r"interpolation, $\alpha = 1$")
        top = blended_transform_factory(ax.transData, ax.transAxes)
    if curves and not binary:
        zero = [c for c in curves if c.lam == 0]
        if zero and zero[0].alpha[0] < 1 < zero[0].alpha[-1]:
            ax.annotate(r"$\lambda = 0$: $e_g \to \infty$", xy=(1.0, 1.0), xycoords=top, xytext=(12, -6),
                        textcoords="offset points", fontsize=7.5, ha="left", va="top",
                        arrowprops=dict(arrowstyle="->", color="0.2", lw=0.8, shrinkA=1, shrinkB=0))
        smallest = min(curves, key=lambda c: c.lam)
        beat = beats_no_learning(smallest)
        if np.isfinite(beat) and beat > 1:
            ax.annotate(rf"$e_g < C_{{ii}}$ for $\alpha > {beat:.3g}$", xy=(beat, c_ii), xytext=(0, 18),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7.5,
                        arrowprops=dict(arrowstyle="->", color="0.2", lw=0.8, shrinkA=0, shrinkB=1))
    if ax.get_yscale() == "log":
        log_ticks(ax.yaxis)
        if not binary and (curves or reference is not None):
            _band_inset(ax, lines, ref_lines)
    if pairs:
        labels.append("lines: replica; markers: simulation $\\pm$ s.e.")
        handles.append(Line2D([], [], ls="none"))
        below = _deviation_panel(ax, pairs)
        legend.update(bbox_to_anchor=(0.5, -0.42), bbox_transform=below.transAxes)
    return legend


def _band_inset(ax, lines, refs) -> None:
    """A linear-axis inset (upper right, where the curves have come down) of the band between the
    noise floor sigma^2 and C_ii, which a log axis spanning the interpolation peak squeezes into a
    few points: the theory ``lines`` beyond the last alpha at which one of them is above the band
    (by more than its width), with ticks at sigma^2 and C_ii (``refs``: their two lines on ``ax``).
    Nothing when no curve stays in it."""
    c_ii, noise = (float(ln.get_ydata()[0]) for ln in refs)
    width = c_ii - noise
    if not width > 0:
        return
    top, start, stop = c_ii + 1.5 * width, -np.inf, -np.inf
    for ln in lines:
        x, y = (np.asarray(v, dtype=float) for v in ln.get_data())
        above = np.nonzero(~(y <= top) & (x > 0))[0]
        if above.size:
            start = max(start, x[above[-1]])
        stop = max(stop, x[-1])
    if not (np.isfinite(start) and start < 0.7 * stop):
        return
    inset = ax.inset_axes([0.5, 0.5, 0.47, 0.42])
    from matplotlib.lines import Line2D

    for ln in [*lines, *refs]:  # same dashes (get_linestyle says "--")
        copy = Line2D(*ln.get_data())
        copy.update_from(ln)
        copy.set_transform(inset.transData if ln in lines else inset.get_yaxis_transform())
        copy.set_label("_copy")
        inset.add_line(copy)
    inset.set_xlim(start, stop)
    inset.set_ylim(noise - 0.3 * width, top)
    inset.set_yticks([noise, c_ii], [r"$\sigma^2$", r"$C_{ii}$"])
    inset.tick_params(labelsize=7.5, length=2.5)
    inset.set_title(r"zoom: $\sigma^2 \leq e_g \leq C_{ii}$ (linear axis)", fontsize=7.5, pad=3)


def _deviation_panel(ax, pairs):
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
    return below


def _simulation_points(simulations: Sequence) -> list[tuple]:
    """(alpha, lam, mean, stderr) per point: Simulation objects expanded over their lam axis.

    TypeError naming ``simulations`` for anything but a sequence of Simulations and of flat
    (alpha, lam, mean, stderr) tuples of real numbers; ValueError for non-finite numbers.
    """
    from replica_mlm._base import checks as _checks
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


def _excess_inputs(curves, noise, fit_range) -> tuple[list, float, tuple | None]:
    """The inputs of :func:`plot_excess_decay`, checked: ``curves`` a sequence of (lam, alpha,
    excess) with lam >= 0, alpha a grid > 0 and excess real numbers of alpha's length; ``noise``
    >= 0; ``fit_range`` None or two numbers 0 < lo < hi (TypeError / ValueError naming them)."""
    from replica_mlm._base import checks

    if isinstance(curves, str | bytes) or not isinstance(curves, Sequence):
        raise TypeError("curves must be a sequence of (lam, alpha, excess) tuples, got "
                        f"{type(curves).__name__}")
    checked = []
    for k, entry in enumerate(curves):
        if isinstance(entry, str | bytes) or not isinstance(entry, Sequence) or len(entry) != 3:
            raise TypeError(f"curves[{k}] must be a (lam, alpha, excess) tuple, got {type(entry).__name__}")
        lam = checks.nonnegative(entry[0], f"curves[{k}] lam")
        alpha = checks.grid(entry[1], f"curves[{k}] alpha")
        excess = checks.real_array(entry[2], f"curves[{k}] excess").astype(float)
        if excess.shape != alpha.shape:
            raise ValueError(f"curves[{k}]: excess has shape {excess.shape}, alpha {alpha.shape}")
        checked.append((lam, alpha, excess))
    noise = checks.nonnegative(noise, "noise")
    if fit_range is not None:
        ends = checks.grid(fit_range, "fit_range")
        if ends.size != 2 or not ends[0] < ends[1]:
            raise ValueError(f"fit_range must be two alphas lo < hi, got {ends.tolist()}")
        fit_range = (float(ends[0]), float(ends[1]))
    return checked, noise, fit_range


@keywords
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

    curves, noise, fit_range = _excess_inputs(curves, noise, fit_range)
    simulations = _simulation_points(simulations) if simulations else []
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
            labels.append(rf"$\lambda = {latex_number(lam)}$")
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


@keywords
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
    from matplotlib.legend_handler import HandlerTuple

    from replica_mlm._base import checks

    checks.optional(checks.text, title, "title")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
        n = len(lines)
        handles, labels = [], []  # of the right panel: a series' line and its simulated points
        for i, ((loss, channel), c) in enumerate(lines.items()):
            style = dict(color=grey(i, n), ls=LINESTYLES[i % len(LINESTYLES)])
            for ax, key in zip(axes, ("eg", "test_loss"), strict=True):
                (line,) = ax.plot(c.alpha, getattr(c, key), **style)
                handle = line
                pts = [r for r in rows if r["loss"] == loss and r["channel"] == channel and r["lam"] == c.lam]
                if pts:
                    handle = (line, ax.errorbar(
                        [r["alpha"] for r in pts], [r[f"{key}_mean"] for r in pts],
                        yerr=[r[f"{key}_stderr"] for r in pts], fmt=MARKERS[i % len(MARKERS)], ms=3.5,
                        color=grey(i, n), mfc="white", capsize=2, lw=0.8))
            handles.append(handle)
            labels.append(f"{loss} / {channel}")
        for ax, ylabel in zip(axes, ("generalisation error $e_g$", "test loss"), strict=True):
            ax.axvline(1.0, color="0.85", lw=0.7, zorder=0)
            if alpha_c is not None:
                alpha_c_line = ax.axvline(alpha_c, color="0.6", lw=0.7, ls=":", zorder=0)
            ax.set_xlabel(r"$\alpha = n/p$")
            ax.set_ylabel(ylabel)
            ax.set_yscale("log")
        if alpha_c is not None:
            handles.append(alpha_c_line)
            labels.append(r"$\alpha_c$")
        axes[1].legend(handles, labels, handler_map={tuple: HandlerTuple(ndivide=None)}, loc="upper right",
                       fontsize=7)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        if path is not None:
            save(fig, path)
        return fig
