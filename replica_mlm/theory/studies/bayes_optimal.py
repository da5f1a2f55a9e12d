"""The Bayes-optimal error of a task: the state evolution's fixed point (docs/bayes_optimal.md).

:func:`bayes_optimal` solves the Nishimori saddle point (:mod:`.nishimori`) of a task's channel
under a Gaussian prior on the teacher; :func:`bayes_optimal_curve` does so along a grid of alpha
with warm starts. The prior is isotropic, ``w* ~ N(0, (tau / p) I)``:

``prior="gaussian"``
    ``tau = rho / ((1/p) tr Sigma)``: the prior's mean signal ``E w*^T Sigma w*`` is the task's
    ``rho``. It assumes the teacher has no preferred alignment with the eigenvectors of Sigma
    (teacher weights ``b_k tau``); the task's own teacher weights enter only through ``rho``.
``prior="sk"``
    The Sherrington-Kirkpatrick ensemble of an Ising site, ``w* = 2 beta J`` with couplings of
    variance ``1 / L``: ``tau = 4 beta^2 p / L`` with ``L = p + 1`` (``4 beta^2`` for a task
    without a finite ``p``). Needs ``beta``.

``theory="mixture"`` (an Ising site's Gaussian mixture, ``task.mixture``) takes the same prior and
computes the posterior in closed form (:mod:`.bayes_mixture`; docs/bayes_optimal.md, section "On the
Gaussian mixture").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base import io as rm_io
from replica_mlm._base.errors import ConvergenceError
from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory import routes
from replica_mlm.theory.sides import bayes_sides, energetic
from replica_mlm.theory.solvers import nishimori
from replica_mlm.theory.studies import bayes_mixture
from replica_mlm.theory.studies.curve import warm_started

PRIORS = ("gaussian", "sk")
#: the alpha range of the Bayes-optimal solver: q grows like alpha from alpha = 0, and below
#: MIN_ALPHA the cold start's q underflows float64 (measured on a GaussianPotts site, L = 5, whose
#: q / alpha is 1e-4: exact to 1e-9 down to alpha = 1e-310, math domain error from 1e-315); there
#: eg is its alpha -> 0 value, the prior's error. Above MAX_ALPHA the solver is not tested.
MIN_ALPHA, MAX_ALPHA = 1e-300, 1e8
ALPHA_RANGE = f"the Bayes-optimal solver takes {MIN_ALPHA:g} <= alpha <= {MAX_ALPHA:g}"
#: per-point fields of a BayesOptimal stored as arrays in a BayesOptimalCurve
COLUMNS = ("alpha", "eg", "test_loss", "estimation_error", "m", "q", "V", "q_hat", "residual", "iterations")


@dataclass(frozen=True)
class BayesOptimal:
    """The Bayes-optimal estimator at one alpha (docs/bayes_optimal.md).

    Attributes
    ----------
    alpha : float
        Sample ratio n/p.
    eg : float
        The channel's natural error of the Bayes-optimal prediction: ``rho + sigma^2 - q`` (gaussian
        channel, no factor 1/2), the classification error ``arccos(sqrt(q / rho)) / pi`` (sign) or
        ``P(y != sign(w_hat . x))`` (logit), with ``w_hat`` the posterior mean.
    test_loss : float
        The predictive log-loss ``-E log p(y | x, data)`` in nats.
    estimation_error : float
        ``E |w_hat - w*|^2`` of the posterior mean (the summed posterior variances).
    m, q, V, q_hat : float
        Overlaps on the Nishimori line (``m = q``, ``V = rho - q``) and the conjugate of ``q``.
    converged : bool
        True: a point whose residual is above 1e-10 raises :class:`ConvergenceError`.
    residual : float
        Largest relative violation of the fixed-point equations at the solution.
    iterations : int
        Channel-side evaluations.
    rho, noise, tau : float
        The prior's signal ``E w*^T Sigma w*``, the label noise and ``E |w*|^2`` of the prior.
    prior, channel : str
        ``channel`` is ``"mixture"`` for ``theory="mixture"``, whose fields read differently
        (docs/bayes_optimal.md, section "On the Gaussian mixture"): ``m = w_hat . mu`` and
        ``q = w_hat^T S w_hat`` (as ``rm.solve(theory="mixture")``), ``V`` the posterior variance of
        the logit, ``q_hat = alpha / 4``, ``rho = mu^T S^{-1} mu``, ``estimation_error`` on the
        task's actual teacher, ``residual`` that of the predictive log-loss's quadrature (the rest is
        closed form), ``iterations`` its evaluations.
    """

    alpha: float
    eg: float
    test_loss: float
    estimation_error: float
    m: float
    q: float
    V: float
    q_hat: float
    converged: bool
    residual: float
    iterations: int
    rho: float
    noise: float
    tau: float
    prior: str
    channel: str

    def as_dict(self) -> dict:
        """The fields as a dict."""
        return asdict(self)

    def to_frame(self):
        """A one-row pandas DataFrame of the fields."""
        import pandas as pd

        return pd.DataFrame([self.as_dict()])


@dataclass(frozen=True)
class BayesOptimalCurve:
    """Bayes-optimal points along a grid of alpha; the columns of :class:`BayesOptimal` as arrays."""

    alpha: np.ndarray
    eg: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    m: np.ndarray
    q: np.ndarray
    V: np.ndarray
    q_hat: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    rho: float
    noise: float
    tau: float
    prior: str
    channel: str
    converged: bool = True

    def __len__(self) -> int:
        return len(self.alpha)

    def to_csv(self, path=None) -> str:
        """The rows of :meth:`to_frame` as CSV (written atomically by :func:`replica_mlm._base.io.write_csv`
        when ``path`` is given); returns the text."""
        names = [f.name for f in fields(self) if f.name not in COLUMNS]
        rows = [[*(getattr(self, c)[i] for c in COLUMNS), *(getattr(self, n) for n in names)]
                for i in range(len(self))]
        columns = [*COLUMNS, *names]
        if path is None:
            return rm_io.csv_text(rows, columns=columns)
        return rm_io.write_csv(path, rows, columns=columns)

    def to_frame(self):
        """A pandas DataFrame, one row per alpha, with the per-curve fields repeated."""
        import pandas as pd

        frame = pd.DataFrame({c: getattr(self, c) for c in COLUMNS})
        for f in fields(self):
            if f.name not in COLUMNS:
                frame[f.name] = getattr(self, f.name)
        return frame


def prior_spectrum(task, *, prior: str = "gaussian", beta: float | None = None) -> tuple[Spectrum, float]:
    """The prior's spectrum (teacher weights ``b_k tau``) and ``tau = E |w*|^2`` for a task."""
    spec = spectrum_of(task)
    prior = _checks.choice(prior, PRIORS, "prior")
    if prior == "gaussian":
        if beta is not None:
            raise ValueError("beta is used by prior='sk' only; the gaussian prior takes its variance "
                             "from the task")
        if not spec.rho > 0:
            raise ValueError(f"the gaussian prior matched to the task needs a teacher signal rho > 0, "
                             f"got rho = {spec.rho:g}")
        tau = spec.rho / spec.mean_omega
    else:
        if beta is None:
            raise ValueError("prior='sk' needs the inverse temperature beta (couplings of variance "
                             "4 beta^2 / L)")
        beta = _checks.positive(beta, "beta")
        p = getattr(task, "p", None)
        tau = 4.0 * beta**2 * (p / (p + 1.0) if isinstance(p, int | np.integer) else 1.0)
    return bayes_sides.gaussian_prior(spec, tau), float(tau)


def _setup(task, prior, chan, beta, order):
    spec, tau = prior_spectrum(task, prior=prior, beta=beta)
    order = _checks.positive_int(order, "order")
    _checks.at_most(order, 256, "order", "Gauss-Legendre nodes per panel, 1 to 256")
    return spec, tau, chan, order


@keywords
def bayes_optimal(task, *, alpha: float, prior: str = "gaussian", channel=None, beta: float | None = None,
                  order: int = energetic.ORDER, init=None, theory: str = "gaussian") -> BayesOptimal:
    """The Bayes-optimal error of ``task`` at one alpha (docs/bayes_optimal.md).

    Parameters
    ----------
    task : MaskedSite, limit or Spectrum
        The covariance (its spectrum) and the channel; its teacher sets ``rho`` for the gaussian prior.
    alpha : float
        Sample ratio n/p in ``[1e-300, 1e8]`` (below 1e-300 the overlap ``q``, which grows like
        alpha, underflows float64; eg there is its alpha -> 0 value).
    prior : {"gaussian", "sk"}
        Isotropic Gaussian prior on the teacher (see the module docstring).
    channel : str or rm.channels.Channel, optional
        The label channel (default: the task's own).
    beta : float, optional
        Inverse temperature, for ``prior="sk"`` only.
    order : int
        Gauss-Legendre nodes per panel of the channel-side quadrature.
    init : BayesOptimal, optional
        A warm start (not needed by ``theory="mixture"``, a closed form).
    theory : {"gaussian", "mixture"}
        ``"gaussian"``: the state evolution with Gaussian inputs of the task's covariance.
        ``"mixture"``: the exact Gaussian posterior of the task's two-cluster mixture (Ising sites;
        ``channel`` must be left unset); a multi-class site is a ValueError.

    Returns
    -------
    BayesOptimal

    Raises
    ------
    ConvergenceError
        If the residual stays above 1e-10.
    ValueError
        For the gaussian channel without label noise at alpha > 1, where the teacher is recovered
        exactly (the fixed point ``V = 0`` lies on the boundary).
    """
    alpha = _checks.positive(alpha, "alpha")
    _checks.at_least(alpha, MIN_ALPHA, "alpha", ALPHA_RANGE)
    _checks.at_most(alpha, MAX_ALPHA, "alpha", ALPHA_RANGE)
    route = routes.plan(task, entry="bayes_optimal", channel=channel, theory=theory, bayes=True)
    mixture = route.route == "bayes-mixture"
    if mixture:
        mix, tau, order = _mixture_setup(task, prior, beta, order)
    else:
        spec, tau, chan, order = _setup(task, prior, route.channel, beta, order)
    if init is not None and not isinstance(init, BayesOptimal):
        raise TypeError(f"init must be a BayesOptimal, got {type(init).__name__}")
    if mixture:
        return _mixture_point(mix, tau, prior, order, alpha)
    return _point(spec, tau, prior, chan, order, alpha, None if init is None else _pack(init))


def _mixture_setup(task, prior, beta, order):
    mix = bayes_mixture.mixture_theory(task)
    _, tau = prior_spectrum(task, prior=prior, beta=beta)
    order = _checks.positive_int(order, "order")
    _checks.at_most(order, 256, "order", "Gauss-Legendre nodes per panel, 1 to 256")
    return mix, tau, order


def _mixture_point(mix, tau, prior, order, alpha) -> BayesOptimal:
    out = bayes_mixture.mixture_point(mix, alpha, tau, order=order)
    if not out["residual"] <= bayes_mixture.TOL:
        raise ConvergenceError(f"theory='mixture' at alpha={alpha:g}: the predictive log-loss's quadrature "
                               f"changes by {out['residual']:.3g} (relative) at {out['order']} nodes per "
                               "panel")
    return BayesOptimal(
        alpha=float(alpha), eg=out["eg"], test_loss=out["test_loss"],
        estimation_error=out["estimation_error"], m=out["m"], q=out["q"], V=out["V"], q_hat=out["q_hat"],
        converged=True, residual=out["residual"],
        iterations=out["evaluations"], rho=out["rho"], noise=0.0, tau=tau, prior=prior, channel="mixture")


def _pack(point) -> np.ndarray:
    return nishimori.Problem.pack(point.q, point.V)


def _starts(points: list[BayesOptimal], alpha: float) -> list:
    """The warm starts of the Bayes-optimal curve: the unknowns extrapolated linearly in
    ``log(q / V)`` from the last two points (continuing their step by at most twice), the last."""
    starts = []
    if len(points) >= 2:
        p0, p1 = points[-2], points[-1]
        t = (alpha - p1.alpha) / (p1.alpha - p0.alpha) if p1.alpha != p0.alpha else 0.0
        if 0.0 < t <= 2.0:
            starts.append(_pack(p1) + t * (_pack(p1) - _pack(p0)))
    return starts + [_pack(p) for p in points[-1:]]


def _point(spec, tau, prior, chan, order, alpha, start) -> BayesOptimal:
    if chan.labels == "real" and spec.noise == 0 and alpha > float(np.sum(spec.bulk[spec.teacher > 0])):
        # V -> V / alpha near V = 0: the fixed point is V = 0, on the boundary of the unknowns
        raise ValueError(f"the {chan.name} channel without label noise at alpha = {alpha:g} > 1 recovers the "
                         "teacher exactly (eg = 0, V = 0, an infinite predictive log-density): give the "
                         "task some label noise, or take alpha <= 1")
    sides = bayes_sides.BayesChannel(chan, spec.noise, order), bayes_sides.BayesPrior(spec)
    problem = nishimori.Problem(*sides, alpha)
    out = nishimori.solve_point(problem, init=start)
    return BayesOptimal(
        alpha=float(alpha), eg=out["eg"], test_loss=out["test_loss"],
        estimation_error=out["estimation_error"], m=out["m"], q=out["q"], V=out["V"], q_hat=out["q_hat"],
        converged=True, residual=out["residual"], iterations=out["iterations"], rho=spec.rho,
        noise=spec.noise, tau=tau, prior=prior, channel=chan.name)


@keywords
def bayes_optimal_curve(task, *, alpha, prior: str = "gaussian", channel=None, beta: float | None = None,
                        order: int = energetic.ORDER, theory: str = "gaussian") -> BayesOptimalCurve:
    """:func:`bayes_optimal` at every alpha of a grid (in the order given), each point
    warm-started from the previous ones (extrapolated linearly in ``log(q / V)`` from the last two);
    a point that fails from the warm start is retried from the cold start. ``theory="mixture"``:
    the closed form of :mod:`.bayes_mixture` at every alpha (no start needed)."""
    alphas = _checks.grid(alpha, "alpha")
    _checks.at_least(float(alphas.min()), MIN_ALPHA, "alpha", ALPHA_RANGE)
    _checks.at_most(float(alphas.max()), MAX_ALPHA, "alpha", ALPHA_RANGE)
    route = routes.plan(task, entry="bayes_optimal_curve", channel=channel, theory=theory, bayes=True)
    if route.route == "bayes-mixture":
        mix, tau, order = _mixture_setup(task, prior, beta, order)
        points = [_mixture_point(mix, tau, prior, order, float(a)) for a in alphas]
        cols = {c: np.array([getattr(p, c) for p in points]) for c in COLUMNS}
        return BayesOptimalCurve(**cols, rho=points[0].rho, noise=0.0, tau=tau, prior=prior,
                                 channel="mixture")
    spec, tau, chan, order = _setup(task, prior, route.channel, beta, order)
    points = warm_started(alphas, lambda a, start: _point(spec, tau, prior, chan, order, a, start),
                          starts=_starts)
    cols = {c: np.array([getattr(p, c) for p in points]) for c in COLUMNS}
    return BayesOptimalCurve(**cols, rho=spec.rho, noise=spec.noise, tau=tau, prior=prior, channel=chan.name,
                             converged=all(p.converged for p in points))
