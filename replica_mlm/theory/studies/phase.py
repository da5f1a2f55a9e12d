"""Optimal regularisation and phase diagrams of eg over (alpha, lam) or (alpha, shift)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.errors import ConvergenceError
from replica_mlm._base.keywords import keywords
from replica_mlm._base.progress import bar, shown
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.theory import routes
from replica_mlm.theory.solve import SaddlePoint, solve_planned, solve_reduced
from replica_mlm.theory.solvers.eg_slope import alpha_derivative
from replica_mlm.theory.solvers.root import converged as root_converged
from replica_mlm.theory.studies import brent

#: default search interval of optimal_lambda
LAM_BOUNDS = (1e-8, 1e4)


@dataclass(frozen=True)
class OptimalLambda:
    """The ridge strength that minimises eg, at each alpha of :func:`optimal_lambda`.

    Every array has the shape of the ``alpha`` given: ``(k,)`` for a 1-d grid, ``()`` (0-d
    arrays, e.g. ``float(res.lam_opt)``) for a scalar alpha.

    Attributes
    ----------
    alpha : ndarray
        Sample ratios n/p.
    lam_opt : ndarray
        The minimising lam (exactly a bound of the search interval where ``at_bound``).
    eg_opt : ndarray
        eg at ``lam_opt`` (the channel's natural error, as :attr:`SaddlePoint.eg`).
    at_bound : ndarray of bool
        True where the minimum over the search interval lies at one of its ends.
    residual : ndarray
        Residual of the saddle point at ``lam_opt`` (see :attr:`SaddlePoint.residual`).
    points : tuple of SaddlePoint
        The saddle point at ``lam_opt`` for each alpha (in the order of ``alpha.ravel()``).
    converged : bool
        True only if every saddle point converged (its residual within the solver's tolerance)
        and every interior Brent minimisation met ``xatol``.
    bounds : (float, float)
        The search interval of lam.
    rho, noise : float
        Teacher signal and label noise of the task.
    loss, channel : str
        Names of the loss and of the label channel.
    """

    alpha: np.ndarray
    lam_opt: np.ndarray
    eg_opt: np.ndarray
    at_bound: np.ndarray
    residual: np.ndarray
    points: tuple
    converged: bool
    bounds: tuple[float, float]
    rho: float
    noise: float
    loss: str = "square"
    channel: str = "gaussian"

    def __len__(self) -> int:
        return self.alpha.size

    def to_frame(self):
        """A pandas DataFrame, one row per alpha: alpha, lam_opt, eg_opt, at_bound, residual and
        the saddle point's other fields (train_loss, m, q, V, ...) at lam_opt."""
        import pandas as pd

        cols = {"alpha": self.alpha.ravel(), "lam_opt": self.lam_opt.ravel(),
                "eg_opt": self.eg_opt.ravel(), "at_bound": self.at_bound.ravel(),
                "residual": self.residual.ravel()}
        for name in ("train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "test_loss",
                     "estimation_error", "iterations", "converged"):
            cols[name] = [getattr(sp, name) for sp in self.points]
        frame = pd.DataFrame(cols)
        frame["rho"], frame["noise"] = self.rho, self.noise
        frame["loss"], frame["channel"] = self.loss, self.channel
        return frame


@keywords
def optimal_lambda(task, *, alpha, bounds: tuple[float, float] = LAM_BOUNDS,
                   xatol: float = 1e-9, loss=None, channel=None,
                   progress: bool | None = None) -> OptimalLambda:
    """The ridge strength that minimises eg, at one alpha or at every alpha of a grid.

    ``loss`` and ``channel`` are as in :func:`solve`; with the general engine the scan is solved
    point by point with warm starts along lam (from large to small lam) and eg is the channel's
    natural error (the classification error for sign and logit).

    A scan of 41 log-spaced lam in ``bounds`` brackets the minimum (on the fast path one
    vectorised solve over every (alpha, lam) of the scan), which bounded Brent minimisation in
    ``log lam`` then refines to ``xatol`` (eg is smooth in log lam, so its error is of order
    xatol^2: far below 1e-8 relative). If the minimum lies at an end of ``bounds`` that end is
    returned, ``at_bound`` is True there and the saddle point's message says so.

    Parameters
    ----------
    task : MaskedSite, limit or Spectrum
    alpha : float or array_like
        Sample ratio(s) > 0: a scalar or a 1-d grid (any order).
    bounds : (float, float)
        Search interval ``0 < low < high`` of lam.
    xatol : float
        Absolute tolerance of Brent's method in ``log lam``, in (0, 1].
    progress : bool or None
        A progress bar on stderr over the alphas; None: only when stderr is a terminal.

    Returns
    -------
    OptimalLambda
        Arrays shaped like ``alpha``: 0-d for a scalar (``float(res.lam_opt)``,
        ``res.points[0]`` the saddle point), ``(k,)`` for a grid of k alpha.
    """
    kind = _Kind(routes.plan(task, entry="optimal_lambda", loss=loss, channel=channel))
    spec = spectrum_of(task)
    scalar = not _checks.is_sequence(alpha)
    alphas = np.atleast_1d(_checks.positive(alpha, "alpha")) if scalar else _checks.grid(alpha, "alpha")
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise TypeError(f"bounds must be a pair (low, high), got {bounds!r}")
    lo, hi = (_checks.positive(b, "bounds") for b in bounds)
    if not lo < hi:
        raise ValueError(f"bounds must satisfy 0 < low < high, got {bounds}")
    xatol = _checks.positive(xatol, "xatol")
    if xatol > 1.0:
        raise ValueError(f"xatol (tolerance in log lam) must be in (0, 1], got {xatol}")
    found = _optimal(task, spec, alphas, (lo, hi), xatol, kind, progress=shown(progress))
    shape = () if scalar else alphas.shape
    points = tuple(sp for _, sp, _, _ in found)

    def arr(values, dtype=float) -> np.ndarray:
        return np.array(values, dtype=dtype).reshape(shape)

    return OptimalLambda(
        alpha=arr(alphas), lam_opt=arr([lm for lm, *_ in found]), eg_opt=arr([sp.eg for sp in points]),
        at_bound=arr([b for *_, b in found], bool), residual=arr([sp.residual for sp in points]),
        points=points, converged=all(sp.converged and ok for _, sp, ok, _ in found),
        bounds=(lo, hi), rho=spec.rho, noise=spec.noise, loss=points[0].loss, channel=points[0].channel)


class _Kind:
    """The route of a diagram (:func:`.routes.plan`): the reduced one (square loss, gaussian
    channel) or the general engine, with the loss and channel it resolved."""

    def __init__(self, route: routes.Plan | None = None) -> None:
        self.route = route or routes.plan(None, entry="phase_diagram")
        self.fast = self.route.fast
        self.alpha_1 = 1.0 if getattr(self.route.loss, "name", "square") == "square" else math.nan

    def solve(self, task, alpha: float, lam: float, init: SaddlePoint | None = None) -> SaddlePoint:
        """The point at (alpha, lam), from ``init`` if given (the general engine), else cold."""
        if self.fast:
            return solve_planned(self.route, task, alpha, lam)
        try:
            return solve_planned(self.route, task, alpha, lam, init=init)
        except ConvergenceError:
            if init is None:
                raise
            return solve_planned(self.route, task, alpha, lam)


def _optimal(task, spec, alphas: np.ndarray, bounds, xatol: float,
             kind: _Kind | None = None, *, progress: bool | None = False
             ) -> list[tuple[float, SaddlePoint, bool, bool]]:
    """optimal_lambda at every alpha: a scan over (alpha, lam) (vectorised on the fast path),
    then Brent per alpha. Per alpha: (lam*, saddle point, Brent converged, at a bound)."""
    from scipy import optimize  # imported here: scipy.optimize costs ~0.5 s at package import

    kind = kind or _Kind()
    logs = np.linspace(math.log(bounds[0]), math.log(bounds[1]), 41)
    if kind.fast:
        grid_a, grid_l = np.meshgrid(alphas, np.exp(logs), indexing="ij")
        scan = solve_reduced(spec, grid_a.ravel(), grid_l.ravel())["eg"].reshape(grid_a.shape)
        starts = [[None] * logs.size for _ in alphas]
    else:  # warm starts from strong to weak ridge
        scan = np.empty((alphas.size, logs.size))
        starts = []
        for i, a in enumerate(alphas):
            prev, row = None, [None] * logs.size
            for j in range(logs.size - 1, -1, -1):
                prev = row[j] = kind.solve(task, float(a), float(math.exp(logs[j])), prev)
                scan[i, j] = prev.eg
            starts.append(row)
    results = []
    minima = _fast_minima(spec, alphas, scan, logs, xatol) if kind.fast else {}
    for i, (alpha, row, start) in enumerate(bar(zip(alphas, scan, starts, strict=True), progress=progress,
                                                desc="optimal lam", total=alphas.size, unit="alpha")):
        alpha = float(alpha)
        j = int(np.argmin(row))
        if j in (0, logs.size - 1):
            lam_star = float(bounds[0] if j == 0 else bounds[1])  # exactly the bound, not exp(log)
            end = "lower" if j == 0 else "upper"
            sp = kind.solve(task, alpha, lam_star, start[j])
            results.append((lam_star, _with_message(sp, f"optimal lam at the {end} bound {lam_star:g}"),
                            True, True))
            continue

        def eg(log_lam: float, alpha=alpha, init=start[j]) -> float:
            return kind.solve(task, alpha, math.exp(log_lam), init).eg

        res = minima.get(i) or optimize.minimize_scalar(
            eg, bounds=(logs[j - 1], logs[j + 1]), method="bounded",
            options={"xatol": xatol, "maxiter": 500})
        lam_star = float(math.exp(res.x))
        sp = kind.solve(task, alpha, lam_star, start[j])
        results.append((lam_star, _with_message(
            sp, f"optimal lam by bounded Brent in log lam ({res.nfev} solves)"), bool(res.success), False))
    return results


def _fast_minima(spec, alphas: np.ndarray, scan: np.ndarray, logs: np.ndarray,
                 xatol: float) -> dict[int, brent.Minimum]:
    """The bounded Brent minimisations of eg in log lam of every interior scan minimum, in
    lockstep (:func:`.brent.minimise_many`): one vectorised solve per round over all alphas, the
    same trial points and minimisers as one scipy minimisation per alpha."""
    where = [i for i, row in enumerate(scan) if int(np.argmin(row)) not in (0, logs.size - 1)]
    if not where:
        return {}
    bounds = [(logs[int(np.argmin(scan[i])) - 1], logs[int(np.argmin(scan[i])) + 1]) for i in where]
    sub = alphas[where]

    def eg(idx: np.ndarray, x: np.ndarray) -> np.ndarray:
        lam = np.array([math.exp(v) for v in x.tolist()])  # math.exp, as the scalar path
        return solve_reduced(spec, sub[idx], lam, per_point=True)["eg"]

    found = brent.minimise_many(eg, bounds, xatol=xatol, maxiter=500)
    return dict(zip(where, found, strict=True))


def _with_message(sp: SaddlePoint, message: str) -> SaddlePoint:
    from dataclasses import replace

    return replace(sp, message=f"{sp.message}; {message}")


@dataclass(frozen=True)
class PhaseDiagram:
    """eg and derived fields on a grid of alpha (columns) and lam or shift (rows).

    Attributes
    ----------
    alpha : ndarray, shape (n_alpha,)
    axis : {"lam", "shift"}
        What the rows vary.
    y : ndarray, shape (n_y,)
        The row values (lam or shift).
    lam : float or ndarray
        Ridge strength (the rows when ``axis == "lam"``).
    shift : float or None
        Shift of the Potts model for ``axis == "shift"`` diagrams (the rows); None otherwise.
    eg, train_loss, deg_dalpha : ndarray, shape (n_y, n_alpha)
        Generalisation error, training loss and d eg / d alpha (positive: more data hurts).
    optimal_lam, optimal_eg : ndarray, shape (n_alpha,) or None
        lam minimising eg at each alpha and that minimum (``axis == "lam"`` only).
    peak_alpha : ndarray, shape (n_y,)
        alpha of the interior maximum of eg over the alpha range of each row (where d eg/d alpha
        changes sign from + to -), NaN where eg has no interior maximum in that range.
    interpolation_alpha : float
        1.0 for the square loss: n = p, where eg diverges as lam -> 0; NaN for any other loss.
    rho, noise : float or ndarray
        Teacher signal and label noise (per row for shift diagrams).
    residual, converged : ndarray, shape (n_y, n_alpha), or None
        Per grid point: the saddle-point residual and whether it met its route's tolerance (the
        optimal line's points, if any, as a last row); None if not recorded.
    """

    alpha: np.ndarray
    axis: str
    y: np.ndarray
    lam: float | np.ndarray
    shift: np.ndarray | None
    eg: np.ndarray
    train_loss: np.ndarray
    deg_dalpha: np.ndarray
    optimal_lam: np.ndarray | None
    optimal_eg: np.ndarray | None
    peak_alpha: np.ndarray
    rho: float | np.ndarray
    noise: float | np.ndarray
    interpolation_alpha: float = 1.0
    residual: np.ndarray | None = None
    converged: np.ndarray | None = None

    @property
    def more_data_hurts(self) -> np.ndarray:
        """Boolean mask of the grid where d eg / d alpha > 0."""
        return self.deg_dalpha > 0

    def to_frame(self):
        """A pandas DataFrame, one row per grid point (row by row): alpha, lam, shift, eg,
        train_loss, deg_dalpha, more_data_hurts, the row's peak_alpha, rho and noise, and the
        column's optimal_lam and optimal_eg (NaN on shift diagrams)."""
        import pandas as pd

        n_y, n_a = self.eg.shape
        per_row = lambda v: np.repeat(np.broadcast_to(np.asarray(v, dtype=float), (n_y,)), n_a)  # noqa: E731
        per_col = lambda v: np.tile(np.full(n_a, np.nan) if v is None else np.asarray(v, dtype=float), n_y)  # noqa: E731
        return pd.DataFrame({
            "alpha": np.tile(self.alpha, n_y), "lam": per_row(self.lam),
            "shift": per_row(np.nan if self.shift is None else self.shift),
            "eg": self.eg.ravel(), "train_loss": self.train_loss.ravel(),
            "deg_dalpha": self.deg_dalpha.ravel(), "more_data_hurts": self.more_data_hurts.ravel(),
            "peak_alpha": per_row(self.peak_alpha), "rho": per_row(self.rho), "noise": per_row(self.noise),
            "optimal_lam": per_col(self.optimal_lam), "optimal_eg": per_col(self.optimal_eg)})


def increasing_grid(values, name: str, *, positive: bool = True) -> np.ndarray:
    """A non-empty, finite, strictly increasing 1-d grid (strictly positive if ``positive``)."""
    _checks.length(values, name)
    arr = np.atleast_1d(_checks.real_array(values, name))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d grid, got shape {arr.shape}")
    arr = _checks.finite_array(arr, name, ndim=1)
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 everywhere, min is {arr.min():g}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing (sorted, no repeats)")
    return arr


def _grid(spec, alphas: np.ndarray, lam) -> tuple[np.ndarray, ...]:
    """eg, train loss, d eg/d alpha, residual and converged on the grid alphas x lam (a column or scalar)."""
    a, lm = np.broadcast_arrays(alphas[None, :], lam)
    out = solve_reduced(spec, a.ravel(), lm.ravel())
    slope = alpha_derivative(spec, a.ravel(), lm.ravel(), out["kappa"], out["V_hat"])
    return tuple(v.reshape(a.shape) for v in (out["eg"], out["train_loss"], slope, out["residual"],
                                              root_converged(out)))


#: relative step of the central finite difference of eg in alpha (general engine)
FD_STEP = 1e-4


def _general_row(task, kind: _Kind, alphas: np.ndarray, lam: float) -> tuple[np.ndarray, ...]:
    """eg, train loss and d eg/d alpha along one row, by the general engine (warm starts)."""
    eg, et, slope, res, ok = (np.empty(alphas.size) for _ in range(5))
    prev = None
    for i, a in enumerate(alphas):
        prev = kind.solve(task, float(a), lam, prev)
        eg[i], et[i], res[i], ok[i] = prev.eg, prev.train_loss, prev.residual, prev.converged
        slope[i] = _fd_slope(task, kind, float(a), lam, prev)
    return eg, et, slope, res, ok.astype(bool)


def _fd_slope(task, kind: _Kind, a: float, lam: float, at: SaddlePoint) -> float:
    """d eg/d alpha by the central difference (eg(a (1 + h)) - eg(a (1 - h))) / (2 a h), h = FD_STEP.

    Its truncation error is (a h)^2/6 times the third alpha-derivative of eg (about 1e-8
    relative on a smooth curve) and its rounding error about 1e-10 / (a h) from the engine's
    residual: together ~1e-6 relative.
    """
    h = FD_STEP * a
    up = kind.solve(task, a + h, lam, at).eg
    down = kind.solve(task, a - h, lam, at).eg
    return (up - down) / (2 * h)


def peak_alpha(task, spec, alphas: np.ndarray, lam: float, slope: np.ndarray,
          kind: _Kind | None = None) -> float:
    """alpha where d eg/d alpha crosses from + to - inside the grid (Brent), else NaN."""
    cross = np.nonzero((slope[:-1] > 0) & (slope[1:] < 0))[0]
    if cross.size == 0:
        return math.nan
    j = int(cross[0])
    from scipy import optimize

    kind = kind or _Kind()
    if kind.fast:
        def d(a: float) -> float:
            out = solve_reduced(spec, np.array([a]), lam)
            return float(alpha_derivative(spec, np.array([a]), lam, out["kappa"], out["V_hat"])[0])

        return float(optimize.brentq(d, alphas[j], alphas[j + 1], xtol=1e-14, rtol=1e-13))
    start = kind.solve(task, float(alphas[j]), lam)

    def d_general(a: float) -> float:
        return _fd_slope(task, kind, a, lam, kind.solve(task, a, lam, start))

    # the finite difference is accurate to ~1e-6 relative: so is the peak position
    return float(optimize.brentq(d_general, alphas[j], alphas[j + 1], xtol=1e-9, rtol=1e-8))


def _fast_peaks(spec, alphas: np.ndarray, lams: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """:func:`peak_alpha` of every row of a fast-path diagram, the rows' Brent root searches in
    lockstep (:func:`.brent.roots_many`; one vectorised solve per round, per-point starts): the
    same numbers as one ``brentq`` per row."""
    peaks = np.full(lams.size, math.nan)
    rows, brackets = [], []
    for i in range(lams.size):
        cross = np.nonzero((slope[i, :-1] > 0) & (slope[i, 1:] < 0))[0]
        if cross.size:
            j = int(cross[0])
            rows.append(i)
            brackets.append((alphas[j], alphas[j + 1]))
    if not rows:
        return peaks
    lam_rows = lams[rows]

    def d(idx: np.ndarray, a: np.ndarray) -> np.ndarray:
        out = solve_reduced(spec, a, lam_rows[idx], per_point=True)
        return alpha_derivative(spec, a, lam_rows[idx], out["kappa"], out["V_hat"])

    peaks[rows] = brent.roots_many(d, brackets, xtol=1e-14, rtol=1e-13)
    return peaks


@keywords
def phase_diagram(task, *, alpha, lam, optimal: bool = True, progress: bool = False,
                  loss=None, channel=None) -> PhaseDiagram:
    """eg over a grid of alpha and lam, with d eg / d alpha, the optimal-lam line and the peak.

    With the square loss and the gaussian channel (default) everything is vectorised and d eg /
    d alpha is exact (implicit differentiation of the reduced equation). With any other ``loss``
    or ``channel`` (as in :func:`solve`) each row is a warm-started curve of the general engine,
    eg is the channel's natural error and d eg / d alpha the central finite difference
    ``(eg(alpha (1 + h)) - eg(alpha (1 - h))) / (2 alpha h)`` with ``h = 1e-4`` (about 1e-6
    relative accuracy); the peak is located by Brent on that difference.

    Parameters
    ----------
    task : MaskedSite, limit or Spectrum
    alpha : array_like
        Strictly increasing grid of alpha > 0 (columns).
    lam : array_like
        Strictly increasing grid of lam > 0 (rows; a log axis in figures).
    optimal : bool
        Also compute the optimal lam at each alpha (:func:`optimal_lambda`).
    progress : bool
        A progress bar on stderr over rows (and over the alphas of the optimal lam).
    """
    kind = _Kind(routes.plan(task, entry="phase_diagram", loss=loss, channel=channel))
    spec = spectrum_of(task)
    optimal, progress = _checks.flag(optimal, "optimal"), _checks.flag(progress, "progress")
    alphas = increasing_grid(alpha, "alpha")
    lams = increasing_grid(lam, "lam")  # > 0: every route of a diagram takes it
    _checks.grid_cells(alphas.size * lams.size, f"phase_diagram: {alphas.size} alpha x {lams.size} lam")
    if kind.fast:
        eg, et, slope, res, ok = _grid(spec, alphas, lams[:, None])
    else:
        rows = [_general_row(task, kind, alphas, float(lm))
                for lm in _progress(lams, progress, "rows (general engine)")]
        eg, et, slope, res, ok = (np.array([r[k] for r in rows]) for k in range(5))
    if kind.fast:
        peaks = _fast_peaks(spec, alphas, lams, slope)
    else:
        peaks = np.array([peak_alpha(task, spec, alphas, float(lm), slope[i], kind)
                          for i, lm in enumerate(_progress(lams, progress, "peak per lam"))])
    opt_lam = opt_eg = None
    if optimal:
        pairs = _optimal(task, spec, alphas, LAM_BOUNDS, 1e-9, kind, progress=progress)
        opt_lam = np.array([p[0] for p in pairs])
        opt_eg = np.array([p[1].eg for p in pairs])
        res = np.vstack([res, [p[1].residual for p in pairs]])
        ok = np.vstack([ok, [p[1].converged and p[2] for p in pairs]])
    return PhaseDiagram(alpha=alphas, axis="lam", y=lams, lam=lams, shift=None, eg=eg, train_loss=et,
                        deg_dalpha=slope, optimal_lam=opt_lam, optimal_eg=opt_eg, peak_alpha=peaks,
                        rho=spec.rho, noise=spec.noise, residual=res, converged=ok,
                        interpolation_alpha=kind.alpha_1)


@keywords
def shift_phase_diagram(*, alpha, shift, lam: float, progress: bool = False) -> PhaseDiagram:
    """eg over a grid of alpha and Potts shift s > 2 in the thermodynamic limit, at one lam.

    ``progress``: a bar on stderr over the shift rows."""
    from replica_mlm.tasks.gaussian_potts_limit import GaussianPottsLimit

    progress = _checks.flag(progress, "progress")
    alphas = increasing_grid(alpha, "alpha")
    shifts = increasing_grid(shift, "shift")
    if shifts[0] <= 2:
        raise ValueError(f"shift must be > 2 in the limit, min is {shifts[0]:g}")
    lam = _checks.nonnegative(lam, "lam")
    _checks.grid_cells(alphas.size * shifts.size,
                       f"shift_phase_diagram: {alphas.size} alpha x {shifts.size} shift")
    eg, et, slope, res, ok = (np.empty((shifts.size, alphas.size)) for _ in range(5))
    peaks, rho, noise = np.empty(shifts.size), np.empty(shifts.size), np.empty(shifts.size)
    for i, s in enumerate(_progress(shifts, progress, "shift rows")):
        task = GaussianPottsLimit(shift=float(s))
        spec = task.spectrum
        (eg[i],), (et[i],), (slope[i],), (res[i],), (ok[i],) = _grid(spec, alphas, lam)
        peaks[i] = peak_alpha(task, spec, alphas, lam, slope[i])
        rho[i], noise[i] = task.rho, task.noise
    return PhaseDiagram(alpha=alphas, axis="shift", y=shifts, lam=lam, shift=shifts, eg=eg,
                        train_loss=et, deg_dalpha=slope, optimal_lam=None, optimal_eg=None,
                        peak_alpha=peaks, rho=rho, noise=noise, residual=res, converged=ok.astype(bool))


def _progress(values, show: bool | None, desc: str):
    return bar(values, progress=show, desc=desc)
