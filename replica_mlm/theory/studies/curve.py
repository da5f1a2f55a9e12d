"""Learning curves eg(alpha) at fixed ridge strength."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

import numpy as np

from replica_mlm import _checks
from replica_mlm import io as rm_io
from replica_mlm._keywords import keywords
from replica_mlm._progress import bar, shown
from replica_mlm.errors import ConvergenceError
from replica_mlm.tasks.protocol import MulticlassTask, spectrum_of
from replica_mlm.theory.solve import SOLVER_OPTIONS, THEORIES, SaddlePoint, solve, solve_reduced

#: per-point fields of a SaddlePoint stored as arrays in a LearningCurve
COLUMNS = ("alpha", "eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa",
           "iterations", "residual", "test_loss", "estimation_error")
#: per-curve fields written after the per-point columns by :func:`curves_to_csv`
TRAILER = ("rho", "noise", "method", "converged", "loss", "channel")


@dataclass(frozen=True)
class LearningCurve:
    """Saddle points along a grid of alpha at one lam; every column is an array over alpha.

    Attributes
    ----------
    alpha, eg, train_loss, m, q, V, m_hat, q_hat, V_hat, kappa, iterations, residual : ndarray
        As in :class:`SaddlePoint`, one entry per alpha.
    test_loss, estimation_error : ndarray
        As in :class:`SaddlePoint`, one entry per alpha.
    lam, rho, noise : float
        Ridge strength and the task's teacher signal and label noise.
    method : str
        Solver used.
    converged : bool
        True: a point that does not converge raises :class:`ConvergenceError`.
    loss, channel : str
        Names of the loss and of the label channel.
    """

    alpha: np.ndarray
    eg: np.ndarray
    train_loss: np.ndarray
    m: np.ndarray
    q: np.ndarray
    V: np.ndarray
    m_hat: np.ndarray
    q_hat: np.ndarray
    V_hat: np.ndarray
    kappa: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    lam: float
    rho: float
    noise: float
    method: str
    converged: bool = True
    loss: str = "square"
    channel: str = "gaussian"

    @classmethod
    def from_points(cls, points: list[SaddlePoint]) -> LearningCurve:
        """Stack saddle points that share lam and task into a curve."""
        first = points[0]
        cols = {c: np.array([getattr(p, c) for p in points]) for c in COLUMNS}
        return cls(**cols, lam=first.lam, rho=first.rho, noise=first.noise, method=first.method,
                   converged=all(p.converged for p in points), loss=first.loss, channel=first.channel)

    def __len__(self) -> int:
        return len(self.alpha)

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """Write the curve as CSV (one row per alpha); return the text. See :func:`curves_to_csv`."""
        return curves_to_csv([self], path)

    def to_frame(self):
        """A pandas DataFrame, one row per alpha, with the columns of :func:`curves_to_csv`
        (lam, alpha, eg, ..., rho, noise, method, converged, loss, channel)."""
        import pandas as pd

        frame = pd.DataFrame({c: getattr(self, c) for c in COLUMNS})
        for name in ("rho", "noise", "method", "converged", "loss", "channel"):
            frame[name] = getattr(self, name)
        frame.insert(0, "lam", self.lam)
        return frame

    def as_dict(self) -> dict:
        """Fields as a dict of lists and scalars (JSON-friendly apart from inf)."""
        return {f.name: (v.tolist() if isinstance(v := getattr(self, f.name), np.ndarray) else v)
                for f in fields(self)}


def curves_to_csv(curves: list[LearningCurve], path: str | os.PathLike | None = None) -> str:
    """Write learning curves as one CSV table (columns lam, alpha, eg, ..., rho, noise, method,
    converged, loss, channel).

    Written by :func:`replica_mlm.io.write_csv` (numbers with Python's shortest round-trip
    ``repr``, ``inf`` (the interpolation peak at lam = 0) as ``inf`` and ``nan`` as ``nan``), so
    :func:`replica_mlm.load` reads the curves back bit for bit. The file is written atomically
    when ``path`` is given. Returns the text.
    """
    rows = [[curve.lam, *(getattr(curve, c)[i] for c in COLUMNS), curve.rho, curve.noise, curve.method,
             bool(curve.converged), curve.loss, curve.channel]
            for curve in curves for i in range(len(curve))]
    columns = ["lam", *COLUMNS, *TRAILER]
    if path is None:
        return rm_io.csv_text(rows, columns=columns)
    return rm_io.write_csv(path, rows, columns=columns)


@keywords(options=SOLVER_OPTIONS)
def learning_curve(task, *, alpha, lam, method: str | None = None, loss=None, channel=None,
                   progress: bool | None = None, theory: str = "gaussian",
                   **options) -> LearningCurve | list[LearningCurve]:
    """Solve the saddle point at every alpha of a grid, at one ``lam`` or at each of several.

    Parameters
    ----------
    task : MaskedSite, limit or Spectrum
        The learning task.
    alpha : array_like
        Grid of sample ratios n/p, each > 0 (any order).
    lam : float or array_like
        Ridge strength >= 0 (> 0 for the general engine). A scalar (a float, a numpy scalar or a
        0-d array) gives one :class:`LearningCurve`; a 1-d sequence of lam gives a list of
        curves, one per lam in the order given (as :func:`replica_mlm.simulate` gives one
        :class:`~replica_mlm.Simulation` per alpha of a sequence).
    method, loss, channel, **options
        Passed to :func:`solve`. With the general engine each point is warm-started from the
        solution at the previous alpha of the grid (so a grid in increasing order follows the
        curve continuously); a point that fails from the warm start is retried from a cold start.
        The loss and channel are checked once, before any point is solved, by
        :func:`replica_mlm.theory.sides.channels.check_pair` (ValueError, as in :func:`solve`).
    progress : bool or None
        A progress bar on stderr over the alphas of the general engine (point by point; the fast
        path solves every alpha at once); None: only when stderr is a terminal.
    theory : {"gaussian", "mixture"}
        As in :func:`solve`: ``"mixture"`` solves the task's Gaussian mixture (``task.mixture``),
        warm-starting each point from the previous one (docs/discrete.md, section "The replica
        theory of the mixture").

    Returns
    -------
    LearningCurve or list of LearningCurve
        One curve for a scalar ``lam``; ``[curve(lam_0), curve(lam_1), ...]`` for a sequence.
    """
    shown(progress)  # TypeError for anything but None, True, False
    mixture = _checks.choice(theory, THEORIES, "theory") == "mixture"

    def run(lm: float) -> LearningCurve:
        if mixture:
            return _mixture_curve(task, alpha=alpha, lam=lm, method=method, loss=loss, channel=channel,
                                  **options)
        return _learning_curve(task, alpha=alpha, lam=lm, method=method, loss=loss, channel=channel,
                               progress=progress, **options)

    if _checks.is_sequence(lam):
        return [run(float(lm)) for lm in _checks.grid(lam, "lam", positive=False)]
    return run(lam)


def _mixture_curve(task, *, alpha, lam, method, loss, channel, **options) -> LearningCurve:
    """:func:`learning_curve` at one lam with ``theory="mixture"``: each point warm-started from the
    extrapolation of the previous two (then the previous one, then cold), as the general engine."""
    alphas = _checks.grid(alpha, "alpha")
    if "init" in options:
        raise ValueError("learning_curve warm-starts each point itself; do not pass init")
    if isinstance(task, MulticlassTask):
        raise ValueError("learning_curve takes a scalar site (as with theory='gaussian'); solve a "
                         "multi-class site point by point with rm.solve(task, theory='mixture')")
    return _warm_started(alphas, lambda a, start: solve(
        task, alpha=a, lam=lam, method=method, loss=loss, channel=channel, theory="mixture", init=start,
        **options))


def _warm_started(alphas: np.ndarray, solve_at, *, progress=False, desc: str = "") -> LearningCurve:
    """The curve of ``solve_at(alpha, init)`` over ``alphas``, each point started in turn from the
    extrapolation of the last two points, the last point, then cold (``init=None``); the
    ConvergenceError of the last start is raised."""
    points: list[SaddlePoint] = []
    for a in bar(alphas, progress=progress, desc=desc, unit="alpha"):
        starts = [_extrapolated(points, float(a)), points[-1] if points else None, None]
        starts = [x for i, x in enumerate(starts) if all(x is not y for y in starts[:i])]
        for k, start in enumerate(starts):
            try:
                pt = solve_at(float(a), start)
                break
            except ConvergenceError:
                if k == len(starts) - 1:
                    raise
        points.append(pt)
    return LearningCurve.from_points(points)


def _extrapolated(points: list[SaddlePoint], alpha: float) -> SaddlePoint | None:
    """A start for the general engine at ``alpha`` from the points of the curve so far.

    Linear in alpha through the last two points in the engine's unknowns ``(log V, log q,
    artanh(m / sqrt(q rho)))``, when ``alpha`` continues their direction by at most twice their
    step; otherwise the last point (None for the first). Only ``V, q, m`` of the result are
    meaningful: it is used as ``init`` and nowhere else.
    """
    from replica_mlm.theory.solvers import packing
    if len(points) < 2:
        return points[-1] if points else None
    p0, p1 = points[-2], points[-1]
    step = p1.alpha - p0.alpha
    t = (alpha - p1.alpha) / step if step != 0 else 0.0
    if not 0.0 < t <= 2.0 or not all(np.isfinite(p.V * p.q * p.m) and p.V > 0 and p.q > 0
                                     for p in (p0, p1)):
        return p1

    def pack(p):  # the overlap ratio kept off +-1, where a straight line would overshoot
        return packing.pack(p.V, p.q, p.m, p.rho, edge=0.999)

    V, q, m = packing.unpack(pack(p1) + t * (pack(p1) - pack(p0)), p1.rho)
    return replace(p1, alpha=alpha, V=V, q=q, m=m)


def _learning_curve(task, *, alpha, lam, method, loss, channel, progress=None, **options) -> LearningCurve:
    """:func:`learning_curve` at one lam."""
    from replica_mlm.theory.sides import channels, losses
    spec = spectrum_of(task)
    alphas = _checks.grid(alpha, "alpha")
    lam = _checks.nonnegative(lam, "lam")
    loss_obj, channel_obj = losses.resolve(loss), channels.resolve(channel, task)
    fast = loss_obj.is_square and channel_obj.name == "gaussian"
    if method is None:
        method = "root" if fast else "general"
    channels.check_pair(loss_obj, channel_obj, lam=lam, general=method == "general")
    if method == "root" and fast and not options:  # vectorised over alpha
        out = solve_reduced(spec, alphas, lam)
        return LearningCurve(alpha=alphas, **{c: out[c] for c in COLUMNS if c != "alpha"}, lam=lam,
                             rho=spec.rho, noise=spec.noise, method="root")
    if method == "general":
        if "init" in options:
            raise ValueError("learning_curve warm-starts each point itself; do not pass init")
        return _warm_started(alphas, lambda a, start: solve(
            spec, alpha=a, lam=lam, method=method, loss=loss_obj, channel=channel_obj, init=start,
            **options), progress=progress, desc=f"learning curve at lam = {lam:g}")
    return LearningCurve.from_points(
        [solve(spec, alpha=float(a), lam=lam, method=method, loss=loss_obj, channel=channel_obj,
               **options) for a in alphas]
    )
