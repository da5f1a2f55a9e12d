"""The one fixed-point driver of the saddle-point solvers: ``x = F(x)`` in packed unknowns.

Two methods share one judge of convergence, the caller's ``residual(x)`` (the largest relative
violation of the equations at ``x``): a point is accepted only if it is at most ``tol``.

``method="hybr"`` (the general engine, :mod:`.engine`; the multi-class theory, :mod:`.multiclass`)
    ``warmup`` damped steps ``x <- damping x + (1 - damping) F(x)`` (from a cold start), then up to
    ``attempts`` runs of MINPACK's hybrid method on ``F(x) - x``: the first attempt with each
    relative step tolerance of ``xtols`` in turn (on from where the previous one stopped), the
    later ones with ``retry_xtol``, each after ``4 attempt`` damped steps from the best point so
    far. Outside the map's domain (``domain_errors``) the gap is a large constant vector, so that
    hybr's trust region shrinks back.
``method="anderson"`` (the local theory's many unknowns, :mod:`.local_engine`)
    Anderson mixing of the last ``memory`` steps (Walker and Ni, SIAM J. Numer. Anal. 49, 2011) with
    mixing weight ``1 - damping``: no Jacobian, so an evaluation of the map per step however many
    unknowns there are (hybr's first Jacobian alone costs one per unknown). The residual is judged
    once the step is below ``sqrt(tol)`` relative; a step outside the map's domain restarts the
    memory with a damped step from the last point inside. If ``max_evaluations`` pass without a
    point at ``tol``, hybr takes over from the best point.
``method="newton"`` (the local theory of a two-colour site, :mod:`.local_engine`)
    Newton's method on ``F(x) - x`` with the Jacobian the caller's ``jacobian(x) -> (F(x), dF/dx)``
    gives from one evaluation of the map (so a step costs one evaluation however many unknowns),
    globalised by halving the step until the gap's 2-norm falls below the largest of the last
    :data:`NONMONOTONE` accepted ones (a non-monotone Armijo rule), each step first
    scaled so that no unknown moves beyond its ``step_limits``. The residual is judged once the step
    is below ``sqrt(tol)`` relative. If :data:`NEWTON_EVALUATIONS` pass without a point at ``tol``,
    or the step cannot be halved into a decrease, Anderson mixing takes over from the best point
    (and hybr after it, as below).
``method="damped"`` (``rm.solve(..., method="iterate")``)
    Damped steps until ``|x_{t+1} - x_t|_1 < step_tol`` and the residual is at most ``tol``
    (steps below ``step_tol`` with the residual above go on), at most ``max_iter`` steps. For a
    few unknowns: the steps are taken in Python floats, and ``image`` and ``residual`` receive
    (and ``image`` returns) lists of floats.

Failures raise :class:`FixedPointFailure`, which the callers turn into their own errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

METHODS = ("hybr", "anderson", "newton", "damped")
#: Newton's evaluations before Anderson takes over (measured on the local theory at the 432 points
#: of the sparse tables' Ising sites, logistic, hinge and square losses, alpha 0.5-4, lam 0.01-1:
#: 4-59 evaluations at 430; the two others, the ordered 10 x 10 lattice's hinge loss at lam 0.01,
#: finished by Anderson)
NEWTON_EVALUATIONS = 60
#: Armijo's sufficient decrease, and the smallest fraction of a (capped) Newton step tried
ARMIJO, SMALLEST_STEP = 1e-4, 1e-3
#: a step is accepted if its gap is below the largest of the last NONMONOTONE accepted gaps (Grippo,
#: Lampariello and Lucidi's non-monotone rule; measured on 108 hard points of the local theory (the
#: 4 x 4 lattice at beta 0.44, 6 x 6, ordered 10 x 10, band L = 16; three losses, alpha 0.5-4, lam
#: 0.01-1): 3277 evaluations in all with a monotone rule (1), 1871 with 5, 3609 with 10)
NONMONOTONE = 5


class FixedPointFailure(RuntimeError):
    """The fixed point was not reached.

    Attributes
    ----------
    error : BaseException or None
        The exception of ``failures`` that stopped the driver, or None (no convergence).
    reason : str
        ``"error"``, ``"tolerance"`` (hybr: the best residual above ``tol``), ``"did not converge"``
        or ``"diverged"`` (damped: ``max_iter`` reached, or a non-finite step).
    last : ndarray
        The last iterate (hybr: the last point hybr returned or the last warm-up step).
    best : ndarray
        hybr: the point of smallest residual so far (the start before any residual).
    residual : float
        hybr: the residual at ``best`` (inf after an error); damped: the last step ``|dx|_1``.
    point : dict or None
        hybr, ``reason="tolerance"``: ``residual(best)[1]``.
    iterations : int
        Damped steps taken (damped method).
    """

    def __init__(self, reason: str, *, error: BaseException | None = None, last, best, residual: float,
                 point: dict | None = None, iterations: int = 0) -> None:
        super().__init__(reason if error is None else f"{reason}: {error}")
        self.reason, self.error, self.last, self.best = reason, error, last, best
        self.residual, self.point, self.iterations = residual, point, iterations


@dataclass(frozen=True)
class FixedPoint:
    """An accepted point: ``x``, its ``residual`` (<= tol), the caller's ``point`` dict from
    ``residual(x)`` and the damped ``iterations`` taken (damped method)."""

    x: np.ndarray
    residual: float
    point: dict
    iterations: int = 0


def damped_step(image: Callable, x: np.ndarray, damping: float) -> np.ndarray:
    """``damping x + (1 - damping) image(x)`` (overflow gives inf, as in float arithmetic)."""
    fx = image(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return damping * x + (1 - damping) * fx


def solve(image: Callable, residual: Callable, x, *, tol: float, method: str = "hybr",
          damping: float = 0.5, warmup: int = 0, xtols: tuple[float, ...] = (1e-12,),
          retry_xtol: float = 1e-15, attempts: int = 3, max_evaluations: int = 400,
          step_tol: float = 0.0, max_iter: int = 0, jacobian: Callable | None = None,
          step_limits=None, domain_errors: tuple = (), fatal: tuple = (),
          failures: tuple = ()) -> FixedPoint:
    """Solve ``x = image(x)`` from ``x``; ``residual(x) -> (float, dict)`` judges convergence.

    Parameters
    ----------
    image, residual : callable
        The fixed-point map on packed unknowns, and the residual at a point with the caller's
        description of it.
    x : array_like
        The start.
    tol : float
        Largest residual accepted.
    method : {"hybr", "anderson", "newton", "damped"}
        See the module docstring.
    damping : float
        Weight of the current iterate in a damped step.
    warmup : int
        hybr: damped steps before the first hybr run (0 from a warm start).
    xtols, retry_xtol, attempts, max_evaluations : optional
        hybr's step tolerances of the first attempt, of the later ones, the number of attempts
        and its ``maxfev`` per run.
    step_tol, max_iter : float, int
        damped: the step below which the residual is tested, and the most steps.
    jacobian : callable, optional
        newton (required): ``x -> (image(x), d image / dx)``.
    step_limits : array_like, optional
        newton: the largest change of each unknown in one step (default: none).
    domain_errors : tuple of exception types
        hybr: raised by ``image`` outside its domain; the gap is then a constant 1e3 vector.
    fatal : tuple of exception types
        Raised through unchanged (checked before ``domain_errors`` and ``failures``).
    failures : tuple of exception types
        Turned into a :class:`FixedPointFailure` with ``reason="error"``.

    Returns
    -------
    FixedPoint

    Raises
    ------
    FixedPointFailure
        If no point with a residual at most ``tol`` is found.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    x = np.asarray(x, dtype=float)
    if method == "damped":
        return _damped(image, residual, x, tol=tol, damping=damping, step_tol=step_tol,
                       max_iter=max_iter, fatal=fatal, failures=failures)
    if method == "newton":
        if jacobian is None:
            raise ValueError("method='newton' needs jacobian=")
        try:
            return _newton(jacobian, residual, x, tol=tol, step_limits=step_limits,
                           domain_errors=domain_errors, fatal=fatal)
        except FixedPointFailure as failure:
            x, method = failure.best, "anderson"
    if method == "anderson":
        try:
            return _anderson(image, residual, x, tol=tol, damping=damping, max_evaluations=max_evaluations,
                             domain_errors=domain_errors, fatal=fatal)
        except FixedPointFailure as failure:
            x = failure.best
    return _hybr(image, residual, x, tol=tol, damping=damping, warmup=warmup, xtols=xtols,
                 retry_xtol=retry_xtol, attempts=attempts, max_evaluations=max_evaluations,
                 domain_errors=domain_errors, fatal=fatal, failures=failures)


def _hybr(image, residual, x, *, tol: float, damping: float = 0.5, warmup: int = 0,
          xtols: tuple[float, ...] = (1e-12,), retry_xtol: float = 1e-15, attempts: int = 3,
          max_evaluations: int = 400, domain_errors: tuple = (), fatal: tuple = (),
          failures: tuple = ()) -> FixedPoint:
    from scipy import optimize

    last = x
    best = (math.inf, x)
    try:
        for _ in range(warmup):
            x = last = damped_step(image, x, damping)
        best = (math.inf, x)

        def gap(u):
            try:
                return image(u) - u
            except fatal:
                raise
            except domain_errors:
                return np.full(u.shape, 1e3)

        for attempt in range(attempts):
            for xtol in (xtols if attempt == 0 else (retry_xtol,)):
                sol = optimize.root(gap, x, method="hybr", options={"xtol": xtol, "maxfev": max_evaluations})
                last = sol.x
                try:
                    res, point = residual(sol.x)
                except fatal:
                    raise
                except domain_errors:  # hybr stopped outside the map's domain: not a point, go on
                    res, point = math.inf, None
                if res < best[0]:
                    best = (res, sol.x)
                if res <= tol:
                    return FixedPoint(sol.x, res, point)
                x = best[1]
            # not there (x is the best point so far): damped steps move away from where hybr stalled
            for _ in range(4 * (attempt + 1)):
                x = damped_step(image, x, damping)
    except fatal:
        raise
    except failures as exc:
        raise FixedPointFailure("error", error=exc, last=last, best=best[1], residual=math.inf) from None
    res, point = residual(best[1])
    raise FixedPointFailure("tolerance", last=last, best=best[1], residual=res, point=point)


def _anderson(image, residual, x, *, tol: float, damping: float, max_evaluations: int, memory: int = 6,
              domain_errors: tuple = (), fatal: tuple = ()) -> FixedPoint:
    beta = 1.0 - damping
    xs: list = []
    fs: list = []
    best = (math.inf, x)
    good = x
    for _ in range(max_evaluations):
        try:
            f = image(x) - x
        except fatal:
            raise
        except domain_errors:
            xs, fs = [], []
            x = 0.5 * (good + x) if x is not good else good
            continue
        good = x
        step = float(np.max(np.abs(f)) / max(1.0, float(np.max(np.abs(x)))))
        if step < best[0]:
            best = (step, x)
        if step < math.sqrt(tol):
            res, point = residual(x)
            if res <= tol:
                return FixedPoint(x, res, point)
        xs, fs = [*xs[-memory:], x], [*fs[-memory:], f]
        if len(xs) < 2:
            x = x + beta * f
            continue
        dF = np.diff(np.array(fs), axis=0).T
        dX = np.diff(np.array(xs), axis=0).T
        gamma = np.linalg.lstsq(dF, f, rcond=None)[0]
        x = x + beta * f - (dX + beta * dF) @ gamma
    raise FixedPointFailure("tolerance", last=x, best=best[1], residual=math.inf)


def _newton(jacobian, residual, x, *, tol: float, step_limits=None, domain_errors: tuple = (),
            fatal: tuple = ()) -> FixedPoint:
    """Newton's method of the module docstring; FixedPointFailure (with Newton's best point) where it
    stalls, for the caller to hand over to Anderson mixing."""
    limits = np.full(x.shape, np.inf) if step_limits is None else np.asarray(step_limits, dtype=float)
    evaluations = 1
    try:
        fx, J = jacobian(x)
    except fatal:
        raise
    except domain_errors:
        raise FixedPointFailure("tolerance", last=x, best=x, residual=math.inf) from None
    gap = fx - x
    norm = float(np.linalg.norm(gap))
    recent = [norm]
    best = (norm, x)
    while True:
        if float(np.max(np.abs(gap))) / max(1.0, float(np.max(np.abs(x)))) < math.sqrt(tol):
            res, point = residual(x)
            if res <= tol:
                return FixedPoint(x, res, point)
        try:
            direction = np.linalg.solve(np.eye(x.size) - J, gap)
        except np.linalg.LinAlgError:
            break
        t = first = min(1.0, float(np.min(limits / np.maximum(np.abs(direction), 1e-300))))
        while t >= SMALLEST_STEP * first and evaluations < NEWTON_EVALUATIONS:
            trial = x + t * direction
            evaluations += 1
            try:
                f_trial, J_trial = jacobian(trial)
            except fatal:
                raise
            except domain_errors:
                t /= 2
                continue
            gap_trial = f_trial - trial
            norm_trial = float(np.linalg.norm(gap_trial))
            if norm_trial <= (1.0 - ARMIJO * t) * max(recent[-NONMONOTONE:]):  # False for NaN
                break
            t /= 2
        else:
            break
        x, gap, norm, J = trial, gap_trial, norm_trial, J_trial
        recent.append(norm)
        if norm < best[0]:
            best = (norm, x)
    raise FixedPointFailure("tolerance", last=x, best=best[1], residual=math.inf)


def _damped(image, residual, x, *, tol: float, damping: float = 0.5, step_tol: float = 0.0,
            max_iter: int = 0, fatal: tuple = (), failures: tuple = ()) -> FixedPoint:
    # a few unknowns: the steps in Python floats (overflow gives inf), image takes and returns lists
    x, keep = x.tolist(), 1 - damping
    delta, it = math.inf, 0
    try:
        for it in range(1, max_iter + 1):
            new = [damping * a + keep * b for a, b in zip(x, image(x), strict=True)]
            delta = sum(abs(a - b) for a, b in zip(new, x, strict=True))
            x = new
            if not math.isfinite(delta):
                break
            if delta < step_tol:
                res, point = residual(x)
                if res <= tol:
                    return FixedPoint(np.array(x), res, point, iterations=it)
        reason = "did not converge" if math.isfinite(delta) else "diverged"
    except fatal:
        raise
    except failures as exc:
        raise FixedPointFailure("error", error=exc, last=np.array(x), best=np.array(x), residual=math.inf,
                                iterations=it) from None
    raise FixedPointFailure(reason, last=np.array(x), best=np.array(x), residual=delta, iterations=it)
