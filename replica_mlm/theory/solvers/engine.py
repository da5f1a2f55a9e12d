"""The general replica engine: any convex loss, any label channel, on any spectrum.

The saddle point is a fixed point on the student's order parameters ``x = (V, q, m)``:

* channel side (:mod:`.energetic`): hats ``(V_hat, q_hat, m_hat)`` from ``x`` by quadrature over
  the student's field with the loss's proximal operator (:mod:`.losses`) and the channel's
  partition function (:mod:`.channels`);
* prior side (l2 penalty): ``x`` from the hats in closed form per spectral mode, the compiled
  summands of :func:`.potentials.derive` (the same functions as the square-loss fast path).

It is solved by MINPACK's hybrid Powell method (``scipy.optimize.root(method="hybr")``) on the
well-scaled unknowns ``(log V, log q, artanh(m / sqrt(q rho)))`` (``|m| < sqrt(q rho)`` holds at
every admissible point), after a few damped iterations from a cold start or directly from a warm
start (a start that :func:`.curve.learning_curve` extrapolates from the previous points), to a
relative step :data:`XTOL` (then on to :data:`XTOL_FINE` only if the residual is above ``tol``).
The residual reported is the largest relative violation of the six raw equations at the solution:
the hats are recomputed from ``x`` and ``x`` from the hats, so it measures what the solution
misses, not a solver's step. ``converged`` is True only when it is at most ``tol`` (1e-10);
otherwise :class:`ConvergenceError` carries the last iterate.
See docs/theory.md, section "The general engine".
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import energetic, prior
from replica_mlm.theory.sides.channels import Channel
from replica_mlm.theory.sides.convexity import NonConvexLoss
from replica_mlm.theory.sides.losses import Loss
from replica_mlm.theory.solvers import fixed_point
from replica_mlm.theory.solvers.packing import pack, unpack

#: residual (largest relative violation of the raw equations) required for converged=True
TOL = 1e-10
#: smallest normal float64: V and q below it cannot be solved for (see :meth:`Problem.start`)
TINY = float(np.finfo(float).tiny)
#: damped iterations before the root solver, from a cold start
WARMUP = 8
#: hybr's relative step tolerance, first pass; if the residual is then above ``tol`` hybr goes on
#: from there with :data:`XTOL_FINE` (the residual alone decides ``converged``)
XTOL = 1e-12
#: hybr's relative step tolerance of the continuation (as small as MINPACK can resolve)
XTOL_FINE = 1e-15
#: channel-side evaluations remembered per point (hybr and the residual evaluate some twice)
MEMO = 8
#: largest alpha = n/p accepted. As alpha -> inf the estimator tends to the population risk
#: minimiser with corrections O(1/alpha), below 1e-12 here; beyond, V ~ 1/alpha shrinks the kink
#: intervals of hinge or absolute losses below what the quadrature resolves (measured on a
#: GaussianPotts site, lam = 0.1: a spurious fixed point with V_hat = 0 from alpha = 1e16 for
#: hinge/sign, 1e18 for absolute/gaussian) and from ~1e150 the hats' squares overflow
ALPHA_MAX = 1e12
#: most Gauss-Legendre nodes per panel: every panel holds an analytic function, so the default 16
#: already gives eg to ~1e-16 (16, 64, 256 and 1024 agree on logistic/sign); leggauss needs
#: order^2 memory and order^3 time
ORDER_MAX = 1024


class EngineFailure(RuntimeError):
    """The fixed point was not reached (turned into ConvergenceError by :func:`.saddle.solve`)."""

    def __init__(self, message: str, *, last: dict, residual: float, iterations: int) -> None:
        super().__init__(message)
        self.last, self.residual, self.iterations = last, residual, iterations


class Problem:
    """The fixed-point map of one point: a channel side and a prior side composed at ``alpha``
    (docs/architecture.md, section "The sides of a saddle point").

    Parameters
    ----------
    channel_side : :class:`.interfaces.ChannelSide`
        Hats, error, test and training loss (e.g. :class:`.energetic.GaussianCovariates`,
        :class:`.mixture_side.MixtureClusters`).
    prior_side : :class:`.interfaces.PriorSide`
        Overlaps and estimation error from the hats (e.g. :class:`.prior.RidgePrior`,
        :class:`.mixture_side.MixturePrior`); its ``spec`` gives ``rho`` and ``noise``.
    alpha : float
        Sample ratio, at most :data:`ALPHA_MAX`.
    """

    def __init__(self, channel_side, prior_side, alpha: float) -> None:
        _checks.at_most(alpha, ALPHA_MAX, "alpha", f"the general engine takes 0 < alpha <= {ALPHA_MAX:g}; "
                        "the solution tends to its alpha -> infinity limit (the population risk "
                        "minimiser) with corrections O(1/alpha), below 1e-12 there")
        self.channel_side, self.prior_side = channel_side, prior_side
        self.spec, self.alpha, self.lam = prior_side.spec, float(alpha), float(prior_side.lam)
        self.loss = channel_side.loss
        self.rho, self.noise = self.spec.rho, self.spec.noise
        self.signal = self.rho > 0
        self.evaluations = 0
        self._memo: dict[tuple[float, float, float], dict[str, float]] = {}

    # --- parametrisation ------------------------------------------------------------------
    def pack(self, V: float, q: float, m: float) -> np.ndarray:
        return pack(V, q, m, self.rho)

    def unpack(self, x) -> tuple[float, float, float]:
        return unpack(x, self.rho)

    # --- the two sides --------------------------------------------------------------------
    def hats(self, V: float, q: float, m: float) -> dict[str, float]:
        """The channel side at ``(V, q, m)``; ``evaluations`` counts the integrals computed.

        The last :data:`MEMO` results are remembered: the same ``(V, q, m)`` (bit for bit) gives
        the same numbers without integrating again (hybr evaluates its start twice, and the
        residual is taken where hybr last evaluated).
        """
        key = (V, q, m)
        out = self._memo.get(key)
        if out is None:
            self.evaluations += 1
            out = self.channel_side.hats(self.alpha, V, q, m)
            if not self.signal:
                out["m_hat"] = 0.0
            if len(self._memo) >= MEMO:
                del self._memo[next(iter(self._memo))]
            self._memo[key] = out
        return dict(out)

    def prior(self, V_hat: float, q_hat: float, m_hat: float) -> tuple[float, float, float]:
        return self.prior_side.overlaps(V_hat, q_hat, m_hat)

    def image(self, x) -> np.ndarray:
        """``pack(prior(hats(unpack(x))))``: the fixed-point map in the packed unknowns."""
        V, q, m = self.unpack(x)
        if not all(math.isfinite(t) and t > 0 for t in (V, q)):
            raise FloatingPointError(f"V or q left (0, inf): V={V:.3g}, q={q:.3g}")
        h = self.hats(V, q, m)
        # V_hat = 0 is legitimate (hinge with no field near its kink); negative or NaN is not
        if not (h["V_hat"] >= 0 and h["q_hat"] >= 0 and all(map(math.isfinite, h.values()))):
            raise FloatingPointError(f"hats left their domain at V={V:.3g}, q={q:.3g}, m={m:.3g}: {h}")
        return self.pack(*self.prior(h["V_hat"], h["q_hat"], h["m_hat"]))

    def start(self) -> np.ndarray:
        """A cold start: the prior side at hats of the size square loss would give.

        ValueError if its V or q is not a normal float: the field of the estimator,
        ``q ~ (omega / lam)^2``, then lies below float64 (a covariance of tiny scale for its lam,
        or a huge lam) and the engine, which solves for ``log V`` and ``log q``, cannot represent it.
        """
        a = self.alpha
        with np.errstate(over="ignore", under="ignore"):  # out of range: refused just below
            V, q, m = self.prior(a / 2, a * (self.rho + self.noise + 1) / 4, a / 2)
        if not (V >= TINY and q >= TINY):
            omega = float(np.max(self.spec.omega))
            raise ValueError(
                f"the estimator's order parameters underflow float64 (V = {V:.3g}, q = {q:.3g} at the "
                f"cold start; the general engine needs both >= {TINY:.3g}): lam = {self.lam:g} is too "
                f"large for a covariance whose largest eigenvalue is {omega:.3g}. The field variance "
                "q ~ (omega / lam)^2 depends on their ratio only (the problem is invariant under "
                "covariance -> c covariance, lam -> c lam, teacher -> teacher / sqrt(c)): lam / omega "
                "must stay below about 1e150; the square loss with the gaussian channel solves this "
                "limit exactly")
        return self.pack(V, q, m)

    def residual(self, x) -> tuple[float, dict]:
        """Largest relative violation of the six raw equations at ``x``, and the point."""
        V, q, m = self.unpack(x)
        h = self.hats(V, q, m)
        V2, q2, m2 = self.prior(h["V_hat"], h["q_hat"], h["m_hat"])
        # the reported hats are the channel side at the reported (V, q, m): their three equations
        # hold by construction, and the residual is that of the three prior-side equations
        return max(_rel(V, V2), _rel(q, q2), _rel(m, m2)), {"V": V, "q": q, "m": m, **h}

    def finish(self, point: dict, residual: float) -> dict:
        """Derived quantities at a solved point: the errors from the channel side, the estimation
        error from the prior side; the square loss's training loss in the package's MSE
        convention ``|y - X w|^2 / n`` (no factor 1/2)."""
        V, q, m = point["V"], point["q"], point["m"]
        train = point["train_loss"]
        if self.loss.is_square:
            train = 2.0 * train
        return {
            **point,
            "train_loss": train,
            "eg": self.channel_side.error(q, m),
            "test_loss": self.channel_side.test_loss(q, m),
            "estimation_error": self.prior_side.estimation_error(point["V_hat"], point["q_hat"],
                                                                 point["m_hat"]),
            "kappa": self.lam / point["V_hat"] if point["V_hat"] > 0 else math.inf,
            "residual": residual,
            "iterations": self.evaluations,
            "packed": self.pack(V, q, m),
        }


def gaussian_problem(spec: Spectrum, alpha: float, lam: float, loss: Loss, channel: Channel, *,
                     order: int = energetic.ORDER) -> Problem:
    """The problem of Gaussian covariates with a label channel and the ridge prior on ``spec``."""
    order = check_order(order)
    side = energetic.GaussianCovariates(loss, channel, rho=spec.rho, noise=spec.noise, order=order)
    return Problem(side, prior.RidgePrior(spec, float(lam)), alpha)


def check_order(order) -> int:
    """Gauss-Legendre nodes per panel: an int from 1 to :data:`ORDER_MAX`."""
    order = _checks.positive_int(order, "order")
    _checks.at_most(order, ORDER_MAX, "order", f"Gauss-Legendre nodes per panel, 1 to {ORDER_MAX}; "
                    f"the default {energetic.ORDER} already integrates to ~1e-16")
    return order


def _rel(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def solve_point(problem: Problem, *, init=None, tol: float = TOL, max_evaluations: int = 400) -> dict:
    """Solve one point; ``init`` is a packed start (warm start) or None (cold start).

    The driver is :func:`.fixed_point.solve` (hybr): :data:`WARMUP` damped steps from a cold start,
    a first pass to a relative step of :data:`XTOL` (usually a residual far below ``tol``) and,
    only if the residual is still above ``tol``, on from there to :data:`XTOL_FINE`.
    """
    x = problem.start() if init is None else np.asarray(init, dtype=float)
    domain = (FloatingPointError, OverflowError, ZeroDivisionError, ValueError)
    try:
        found = fixed_point.solve(
            problem.image, problem.residual, x, tol=tol, warmup=WARMUP if init is None else 0,
            xtols=(XTOL, XTOL_FINE), retry_xtol=XTOL_FINE, max_evaluations=max_evaluations,
            fatal=(NonConvexLoss,), domain_errors=domain, failures=(*domain, RuntimeError))
    except fixed_point.FixedPointFailure as failure:
        if failure.error is not None:
            V, q, m = problem.unpack(failure.last)
            raise EngineFailure(f"the general engine failed: {failure.error}", last={"V": V, "q": q, "m": m},
                                residual=math.inf, iterations=problem.evaluations) from None
        raise EngineFailure(f"residual {failure.residual:.3g} > tol {tol:g} after {problem.evaluations} "
                            "evaluations", last=failure.point, residual=failure.residual,
                            iterations=problem.evaluations) from None
    return problem.finish(found.point, found.residual)
