"""Learning dynamics: the test error along one-pass SGD and along gradient flow
(docs/dynamics.md).

:func:`online_sgd` follows one-pass SGD in the time ``alpha = k B / p`` (samples seen per
dimension): for the square loss with the gaussian channel, exactly at finite p
(``exact=True``, the per-mode second moments of :mod:`..sides.sgd_modes`) or in the limit
p -> infinity; for any other convex loss and channel, through the ODEs of the order parameters
per eigenmode (:mod:`..sides.sgd_fields`; on a two-cluster mixture :mod:`..sides.sgd_mixture`;
on a q-colour site with the softmax cross-entropy :mod:`..sides.sgd_multiclass`).
:func:`gradient_flow` follows gradient flow of the
square loss on a fixed training set of n = alpha p samples (:mod:`.flow_equivalent`); its end
point is :func:`replica_mlm.solve` at (alpha, lam).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.theory import routes
from replica_mlm.theory.sides import sgd_fields, sgd_modes
from replica_mlm.theory.solve import SaddlePoint, solve_planned
from replica_mlm.theory.studies import flow_equivalent

#: the per-time columns of an online curve
ONLINE_COLUMNS = ("alpha", "eg", "test_loss", "estimation_error", "m", "q")


@dataclass(frozen=True)
class OnlineSGD:
    """The expected order parameters of one-pass SGD at each time of :func:`online_sgd`.

    Attributes
    ----------
    alpha : ndarray, shape (k,)
        Samples seen per dimension, ``k B / p`` (``exact=True``: realised on whole steps).
    eg, test_loss, estimation_error, m, q : ndarray, shape (k,)
        As :class:`replica_mlm.SaddlePoint` reports them, expected over SGD's samples: ``eg`` the
        channel's natural error, ``test_loss`` ``E loss(y, w . x)``, ``estimation_error``
        ``E |w - w*|^2``, ``m`` ``E w*^T Sigma w`` and ``q`` ``E w^T Sigma w``.
    steps : ndarray of int, shape (k,), or None
        SGD steps at each time (``exact=True``), None in the limit.
    lr, lam : float
        Learning rate and weight decay.
    batch : int
        Samples per step.
    lr_max : float
        The largest stable learning rate (square loss: the edge of the recursion's stability,
        ``exact=True``, or of its limit, whatever the channel; nan for other losses, whose
        bounded derivatives keep the error finite at every lr; a custom loss whose curve
        overflows is refused).
    exact : bool
        The exact finite-p recursion (True) or the p -> infinity limit.
    p : int or None
        Inputs of the exact recursion (None in the limit).
    rho, noise : float
        The task's teacher signal and label noise.
    loss, channel : str
        Names of the loss and the label channel.
    Q, M : ndarray, shape (k, K, K), or None
        A q-colour site (docs/dynamics.md, section "A q-colour site"): ``E W^T Sigma W`` and
        ``E W^T Sigma W*`` (``q``, ``m`` and ``rho`` are then traces); None for one teacher
        direction.
    """

    alpha: np.ndarray
    eg: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    m: np.ndarray
    q: np.ndarray
    steps: np.ndarray | None
    lr: float
    lam: float
    batch: int
    lr_max: float
    exact: bool
    p: int | None
    rho: float
    noise: float
    loss: str = "square"
    channel: str = "gaussian"
    Q: np.ndarray | None = None
    M: np.ndarray | None = None

    def __len__(self) -> int:
        return self.alpha.size

    def to_frame(self):
        """A pandas DataFrame, one row per time: alpha, (steps), eg, test_loss, estimation_error,
        m, q, then lr, lam, batch, lr_max, exact, p, rho, noise, loss, channel (a q-colour site:
        ``m``, ``q`` and ``rho`` are the traces of the K x K matrices ``M``, ``Q`` and ``rho``)."""
        import pandas as pd

        cols = {c: getattr(self, c) for c in ONLINE_COLUMNS}
        if self.steps is not None:
            cols["steps"] = self.steps
        frame = pd.DataFrame(cols)
        for name in ("lr", "lam", "batch", "lr_max", "exact", "p", "rho", "noise", "loss", "channel"):
            frame[name] = getattr(self, name)
        return frame


def _unique_modes(spec) -> int | None:
    """p for a spectrum with one mode per eigenvector (equal bulk weights 1/p), else None."""
    k = spec.bulk.size
    return k if np.allclose(spec.bulk, 1.0 / k, rtol=1e-12, atol=0.0) else None


def check_lr(lr: float, lr_max: float, *, lam: float, batch: int, exact: bool) -> None:
    """ValueError for a learning rate at or beyond the stability edge, naming it."""
    if lr >= lr_max:
        where = "the exact recursion at this p" if exact else "p -> infinity"
        raise ValueError(f"lr = {lr:g} is at or beyond the largest stable learning rate lr_max = "
                         f"{lr_max:.6g} of one-pass SGD on this task (batch {batch}, lam {lam:g}, "
                         f"{where}): the expected error diverges there; take lr < lr_max")


@keywords
def online_sgd(task, *, alpha, lr: float, lam: float = 0.0, batch: int = 1, loss=None, channel=None,
               theory: str = "gaussian", exact: bool = False) -> OnlineSGD:
    """The expected test error of one-pass SGD along training (docs/dynamics.md).

    Step k draws ``batch`` fresh samples and moves
    ``w <- w - (lr / p) ((1/B) sum_b dloss/dz(y_b, w . x_b) x_b + lam w)`` from w = 0; the time is
    ``alpha = k B / p``, the axis of ERM's alpha = n / p.

    Parameters
    ----------
    task : MaskedSite, Ising site, Spectrum, GaussianPottsLimit or PottsSite
        Any task with a covariance spectrum (what :func:`replica_mlm.solve` takes), or a q-colour
        site (a :class:`~replica_mlm.tasks.potts_site.PottsSite` with the softmax channel, e.g.
        ``PottsModel.masked_site(i)`` for q > 2): the softmax cross-entropy, ``W`` of shape d x K,
        the ODEs of its K x K order parameters (docs/dynamics.md, section "A q-colour site").
    alpha : float or array_like
        Times (samples seen per dimension), >= 0.
    lr : float
        Learning rate, > 0 and below the stability edge (``OnlineSGD.lr_max``; beyond it a
        ValueError names the edge).
    lam : float
        Weight decay (the ridge's lam), >= 0.
    batch : int
        Samples per step, >= 1.
    loss, channel : optional
        As in :func:`replica_mlm.solve` (None: the task's own).
    theory : {"gaussian", "mixture"}
        Gaussian covariates, or the two-cluster Gaussian mixture of a task that has one (an Ising
        site: ``task.mixture``; the label is the cluster, the loss logistic by default, no
        channel; docs/dynamics.md, section "Discrete data").
    exact : bool
        Square loss with the gaussian channel only: the exact expected error at finite p (the
        task's p = its number of modes) in O(p) per step; False: the p -> infinity limit.

    Returns
    -------
    OnlineSGD

    Raises
    ------
    ValueError
        For bad input, an lr at or beyond the stability edge, ``exact=True`` for another loss or
        channel, or on a spectrum that is not one mode per eigenvector.
    """
    plan = routes.plan(task, entry="online_sgd", loss=loss, channel=channel, theory=theory)
    times = _checks.grid(alpha, "alpha", positive=False)
    lr = _checks.positive(lr, "lr")
    lam = _checks.nonnegative(lam, "lam")
    batch = _checks.positive_int(batch, "batch")
    exact = _checks.flag(exact, "exact")
    order = np.argsort(times, kind="stable")  # the ODEs run forwards; results come back in the given order
    if routes.is_multiclass(task):
        return _multiclass(task, plan, times, order, lr=lr, lam=lam, batch=batch, exact=exact)
    if plan.channel is None:  # theory="mixture"
        return _mixture(task, plan, times, order, lr=lr, lam=lam, batch=batch, exact=exact)
    spec = spectrum_of(task)
    square = plan.loss.is_square and plan.channel.name == "gaussian"
    if not square:
        if exact:
            raise ValueError("exact=True is the square loss's recursion with the gaussian channel; for "
                             f"loss {plan.loss.name!r} with channel {plan.channel.name!r} take exact=False "
                             "(the ODEs of the order parameters, p -> infinity)")
        # the square loss with another channel has the square's drift (A = 1) and its edge
        lr_max = (sgd_modes.limit_lr_max(spec.omega, spec.bulk, lam, batch) if plan.loss.is_square
                  else math.nan)
        check_lr(lr, lr_max, lam=lam, batch=batch, exact=False)
        mom = sgd_fields.online_moments(spec, plan.loss, plan.channel, lr=lr, lam=lam, batch=batch,
                                        alpha=times[order])
        steps, p = None, None
    else:
        mom, lr_max, steps, p = _square(spec, times, order, lr=lr, lam=lam, batch=batch, exact=exact)
        if steps is not None:
            times = steps * batch / p
    if not all(np.all(np.isfinite(getattr(mom, name))) for name in ("eg", "m", "q")):
        raise ValueError(f"one-pass SGD with lr = {lr:g} diverges on this task (the order parameters "
                         "overflow before the last time); take a smaller lr")
    back = _inverse(order)
    cols = {name: np.asarray(getattr(mom, name))[back] for name in ("eg", "m", "q", "estimation_error")}
    test = cols["eg"] / 2.0 if square else np.asarray(mom.test_loss)[back]
    return OnlineSGD(alpha=times, test_loss=test, steps=steps, lr=lr, lam=lam, batch=batch, lr_max=lr_max,
                     exact=exact, p=p, rho=spec.rho, noise=spec.noise, loss=plan.loss.name,
                     channel=plan.channel.name, **cols)


def _inverse(order: np.ndarray) -> np.ndarray:
    """The permutation that undoes ``order`` (results back in the order of the given times)."""
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return back


def _mixture(task, plan, times, order, *, lr, lam, batch, exact) -> OnlineSGD:
    """:func:`online_sgd` with theory="mixture" (checked arguments): the ODEs of a two-cluster
    mixture (:mod:`..sides.sgd_mixture`)."""
    from replica_mlm.theory.sides import sgd_mixture
    from replica_mlm.theory.solvers.mixture_engine import MixtureTheory

    if exact:
        raise ValueError("exact=True is the square loss's recursion on Gaussian covariates; "
                         "theory='mixture' takes exact=False")
    theory = MixtureTheory(task.mixture)
    mom = sgd_mixture.online_moments(theory, plan.loss, lr=lr, lam=lam, batch=batch, alpha=times[order])
    if not all(np.all(np.isfinite(getattr(mom, name))) for name in ("eg", "m", "q")):
        raise ValueError(f"one-pass SGD with lr = {lr:g} diverges on this mixture; take a smaller lr")
    back = _inverse(order)
    names = ("eg", "test_loss", "m", "q", "estimation_error")
    cols = {name: np.asarray(getattr(mom, name))[back] for name in names}
    return OnlineSGD(alpha=times, steps=None, lr=lr, lam=lam, batch=batch, lr_max=math.nan, exact=False,
                     p=None, rho=math.nan, noise=0.0, loss=plan.loss.name, channel="mixture", **cols)


def _multiclass(task, plan, times, order, *, lr, lam, batch, exact) -> OnlineSGD:
    """:func:`online_sgd` on a q-colour site (checked arguments): the ODEs of the K x K order
    parameters (:mod:`..sides.sgd_multiclass`)."""
    from replica_mlm.theory.sides import sgd_multiclass

    if exact:
        raise ValueError("exact=True is the square loss's recursion on one teacher direction; a "
                         "multi-class site takes exact=False (the ODEs, p -> infinity)")
    mom = sgd_multiclass.online_moments(task, lr=lr, lam=lam, batch=batch, alpha=times[order])
    if not all(np.all(np.isfinite(v)) for v in (mom.eg, mom.Q, mom.M)):
        raise ValueError(f"one-pass SGD with lr = {lr:g} diverges on this site; take a smaller lr")
    back = _inverse(order)
    Q, M = mom.Q[back], mom.M[back]
    return OnlineSGD(alpha=times, eg=mom.eg[back], test_loss=mom.test_loss[back],
                     estimation_error=mom.estimation_error[back], m=np.trace(M, axis1=1, axis2=2),
                     q=np.trace(Q, axis1=1, axis2=2), steps=None, lr=lr, lam=lam, batch=batch,
                     lr_max=math.nan, exact=False, p=None, rho=float(np.trace(task.rho)), noise=0.0,
                     loss=plan.loss, channel=plan.channel, Q=Q, M=M)


def _square(spec, times: np.ndarray, order: np.ndarray, *, lr: float, lam: float, batch: int, exact: bool):
    """The square loss's moments (exact recursion or limit), its lr_max, the steps and p."""
    if not exact:
        lr_max = sgd_modes.limit_lr_max(spec.omega, spec.bulk, lam, batch)
        check_lr(lr, lr_max, lam=lam, batch=batch, exact=False)
        n_int = sgd_modes.internal_steps(spec.omega, lr=lr, lam=lam, batch=batch, last=float(np.max(times)))
        _checks.work(n_int * spec.omega.size, f"online_sgd to alpha = {float(np.max(times)):g} with "
                     f"lr={lr:g}, lam={lam:g}, batch={batch}", steps=n_int)
        mom = sgd_modes.limit_moments(spec.omega, spec.bulk, spec.teacher, spec.noise, lr=lr, lam=lam,
                                      batch=batch, alpha=times[order])
        return mom, lr_max, None, None
    p = _unique_modes(spec)
    if p is not None:
        last = int(float(np.max(times)) * p / batch + 0.5)
        _checks.work(last * p, f"online_sgd(exact=True) to alpha = {float(np.max(times)):g} with "
                     f"batch={batch} on p = {p}", steps=last)
    if p is None:
        raise ValueError("exact=True needs a finite task whose spectrum has one mode per eigenvector "
                         "(a MaskedSite or an Ising site); this spectrum has quadrature nodes: take "
                         "exact=False")
    lr_max = sgd_modes.exact_lr_max(spec.omega, lam, batch)
    check_lr(lr, lr_max, lam=lam, batch=batch, exact=True)
    steps = np.rint(times * p / batch).astype(np.int64)
    mom = sgd_modes.exact_moments(spec.omega, spec.teacher, spec.noise, lr=lr, lam=lam, batch=batch,
                                  steps=steps[order])
    return mom, lr_max, steps, p


@dataclass(frozen=True)
class EarlyStopping:
    """The early-stopping optimum of a gradient flow, beside the best ridge at the same alpha.

    Attributes
    ----------
    time : float
        The time of the least eg (``inf`` where eg decreases to the end point).
    eg : float
        eg there.
    ridge_lam, ridge_eg : float
        :func:`replica_mlm.optimal_lambda` at the flow's alpha: the optimal ridge and its eg.
    """

    time: float
    eg: float
    ridge_lam: float
    ridge_eg: float


@dataclass(frozen=True)
class GradientFlow:
    """Gradient flow of the square loss on a fixed training set, at each time of :func:`gradient_flow`.

    Attributes
    ----------
    time : ndarray, shape (k,)
        Flow times.
    eg, train_loss, test_loss, estimation_error, m, q : ndarray, shape (k,)
        As :class:`replica_mlm.SaddlePoint` reports them, at w(t) (train loss: |y - X w|^2 / n).
    alpha, lam : float
        The training set's n / p and the ridge of the flow's objective.
    end : SaddlePoint
        The t -> infinity end point, :func:`replica_mlm.solve` at (alpha, lam).
    best : EarlyStopping
        The early-stopping optimum: the least eg over the times given, refined between the
        neighbouring times, or the end point where eg decreases to it.
    rho, noise : float
        The task's teacher signal and label noise.
    """

    time: np.ndarray
    eg: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    m: np.ndarray
    q: np.ndarray
    alpha: float
    lam: float
    end: SaddlePoint = field(repr=False)
    best: EarlyStopping
    rho: float
    noise: float
    loss: str = "square"
    channel: str = "gaussian"

    def __len__(self) -> int:
        return self.time.size

    def to_frame(self):
        """A pandas DataFrame, one row per time: time, eg, train_loss, test_loss,
        estimation_error, m, q, then alpha, lam, rho, noise, loss, channel."""
        import pandas as pd

        frame = pd.DataFrame({c: getattr(self, c) for c in ("time", "eg", "train_loss", "test_loss",
                                                             "estimation_error", "m", "q")})
        for name in ("alpha", "lam", "rho", "noise", "loss", "channel"):
            frame[name] = getattr(self, name)
        return frame


@keywords
def gradient_flow(task, *, alpha: float, time, lam: float = 0.0, loss=None, channel=None,
                  theory: str = "gaussian") -> GradientFlow:
    """The test error along gradient flow of the square loss on n = alpha p samples
    (docs/dynamics.md, section "Gradient flow").

    ``dw/dt = -((1/n) sum_i dloss/dz(y_i, w . x_i) x_i + (lam / alpha) w)`` from w = 0, in the
    proportional limit; its t -> infinity limit is ERM at (alpha, lam), :func:`replica_mlm.solve`.

    Parameters
    ----------
    task : MaskedSite, Ising site, Spectrum or GaussianPottsLimit
    alpha : float
        n / p, > 0.
    time : float or array_like
        Flow times, > 0.
    lam : float
        Ridge strength, >= 0.
    loss, channel : optional
        The square loss with the gaussian channel (the only pair whose flow is solved here).

    Returns
    -------
    GradientFlow

    Raises
    ------
    ValueError
        For bad input or another loss or channel (their flow needs a dynamical mean-field
        theory, which the package does not provide).
    """
    plan = routes.plan(task, entry="gradient_flow", loss=loss, channel=channel, theory=theory)
    if not (plan.loss.is_square and plan.channel.name == "gaussian"):
        raise ValueError(f"gradient_flow solves the square loss with the gaussian channel only (its flow "
                         f"is linear; loss {plan.loss.name!r} with channel {plan.channel.name!r} would "
                         "need a dynamical mean-field theory, not provided): use rm.online_sgd for the "
                         "dynamics of that pair, rm.solve for its end point")
    spec = spectrum_of(task)
    a = _checks.positive(alpha, "alpha")
    times = _checks.grid(time, "time")
    lam = _checks.nonnegative(lam, "lam")
    cols = flow_equivalent.flow_curves(times, spec.omega, spec.bulk, spec.teacher, spec.noise, alpha=a,
                                       mu=lam / a)
    q = cols["eg"] - spec.noise - spec.rho + 2.0 * cols["m"]
    end = solve_planned(routes.plan(task, entry="solve"), task, a, lam)
    best = _early_stopping(task, spec, times, cols["eg"], end, a, lam / a)
    return GradientFlow(time=times, eg=cols["eg"], train_loss=cols["train_loss"], test_loss=cols["eg"] / 2,
                        estimation_error=cols["estimation_error"], m=cols["m"], q=q, alpha=a, lam=lam,
                        end=end, best=best, rho=spec.rho, noise=spec.noise)


def _early_stopping(task, spec, times, eg, end: SaddlePoint, alpha: float, mu: float) -> EarlyStopping:
    """The least eg over the times and the end point, refined between the grid's neighbours by
    bounded Brent minimisation in log t (to 1e-6 in log t), with the optimal ridge beside it."""
    from scipy.optimize import minimize_scalar

    from replica_mlm.theory.studies.phase import optimal_lambda

    i = int(np.argmin(eg))
    if eg[i] > end.eg:
        time, value = math.inf, float(end.eg)
    elif 0 < i < times.size - 1:
        def at(log_t: float) -> float:
            return float(flow_equivalent.flow_curves(np.array([math.exp(log_t)]), spec.omega, spec.bulk,
                                                     spec.teacher, spec.noise, alpha=alpha, mu=mu)["eg"][0])

        res = minimize_scalar(at, bounds=(math.log(times[i - 1]), math.log(times[i + 1])), method="bounded",
                              options={"xatol": 1e-6})
        better = res.fun <= eg[i]
        time, value = (math.exp(res.x), float(res.fun)) if better else (float(times[i]), float(eg[i]))
    else:
        time, value = float(times[i]), float(eg[i])
    ridge = optimal_lambda(task, alpha=alpha)
    return EarlyStopping(time=time, eg=value, ridge_lam=float(ridge.lam_opt), ridge_eg=float(ridge.eg_opt))
