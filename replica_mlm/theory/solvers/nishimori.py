"""The Bayes-optimal fixed point on the Nishimori line: one overlap ``q`` and its conjugate.

``q -> q_hat`` (channel side) and ``q_hat -> (q, V)`` (prior side) of :mod:`.bayes_sides`
compose into a map on the single unknown ``x = log(q / V)`` (``V = rho - q``, both kept as their
own mode sums, so that neither is a difference of near-equal numbers), solved by the package's
fixed-point driver (:func:`.fixed_point.solve`, MINPACK's hybr after a few damped steps from the
uninformed start ``q_hat = 0``; from a warm start directly). The residual is the relative
violation of the two prior-side equations, ``max(|q - q'| / q, |V - V'| / V)`` with ``(q', V')``
the prior side at the channel side of ``(q, V)``: ``converged`` is True only when it is at most
:data:`TOL`. See docs/bayes_optimal.md, section "Solving".
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm._base.errors import ConvergenceError
from replica_mlm.theory.solvers import fixed_point

#: residual required for converged=True
TOL = 1e-10
#: damped steps from the cold start
WARMUP = 6
#: the smallest signal-to-noise of the cold start (q_hat = 0 would put q = 0, log(q / V) = -inf)
COLD_Q_HAT = 1e-8


class Problem:
    """The fixed-point map of one point: a Bayes channel side and a Bayes prior side composed at
    ``alpha`` (:class:`.bayes_sides.BayesChannel`, :class:`.bayes_sides.BayesPrior`)."""

    def __init__(self, channel_side, prior_side, alpha: float):
        self.channel_side, self.prior_side, self.alpha = channel_side, prior_side, float(alpha)
        self.rho = prior_side.spec.rho
        self.evaluations = 0

    def unpack(self, x) -> tuple[float, float]:
        t = float(np.ravel(x)[0])
        # q = rho sigmoid(t), V = rho sigmoid(-t), each without cancellation; beyond |t| = 700
        # (alpha ~ 1e-300) exp(|t|) would overflow: there sigmoid(-|t|) = exp(-|t|) to rounding
        if t > 700.0:
            return self.rho / (1.0 + math.exp(-t)), self.rho * math.exp(-t)
        if t < -700.0:
            return self.rho * math.exp(t), self.rho / (1.0 + math.exp(t))
        return self.rho / (1.0 + math.exp(-t)), self.rho / (1.0 + math.exp(t))

    @staticmethod
    def pack(q: float, V: float) -> np.ndarray:
        return np.array([math.log(q) - math.log(V)])

    def q_hat(self, q: float, V: float) -> float:
        self.evaluations += 1
        return self.channel_side.hat(self.alpha, q, V)

    def image(self, x) -> np.ndarray:
        q, V = self.unpack(x)
        if not (q > 0 and V > 0):
            raise FloatingPointError(f"q or V left (0, rho): q={q:.3g}, V={V:.3g}")
        qh = self.q_hat(q, V)
        if not (math.isfinite(qh) and qh >= 0):
            raise FloatingPointError(f"q_hat = {qh} at q = {q:.3g}")
        return self.pack(*self.prior_side.overlaps(qh))

    def start(self) -> np.ndarray:
        return self.pack(*self.prior_side.overlaps(COLD_Q_HAT * self.alpha))

    def residual(self, x) -> tuple[float, dict]:
        q, V = self.unpack(x)
        qh = self.q_hat(q, V)
        q2, V2 = self.prior_side.overlaps(qh)
        res = max(abs(q - q2) / max(q, q2), abs(V - V2) / max(V, V2))
        return res, {"q": q, "V": V, "q_hat": qh}


def solve_point(problem: Problem, *, init=None, tol: float = TOL, max_evaluations: int = 400) -> dict:
    """Solve one point; ``init`` a packed start (warm) or None (cold). ConvergenceError otherwise."""
    x = problem.start() if init is None else np.asarray(init, dtype=float)
    domain = (FloatingPointError, OverflowError, ZeroDivisionError, ValueError)
    try:
        found = fixed_point.solve(problem.image, problem.residual, x, tol=tol,
                                  warmup=WARMUP if init is None else 0, xtols=(1e-13, 1e-15),
                                  retry_xtol=1e-15, max_evaluations=max_evaluations,
                                  domain_errors=domain, failures=(*domain, RuntimeError))
    except fixed_point.FixedPointFailure as failure:
        last = dict(zip(("q", "V"), problem.unpack(failure.best), strict=True))
        raise ConvergenceError(f"the Bayes-optimal fixed point was not reached at alpha = {problem.alpha:g} "
                               f"({failure})", last=last,
                               residual=failure.residual, iterations=problem.evaluations) from None
    point = found.point
    q, V, qh = point["q"], point["V"], point["q_hat"]
    return {
        "q": q, "m": q, "V": V, "q_hat": qh,
        "eg": problem.channel_side.error(q, V),
        "test_loss": problem.channel_side.test_loss(q, V),
        "estimation_error": problem.prior_side.estimation_error(qh),
        "residual": found.residual, "iterations": problem.evaluations, "packed": found.x,
    }


def evolution(problem: Problem, steps: int) -> np.ndarray:
    """State evolution from the uninformed start: ``q_t`` for ``t = 0..steps`` (``q_0 = 0``).

    One step is the channel side then the prior side, ``q_{t+1} = q(q_hat(q_t))``: the overlap
    that AMP's posterior-mean estimate reaches after ``t + 1`` iterations
    (:func:`replica_mlm.learners.amp.amp`).
    """
    qs = [0.0]
    q, V = 0.0, problem.rho
    for _ in range(steps):
        qh = problem.channel_side.hat(problem.alpha, q, V)
        q, V = problem.prior_side.overlaps(qh)
        qs.append(q)
    return np.array(qs)
