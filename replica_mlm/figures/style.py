"""The package's figure style and its one figure writer (shared by every figure module).

:data:`STYLE` (the style sheet ``replica_mlm/styles/paper.mplstyle``), :func:`style` and
:func:`styled` to draw in it, :func:`save` to write PNG and PDF side by side, and small helpers
(greys, line styles and markers distinct in greyscale, log ticks, numbers as LaTeX). The public
names are listed by :mod:`replica_mlm.plotting`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from replica_mlm._base.io import atomic_open
from replica_mlm._base.keywords import keywords

__all__ = ["FORMATS", "LINESTYLES", "MARKERS", "STYLE", "STYLE_FILE", "STYLE_NAME", "grey",
           "latex_number", "log_ticks", "save", "style", "styled"]

#: line styles that stay distinct in greyscale
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "x")

#: the style sheet shipped with the package (package data)
STYLE_FILE = str(Path(__file__).parents[1] / "styles" / "paper.mplstyle")
#: its name for ``plt.style.use`` (matplotlib >= 3.7 finds it inside the package)
STYLE_NAME = "replica_mlm.styles.paper"
#: the style as rcParams: ``plt.style.use(STYLE)`` or ``plt.rc_context(STYLE)``
STYLE = dict(mpl.rc_params_from_file(STYLE_FILE, use_default_template=False))

#: what :func:`save` writes: PNG (raster, for screens) and PDF (vector, for papers)
FORMATS = (".png", ".pdf")



def style():
    """Context manager drawing figures in the package's style: ``with rm.plotting.style(): ...``."""
    return plt.rc_context(STYLE)


@keywords
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


@keywords
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
    atomically (:func:`replica_mlm._base.io.atomic_open`): a run killed while saving leaves the previous
    file or none, never a partial one; a full disk raises an OSError naming the file. ``savefig_kwargs`` go
    to :meth:`matplotlib.figure.Figure.savefig` and override those settings; ``formats`` picks a
    subset of ``(".png", ".pdf")``.

    Returns
    -------
    list of pathlib.Path
        The files written, PNG first.
    """
    from replica_mlm._base.checks import file_path

    file_path(path, "path")
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
    """Title, legend and saving shared by the figure functions; returns the figure. A ``title``
    that is not a str or None, or a ``path`` that names no file, is refused (TypeError /
    ValueError naming it) before anything is saved, and the figure is closed."""
    from replica_mlm._base import checks

    try:
        checks.optional(checks.text, title, "title")
        checks.optional(checks.file_path, path, "path")
    except (TypeError, ValueError):
        plt.close(fig)
        raise
    if title:
        ax.set_title(title, fontsize=10)
    if legend is not None:
        ax.legend(**legend)
    if path is not None:
        save(fig, path)
    return fig


@keywords
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


@keywords
def latex_number(x: float) -> str:
    """``x`` as LaTeX math text: ``10^{e}`` for a power of ten, ``x:g`` for ``1e-2 <= |x| < 1e3``,
    else ``m\\times 10^{e}`` (the legends' lambda labels)."""
    if x == 0:
        return "0"
    mant_text, exp_text = f"{x:.12e}".split("e")  # no 10**exp: it underflows for subnormal x
    exp, mant = int(exp_text), float(mant_text)
    if abs(mant - 1) < 1e-12:
        return rf"10^{{{exp}}}"
    if -2 <= exp <= 2:
        return f"{x:g}"
    return rf"{mant:g}\times 10^{{{exp}}}"
