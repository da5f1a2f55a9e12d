"""Figures for papers: one style, one writer, vector PDF and 300 dpi PNG, readable in greyscale.

Every figure the package writes is drawn under :data:`STYLE` (the style sheet
``replica_mlm/styles/paper.mplstyle``) and written by :func:`save`. Use the same style in your own
figures with ``plt.style.use(rm.plotting.STYLE)`` (a dict), ``plt.style.use(rm.plotting.STYLE_FILE)``
(the file) or, with matplotlib >= 3.7, ``plt.style.use("replica_mlm.styles.paper")`` (by name).

This module is the public face of the figures: the style and the writer live in
:mod:`replica_mlm.figures.style`, the learning-curve figures in :mod:`replica_mlm.figures.curves`,
the phase diagram in :mod:`replica_mlm.figures.phase_diagrams`; their public names are this module's API.
"""

from __future__ import annotations

from replica_mlm.figures.curves import (
    beats_no_learning,
    plot_erm_curves,
    plot_excess_decay,
    plot_learning_curves,
)
from replica_mlm.figures.phase_diagrams import plot_phase_diagram
from replica_mlm.figures.style import (
    FORMATS,
    LINESTYLES,
    MARKERS,
    STYLE,
    STYLE_FILE,
    STYLE_NAME,
    grey,
    latex_number,
    log_ticks,
    save,
    style,
    styled,
)
from replica_mlm.figures.z_scores import plot_z_histogram

__all__ = ["FORMATS", "LINESTYLES", "MARKERS", "STYLE", "STYLE_FILE", "STYLE_NAME", "beats_no_learning",
           "grey", "latex_number", "log_ticks", "plot_erm_curves", "plot_excess_decay",
           "plot_learning_curves", "plot_phase_diagram", "plot_z_histogram", "save", "style", "styled"]
