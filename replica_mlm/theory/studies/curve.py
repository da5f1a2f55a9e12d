"""Learning curves eg(alpha) at fixed ridge strength."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base import io as rm_io
from replica_mlm._base.errors import ConvergenceError
from replica_mlm._base.keywords import keywords
from replica_mlm._base.progress import bar, shown
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.theory import routes
from replica_mlm.theory.sides import penalties
from replica_mlm.theory.solve import SOLVER_OPTIONS, SaddlePoint, solve_planned, solve_reduced, with_validity

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
    valid: object = None

    @classmethod
    def from_points(cls, points: list[SaddlePoint]) -> LearningCurve:
        """Stack saddle points that share lam and task into a curve."""
        first = points[0]
        cols = {c: np.array([getattr(p, c) for p in points]) for c in COLUMNS}
        return cls(**cols, lam=first.lam, rho=first.rho, noise=first.noise, method=first.method,
                   converged=all(p.converged for p in points), loss=first.loss, channel=first.channel,
                   valid=first.valid)

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

    Written by :func:`replica_mlm._base.io.write_csv` (numbers with Python's shortest round-trip
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


@dataclass(frozen=True)
class MulticlassCurve:
    """Multi-class saddle points (a Potts site, :class:`.multiclass.MulticlassSaddlePoint`) along
    a grid of alpha at one lam; docs/multiclass.md.

    Attributes
    ----------
    alpha, eg, test_loss, estimation_error, train_loss, residual, iterations : ndarray
        As in the saddle point, one entry per alpha.
    Q, M, V, Q_hat, M_hat, V_hat : ndarray
        The order parameters, stacked: shape ``(len(alpha), K, K)`` (``M`` of the mixture theory:
        ``(len(alpha), K, q)``).
    lam : float
    method : str
        ``"general"``, ``"symmetric"`` or ``"mixture"``: the solver of the points.
    converged : bool
    points : list of MulticlassSaddlePoint
        The points themselves (with their integration errors).
    """

    alpha: np.ndarray
    eg: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    train_loss: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    Q_hat: np.ndarray
    M_hat: np.ndarray
    V_hat: np.ndarray
    lam: float
    method: str
    converged: bool
    points: list
    valid: object = None

    @classmethod
    def from_points(cls, points: list) -> MulticlassCurve:
        """Stack multi-class saddle points that share lam and task into a curve."""
        names = ("alpha", "eg", "test_loss", "estimation_error", "train_loss", "residual", "iterations",
                 "Q", "M", "V", "Q_hat", "M_hat", "V_hat")
        cols = {c: np.array([getattr(p, c) for p in points]) for c in names}
        return cls(**cols, lam=points[0].lam, method=points[0].method,
                   converged=all(p.converged for p in points), points=list(points), valid=points[0].valid)

    def __len__(self) -> int:
        return len(self.alpha)

    def to_frame(self):
        """A pandas DataFrame, one row per alpha (the rows of each point's ``to_frame``)."""
        import pandas as pd

        return pd.concat([p.to_frame() for p in self.points], ignore_index=True)


@keywords(options=SOLVER_OPTIONS)
def learning_curve(task, *, alpha, lam, method: str | None = None, loss=None, channel=None,
                   progress: bool | None = None, theory: str = "gaussian", penalty=None,
                   **options) -> LearningCurve | MulticlassCurve | list:
    """Solve the saddle point at every alpha of a grid, at one ``lam`` or at each of several.

    Whatever :func:`solve` solves, this draws: the route is planned once
    (:func:`.routes.plan`, docs/architecture.md, section "Routes"), the grid, the loss, the
    channel and the options are checked once, before any point is solved.

    Parameters
    ----------
    task : MaskedSite, limit, Spectrum or PottsSite
        The learning task (a multi-class site gives a :class:`MulticlassCurve`).
    alpha : array_like
        Grid of sample ratios n/p, each > 0 (any order).
    lam : float or array_like
        Ridge strength >= 0 (> 0 off the reduced route). A scalar (a float, a numpy scalar or a
        0-d array) gives one curve; a 1-d sequence of lam gives a list of curves, one per lam in
        the order given (as :func:`replica_mlm.simulate` gives one
        :class:`~replica_mlm.Simulation` per alpha of a sequence).
    method, loss, channel, theory, penalty, **options
        As in :func:`solve`. The reduced route (square loss, gaussian channel) solves every alpha
        at once. The others solve point by point, each warm-started from the solution at the
        previous alpha of the grid (scalar routes: extrapolated from the previous two), so that a
        grid in increasing order follows the curve continuously; a point that fails from the warm
        start is retried from a cold start. ``init`` is therefore not an option here.
    progress : bool or None
        A progress bar on stderr over the alphas solved point by point; None: only when stderr
        is a terminal.

    Returns
    -------
    LearningCurve, MulticlassCurve or list of them
        One curve for a scalar ``lam``; ``[curve(lam_0), curve(lam_1), ...]`` for a sequence.
    """
    shown(progress)  # TypeError for anything but None, True, False
    route = routes.plan(task, entry="learning_curve", loss=loss, channel=channel, theory=theory,
                        method=method, penalty=penalty)
    if "init" in options:
        raise ValueError("learning_curve warm-starts each point itself; do not pass init")
    route.check_options(options)
    alphas = _checks.grid(alpha, "alpha")
    _checks.grid_cells(alphas.size, f"learning_curve: {alphas.size} alpha")
    if _checks.is_sequence(lam):
        lams = [route.check_lam(float(lm)) for lm in _checks.grid(lam, "lam", positive=False)]
        _checks.grid_cells(alphas.size * len(lams), f"learning_curve: {alphas.size} alpha x {len(lams)} lam")
        return [_curve(route, task, alphas, lm, progress, options) for lm in lams]
    return _curve(route, task, alphas, route.check_lam(lam), progress, options)


def _curve(route, task, alphas: np.ndarray, lam: float, progress, options: dict):
    """The curve at one lam on a planned route."""
    if route.route == "root":  # vectorised over alpha, on the spectrum the penalty transforms
        original = spectrum_of(task)
        spec = route.penalty.transform(original)
        out = solve_reduced(spec, alphas, lam)
        curve = LearningCurve(alpha=alphas, **{c: out[c] for c in COLUMNS if c != "alpha"}, lam=lam,
                              rho=spec.rho, noise=spec.noise, method="root")
        return with_validity(route, task, penalties.corrected(route.penalty, original, curve))
    if route.route == "iterate":
        return LearningCurve.from_points([solve_planned(route, task, float(a), lam, **options)
                                          for a in alphas])
    points = warm_started(alphas, lambda a, start: solve_planned(route, task, a, lam, init=start, **options),
                          starts=_last_point if route.route in routes.MATRIX_ROUTES else scalar_starts,
                          progress=progress, desc=f"learning curve at lam = {lam:g}")
    if route.route in routes.MATRIX_ROUTES:
        return MulticlassCurve.from_points(points)
    return LearningCurve.from_points(points)


def warm_started(alphas: np.ndarray, solve_at, *, starts=None, progress=False, desc: str = "") -> list:
    """The points ``solve_at(alpha, init)`` over ``alphas``, each tried from the warm starts
    ``starts(points, alpha)`` in turn (default :func:`scalar_starts`), then cold (``init=None``);
    the ConvergenceError of the last start is raised. The one warm-start loop of the curves
    (:func:`learning_curve`, :func:`.bayes_optimal.bayes_optimal_curve`)."""
    starts = scalar_starts if starts is None else starts
    points: list = []
    for a in bar(alphas, progress=progress, desc=desc, unit="alpha"):
        tries = [*starts(points, float(a)), None]
        tries = [x for i, x in enumerate(tries) if all(x is not y for y in tries[:i])]
        for k, start in enumerate(tries):
            try:
                pt = solve_at(float(a), start)
                break
            except ConvergenceError:
                if k == len(tries) - 1:
                    raise
        points.append(pt)
    return points


def scalar_starts(points: list[SaddlePoint], alpha: float) -> list:
    """The warm starts of a scalar route: the extrapolation of the last two points, the last point."""
    return [_extrapolated(points, alpha), points[-1] if points else None]


def _last_point(points: list, alpha: float) -> list:
    """The warm start of a K x K route: the last point."""
    return points[-1:]


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
