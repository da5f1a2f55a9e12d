"""Solvers of the replica-symmetric saddle point (docs/theory.md, sections 2-4).

Two methods, one answer:

``method="root"`` (default)
    The reduced system of :func:`.potentials.reduce`: one monotone, convex scalar equation
    ``G(kappa) = lam/kappa - S_1c(kappa) + 1 - alpha = 0`` in ``kappa = lam / V_hat``, solved by
    Newton's method from a point known to lie left of the root, where it converges monotonically
    to machine precision (:mod:`.root`); every other quantity is then a closed form of a few
    spectral sums. lam = 0 is solved exactly (see :func:`solve`). Vectorised over alpha.
``method="iterate"``
    Damped fixed-point iteration of the six raw saddle-point equations of
    :func:`.potentials.derive`, as in public replica codes: with ``x = (V, q, m)``,
    ``x_{t+1} = damping * x_t + (1 - damping) * F(x_t)`` where F computes the hats from x and
    then x from the hats. It stops when ``|dV| + |dq| + |dm| < tol`` and the raw-equation
    residual is at most ``max(tol, 256 eps)``.
``method="general"``
    The general engine (:mod:`.engine`) for any convex loss and label channel; chosen
    automatically for anything but the square loss with the gaussian channel, for which the two
    methods above apply (docs/theory.md, section "The general engine").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.errors import ConvergenceError
from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.local_site import DiscreteSite  # at import: in the function, 3 us a point
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.tasks.validity import Validity
from replica_mlm.theory import routes
from replica_mlm.theory.sides import penalties, prior
from replica_mlm.theory.solvers import fixed_point, precise, root
from replica_mlm.theory.solvers.residual import raw_residual
from replica_mlm.theory.symbolic.compiled import compiled

#: the keywords ``**options`` of :func:`solve` passes on: every route's options (:data:`.routes.ROUTES`)
SOLVER_OPTIONS = tuple(dict.fromkeys(k for r in routes.ROUTES.values() for k in r.options))
#: cold start (V, q, m) of method="iterate" (init=None)
ITERATE_INIT = (1000.0, 1e-3, 1e-3)


@dataclass(frozen=True)
class SaddlePoint:
    """Solution of the replica-symmetric saddle point at one (alpha, lam).

    Attributes
    ----------
    alpha, lam : float
        Sample ratio n/p and ridge strength (penalty (lam p / 2) |w|^2).
    eg : float
        The channel's natural error. Gaussian channel: the generalisation error
        rho + sigma^2 - 2m + q (no factor 1/2); ``inf`` at alpha = 1, lam = 0. Sign and logit
        channels: the classification error ``P(y != sign(w_hat . x))``.
    train_loss : float
        Training loss at the minimiser, the mean of the loss over the training set; for the
        square loss the package's MSE convention |y - X w|^2 / n (= eg / (1 + V)^2 on the
        gaussian channel).
    m, q, V, m_hat, q_hat, V_hat : float
        Order parameters and their conjugates. At lam = 0 and alpha <= 1, V = inf and the
        hats vanish (the minimum-norm interpolator).
    rho, noise : float
        Teacher signal w*^T Sigma w* and label noise sigma^2 of the task.
    kappa : float
        lam / V_hat, the variable of the reduced scalar equation (nan for ``"iterate"``).
    converged : bool
        Always True on a returned object: failures raise :class:`ConvergenceError`. A point
        converged only if ``residual`` is at most 256 eps (``"root"``), ``10^-precision``
        (mpmath) or ``max(tol, 256 eps)`` (``"iterate"``).
    iterations : int
        Newton steps on the scalar equation (``"root"``; 0 where kappa is known exactly) or
        fixed-point steps (``"iterate"``).
    residual : float
        Largest relative violation of the six raw saddle-point equations at the solution
        (for lam = 0, alpha <= 1, where V = inf, that of the scalar equation instead).
    method : str
        ``"root"``, ``"iterate"`` (square loss, gaussian channel) or ``"general"``.
    message : str
        How the solution was obtained.
    test_loss : float
        Expected loss on a fresh sample, ``E loss(y, w_hat . x)``, with the loss as defined: for
        the square loss ``(y - z)^2 / 2`` it is ``eg / 2`` on the gaussian channel (``eg`` keeps
        no factor 1/2).
    estimation_error : float
        ``E |w_hat - w*|^2`` in the Euclidean metric (the error on the row of J the site
        estimates; in the thermodynamic limit ``|w*|^2 = sum_k c_k -> 1/s^2``), see
        docs/theory.md, section "The general engine".
    loss, channel : str
        Names of the loss and of the label channel.
    valid : Validity or None
        On a site of a Potts model: whether the theory used can describe the site
        (:meth:`replica_mlm.tasks.local_site.DiscreteSite.validity`; an invalid one warns once per
        site and theory); None on a Gaussian task.
    """

    alpha: float
    lam: float
    eg: float
    train_loss: float
    m: float
    q: float
    V: float
    m_hat: float
    q_hat: float
    V_hat: float
    rho: float
    noise: float
    kappa: float
    converged: bool
    iterations: int
    residual: float
    method: str
    message: str
    test_loss: float = math.nan
    estimation_error: float = math.nan
    loss: str = "square"
    channel: str = "gaussian"
    valid: Validity | None = None

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return asdict(self)

    def to_frame(self):
        """A one-row pandas DataFrame of the fields (as :meth:`as_dict`)."""
        import pandas as pd

        return pd.DataFrame([self.as_dict()])




@keywords(options=SOLVER_OPTIONS)
def solve(task, *, alpha: float, lam: float, method: str | None = None, precision: int | None = None,
          loss=None, channel=None, theory: str = "gaussian", penalty=None, **options) -> SaddlePoint:
    """Solve the replica saddle point at sample ratio ``alpha`` and ridge ``lam``.

    With the square loss and the gaussian channel (the defaults: ridge MLM) the exact reduced
    solver is used (the fast path); any other loss or channel goes through the general engine
    (docs/theory.md, section "The general engine").

    Parameters
    ----------
    task : MaskedSite, limit, Spectrum or PottsSite
        The learning task, chosen by what it provides (:mod:`replica_mlm.tasks.protocol`): a
        task with a ``spectrum`` (eigenvalues of Sigma, teacher weights, noise: all that enters)
        is solved by the scalar theory. A multi-class task, e.g. a
        :class:`~replica_mlm.tasks.potts_site.PottsSite` (a site with q > 2 colours,
        ``PottsModel.masked_site``), is solved by the multi-class theory and returns a
        ``MulticlassSaddlePoint``; its options are those of
        :func:`replica_mlm.theory.solvers.multiclass.solve` (``loss="cross_entropy"``, ``integration``,
        ``order``, ``randomisations``, ``seed``, ``init``; docs/multiclass.md).
    alpha : float
        n / p, > 0.
    lam : float
        Ridge strength >= 0 (penalty (lam p / 2) |w|^2). lam = 0 is the Moore-Penrose
        (minimum-norm / least-squares) limit, solved exactly: for alpha < 1 kappa solves
        ``V_hat(kappa) = 0`` (docs/theory.md, section 5), for alpha > 1 kappa = 0, and at alpha = 1
        the interpolation peak gives eg = inf, q = inf, V = inf, vanishing hats, m = rho and a
        vanishing train loss (returned without warnings). The general engine needs lam > 0.
    method : {None, "root", "iterate", "general"}
        None chooses ``"root"`` for the square loss with the gaussian channel and ``"general"``
        otherwise. ``"root"`` and ``"iterate"`` (see the module docstring) exist for the square
        loss with the gaussian channel only; ``"general"`` forces the general engine.
    precision : int, optional
        Significant digits (>= 16). Runs the same sympy-derived reduced equations with mpmath
        (:mod:`.precise`); the numbers of the result are then ``mpmath.mpf``. Only with
        ``method="root"``, i.e. for the square loss with the gaussian channel: other losses and
        channels raise ValueError.
    loss : str or rm.losses.Loss, optional
        ``"square"`` (default, :func:`default_loss`), ``"absolute"``, ``"huber"``, ``"logistic"``,
        ``"hinge"`` (the default instance of each) or any :class:`rm.losses.Loss`.
    channel : str or rm.channels.Channel, optional
        How labels are drawn from the teacher's field ``nu = w* . x``: a name of the registry
        ``rm.channels.names()`` -- ``"gaussian"`` (default) ``y = nu + sigma eps``; ``"sign"``
        ``y = sign(nu + sigma eps)``; ``"logit"`` ``P(y | nu) = 1 / (1 + exp(-y nu))`` -- or a
        channel of one's own, ``rm.channels.Channel(name, p_out, labels=...)`` from sympy.
        ``sigma^2`` is the task's noise. Default: the task's own channel.
    theory : {"gaussian", "mixture"}
        ``"gaussian"`` (default): the inputs are Gaussian with the task's covariance (Gaussian
        equivalence for a discrete site). ``"mixture"``: the task's Gaussian mixture (``task.mixture``:
        class weights, means and pooled covariance), lam > 0, ``method`` None or ``"general"``, no
        ``channel``, no ``precision``. Two clusters (an Ising site): any convex loss through
        :mod:`.mixture_engine` (docs/discrete.md, section "The replica theory of the mixture"); the
        result's ``channel`` is ``"mixture"`` and its ``rho`` is ``mu^T S^{-1} mu``. q clusters (a
        Potts site): the softmax cross-entropy through :mod:`.mixture_multiclass`, a
        ``MulticlassSaddlePoint`` with ``method="mixture"`` (docs/multiclass.md, section "The site as
        a Gaussian mixture"); option ``order`` (Gauss-Hermite nodes per dimension).
    penalty : Penalty, optional
        The penalty (:mod:`.sides.penalties`, docs/theory.md, section 8): None or ``Ridge()`` the
        ridge ``(lam p / 2) |w|^2``; ``ShapedRidge(power=beta)`` (or ``g=``) the penalty
        ``(lam p / 2) w^T Sigma^beta w``, solved as the ridge on the transformed spectrum, the
        estimation error in the original metric. Not with ``theory="mixture"``, ``precision=`` or
        a multi-class site (ValueError).
    **options
        Owned and checked by the route that serves the call (:func:`.routes.plan`;
        ``rm.show_options(route)`` lists them, docs/architecture.md, section "Routes"). For
        ``"iterate"``: ``damping`` (0.5), ``tol`` (1e-12), ``max_iter`` (100000) and ``init`` ((V, q, m);
        None or omitted: (1000, 1e-3, 1e-3)). For ``"general"`` and ``"mixture"``: ``init`` (a
        SaddlePoint to warm-start from) and ``order`` (Gauss-Legendre nodes per quadrature panel, 16).
        ``"root"`` takes none.

    Returns
    -------
    SaddlePoint

    Raises
    ------
    ValueError
        For alpha <= 0, lam < 0, non-finite input, an unknown method, loss or channel, a loss and
        channel that :func:`~replica_mlm.theory.sides.channels.check_pair` refuses (e.g. hinge with the
        gaussian channel; lam = 0 outside the reduced solver), or a loss found not convex in z at
        a node the solver evaluates (:mod:`replica_mlm.theory.sides.convexity`).
    ConvergenceError
        If the solver does not converge (the general engine: residual above 1e-10).
    """
    route = routes.plan(task, loss=loss, channel=channel, theory=theory, method=method, precision=precision,
                        penalty=penalty)
    route.check_options(options)
    return solve_planned(route, task, _checks.positive(alpha, "alpha"), route.check_lam(lam),
                         precision=precision, **options)


def solve_planned(route: routes.Plan, task, alpha: float, lam: float, *, precision=None, **options):
    """One point on a route already planned (:func:`.routes.plan`; its options, ``alpha`` and
    ``lam`` checked): what :func:`solve` does after planning, and what the curves and studies call
    point by point, without checking their inputs again. On a site of a Potts model the result
    carries the validity of the theory used (``valid``)."""
    return with_validity(route, task, _solve_planned(route, task, alpha, lam, precision=precision, **options))


def with_validity(route: routes.Plan, task, result):
    """``result`` with ``valid`` set to the site's validity check of the route's theory (a site of a
    Potts model; the check is computed once per site and theory, and warns once if not ok)."""
    if not isinstance(task, DiscreteSite):
        return result
    return replace(result, valid=task.checked_validity(routes.theory_of(route.route)))


def _solve_planned(route: routes.Plan, task, alpha: float, lam: float, *, precision=None, **options):
    if route.route == "mixture-multiclass":
        from replica_mlm.theory.solvers import mixture_multiclass
        return mixture_multiclass.solve(task, alpha=alpha, lam=lam, **options)
    if route.route == "multiclass":
        from replica_mlm.theory.solvers import multiclass
        return multiclass.solve(task, alpha=alpha, lam=lam, loss=route.loss, **options)
    if route.route == "mixture":
        return _solve_mixture(task, alpha, lam, route.loss, **options)
    if route.route == "local":
        from replica_mlm.theory.solvers import local_engine
        return local_engine.solve(task, alpha=alpha, lam=lam, loss=route.loss, **options)
    original = spectrum_of(task)
    if precision is not None:
        return _solve_precise(task, original, alpha, lam, precision, **options)
    spec = route.penalty.transform(original)  # the ridge on w' = Gamma^{1/2} w (itself for the ridge)
    if route.route == "root":
        point = _solve_root(spec, alpha, lam)
    elif route.route == "iterate":
        point = _solve_iterate(spec, alpha, lam, **options)
    else:
        point = solve_general(spec, alpha, lam, route.loss, route.channel, **options)
    return penalties.corrected(route.penalty, original, point)  # the estimation error, original metric


def _solve_mixture(task, alpha: float, lam: float, loss_obj, *, init=None, order: int | None = None):
    """The route ``"mixture"``: the two-cluster mixture's sides on the engine (:mod:`.mixture_engine`)."""
    from replica_mlm.theory.solvers import mixture_engine
    theory = mixture_engine.MixtureTheory(task.mixture)
    order = 16 if order is None else order  # None: the default, as the route's options say
    problem = mixture_engine.mixture_problem(theory, alpha, lam, loss_obj, order=order)
    if init is not None and isinstance(init, SaddlePoint) and not init.rho > 0:
        init = None  # no overlap ratio to start from
    out = _engine_point(problem, init, f"mixture theory at alpha={alpha}, lam={lam}, loss={loss_obj.name}")
    return _result(theory.spectrum, alpha, lam, out, method="general", loss=loss_obj.name, channel="mixture",
                   message=f"mixture theory (general engine, {out['iterations']} channel-side evaluations)")


def _engine_point(problem, init, failure: str) -> dict:
    """:func:`.engine.solve_point` of ``problem`` from the SaddlePoint ``init`` (None: cold); its
    failure a :class:`ConvergenceError` whose message starts with ``failure``."""
    from replica_mlm.theory.solvers import engine
    start = None
    if init is not None:
        if not isinstance(init, SaddlePoint):
            raise TypeError(f"init must be a SaddlePoint, got {type(init).__name__}")
        if all(math.isfinite(x) and x > 0 for x in (init.V, init.q)):
            start = problem.pack(init.V, init.q, init.m)
    try:
        return engine.solve_point(problem, init=start)
    except engine.EngineFailure as exc:
        raise ConvergenceError(f"{failure}: {exc}", last=exc.last, residual=exc.residual,
                               iterations=exc.iterations) from None


def _solve_precise(task, spec: Spectrum, alpha: float, lam: float, precision, **options) -> SaddlePoint:
    """The route ``"root"`` with ``precision=``: the reduced equations in mpmath (:mod:`.precise`)."""
    digits = _checks.precision_digits(precision)
    if digits < 16:
        raise ValueError(f"precision must be >= 16 digits (float64 gives ~16), got {digits}")
    if options:
        raise ValueError("precision= works with method='root' and no options")
    try:
        out = precise.solve_precise(task, spec, alpha, lam, digits)
    except precise.PrecisionFailure as exc:
        raise ConvergenceError(str(exc), last={"kappa": exc.kappa}, residual=float(exc.step),
                               iterations=exc.iterations) from None
    if not out["converged"]:
        raise ConvergenceError(
            f"mpmath solution at alpha={alpha}, lam={lam} violates the raw equations beyond "
            f"10^-{digits}", last={k: out[k] for k in ("V", "q", "m", "kappa")},
            residual=float(out["residual"]), iterations=int(out["iterations"]))
    return _result(spec, alpha, lam, out, method="root", convert=False,
                   message=f"{root_message(alpha, lam)}; mpmath at {digits} digits")


def solve_general(spec: Spectrum, alpha: float, lam: float, loss, channel, *, init=None,
                  order: int = 16) -> SaddlePoint:
    """The general engine (:mod:`.engine`) at one point; ``init`` a SaddlePoint to start from."""
    from replica_mlm.theory.solvers import engine
    problem = engine.gaussian_problem(spec, alpha, lam, loss, channel, order=order)
    out = _engine_point(problem, init, f"general engine at alpha={alpha}, lam={lam}, loss={loss.name}, "
                                       f"channel={channel.name}")
    return _result(spec, alpha, lam, out, method="general", loss=loss.name, channel=channel.name,
                   message=f"general engine (hybr on log V, log q, artanh m/sqrt(q rho); "
                   f"{out['iterations']} channel-side evaluations)")


# --- the reduced scalar equation -----------------------------------------------------------


def solve_reduced(spec: Spectrum, alpha, lam, *, per_point: bool = False) -> dict[str, np.ndarray]:
    """:func:`.root.solve_reduced`, every point checked: a failure is a :class:`ConvergenceError`.

    A point converged if its raw-equation residual is at most :data:`.root.RESIDUAL_TOL`
    (256 eps) and none of its numbers is NaN; otherwise the error names the points.
    """
    try:
        out = root.solve_reduced(spec, alpha, lam, per_point=per_point)
    except root.NewtonFailure as exc:
        raise ConvergenceError(
            f"Newton's method on the reduced equation did not converge at alpha={exc.alpha.tolist()}, "
            f"lam={lam}", last={"kappa": exc.kappa, "step": exc.step},
            residual=float(np.max(np.abs(exc.step) / exc.kappa)), iterations=exc.iterations,
        ) from None
    bad = ~root.converged(out)
    if bad.any():
        a, lm = (np.broadcast_to(np.asarray(x, dtype=float), bad.shape) for x in
                 np.broadcast_arrays(alpha, lam))
        raise ConvergenceError(
            f"the reduced solution violates the raw equations beyond {root.RESIDUAL_TOL:.3g} (or is "
            f"NaN) at alpha={a[bad].tolist()[:5]}, lam={lm[bad].tolist()[:5]}",
            last={k: v[bad] for k, v in out.items()},
            residual=float(np.max(np.where(np.isnan(out["residual"][bad]), np.inf,
                                           out["residual"][bad]))),
            iterations=int(out["iterations"][bad].max()))
    return out


def root_message(alpha: float, lam: float, regime: int = root.NEWTON) -> str:
    """How the root method obtained the point (alpha, lam) (``regime`` of :func:`.root.solve_reduced`)."""
    if regime == root.LARGE_KAPPA:
        return ("omega_max / kappa < 2^-60 (lam -> infinity or alpha -> 0): first order in "
                "1/kappa, exact in float64")
    if regime == root.FLAT and lam > 0:
        return "lam / (alpha - 1) below 2^-800 omega_min: least squares (kappa = 0) is exact"
    if lam > 0:
        return "Newton's method on the reduced scalar equation G(kappa) = 0"
    if alpha > 1:
        return "lam = 0, alpha > 1: least squares, kappa = 0 exactly"
    if alpha < 1:
        return "lam = 0, alpha < 1: minimum-norm limit, Newton's method on V_hat(kappa) = 0"
    return "alpha = 1, lam = 0: interpolation peak, eg = inf exactly"


def _solve_root(spec: Spectrum, alpha: float, lam: float) -> SaddlePoint:
    """The route ``"root"``: the reduced scalar equation (:mod:`.root`); no options."""
    found = root.solve_point(spec, alpha, lam)  # the common case, on numbers (the same bits)
    if found is not None:
        return _result(spec, alpha, lam, found, method="root", message=root_message(alpha, lam))
    out = solve_reduced(spec, np.array([alpha]), lam)
    return _result(spec, alpha, lam, {k: v[0] for k, v in out.items()}, method="root",
                   message=root_message(alpha, lam, int(out["regime"][0])))


def _result(spec, alpha, lam, out, *, convert: bool = True, **info) -> SaddlePoint:
    keys = ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa", "residual",
            "test_loss", "estimation_error")
    values = {k: (float(out[k]) if convert else out[k]) for k in keys}
    rho, noise = (spec.rho, spec.noise) if convert else (out.get("rho", spec.rho), spec.noise)
    return SaddlePoint(alpha=alpha, lam=lam, rho=rho, noise=noise, converged=True,
                       iterations=int(out["iterations"]), **values, **info)


# --- damped fixed-point iteration ----------------------------------------------------------


def _solve_iterate(
    spec: Spectrum,
    alpha: float,
    lam: float,
    *,
    damping: float = 0.5,
    tol: float = 1e-12,
    max_iter: int = 100_000,
    init: tuple[float, float, float] | None = None,
) -> SaddlePoint:
    """The route of ``method="iterate"``: damped iteration of the raw equations (:mod:`.fixed_point`)."""
    damping = _checks.nonnegative(damping, "damping")
    if damping >= 1:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    tol = _checks.positive(tol, "tol")
    max_iter = _checks.positive_int(max_iter, "max_iter")
    start = _checks.finite_array(ITERATE_INIT if init is None else init, "init")  # None: the default
    if start.shape != (3,):
        raise ValueError(f"init must be (V, q, m): three finite numbers (or None for {ITERATE_INIT}), "
                         f"got shape {start.shape}")
    fns = compiled()

    def residual(x: list) -> tuple[float, dict]:
        V, q, m = x
        hat_args = (alpha, V, q, m, spec.rho, spec.noise)
        out = {name: f(*hat_args) for name, f in fns.hat.items()}
        out.update(V=V, q=q, m=m, eg=fns.eg(*hat_args), train_loss=fns.train_loss(*hat_args),
                   kappa=math.nan)
        out["test_loss"] = out["eg"] / 2  # the loss (y - z)^2 / 2
        out["estimation_error"] = prior.estimation_error(spec, lam, out["V_hat"], out["q_hat"],
                                                         out["m_hat"])
        out["residual"] = raw_residual(spec, alpha, lam, out)
        return out["residual"], out

    try:  # steps below tol with the raw equations not yet satisfied iterate on
        found = fixed_point.solve(lambda x: _sweep(spec, alpha, lam, x), residual, start,
                                  tol=max(tol, root.RESIDUAL_TOL), method="damped", damping=damping,
                                  step_tol=tol, max_iter=max_iter,
                                  failures=(OverflowError, ZeroDivisionError))
    except fixed_point.FixedPointFailure as failure:
        reason = "diverged (overflow)" if failure.error is not None else failure.reason
        raise ConvergenceError(f"damped iteration {reason} at alpha={alpha}, lam={lam}",
                               last=dict(zip("Vqm", failure.last.tolist(), strict=True)),
                               residual=failure.residual, iterations=failure.iterations) from None
    return _result(spec, alpha, lam, {**found.point, "iterations": found.iterations}, method="iterate",
                   message=f"damped iteration (damping={damping}) reached |dV|+|dq|+|dm| < {tol:g}")


def _sweep(spec: Spectrum, alpha: float, lam: float, x: list) -> list:
    """One undamped pass of the raw equations: hats from ``x = [V, q, m]``, then ``[V, q, m]`` from
    the hats."""
    fns = compiled()
    V, q, m = x
    hat_args = (alpha, V, q, m, spec.rho, spec.noise)
    hats = [fns.hat[name](*hat_args) for name in ("V_hat", "q_hat", "m_hat")]
    mode_args = (spec.omega, spec.bulk, spec.teacher, lam, *hats)
    # (lam + V_hat omega)^2 may overflow at huge lam: the summand is then 0, its rounded value
    with np.errstate(over="ignore"):
        return [float(np.sum(fns.mode[name](*mode_args))) for name in ("V", "q", "m")]
