"""The replica theory of ERM on a two-cluster Gaussian mixture: the general engine with the
mixture's channel side.

docs/discrete.md, section "The replica theory of the mixture". The unknowns, the fixed-point map,
the driver (MINPACK's hybr after damped warm-up steps) and the residual (the largest relative
violation of the six raw equations; ``converged`` only if it is at most :data:`.engine.TOL`) are
those of :mod:`.engine`; only the channel side differs (:mod:`.mixture_side`: the label is the
cluster, the student's field on class ``y`` is ``y m + sqrt(q) xi``), and the prior side is the
ridge prior on the modes of the pooled covariance ``S`` with ``theta = S^{-1} mu``.
"""

from __future__ import annotations

import numpy as np

from replica_mlm import _checks
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import energetic, mixture_side
from replica_mlm.theory.sides.losses import Loss
from replica_mlm.theory.solvers import engine


class MixtureTheory:
    """What the theory reads from a two-cluster mixture: the modes of ``S``, the half-difference of
    the means ``mu = (mu_0 - mu_1) / 2`` in its eigenbasis, the weights and the teacher's modes.

    The two clusters are taken at ``+-mu`` about the mixture's centre (exact for an Ising site
    without fields, whose means are opposite by the spin-flip symmetry; the fit has no intercept).
    """

    def __init__(self, mixture) -> None:
        if mixture.K != 2:
            raise ValueError(f"the mixture theory of a scalar site needs K = 2 classes, got K = {mixture.K}")
        omega, u = np.linalg.eigh(mixture.covariance)
        mu = (mixture.means[0] - mixture.means[1]) / 2.0
        self.p = mixture.p
        self.weights = tuple(float(x) for x in mixture.weights)
        self.omega = omega
        self.mu_modes = u.T @ mu
        self.target_modes = u.T @ np.asarray(mixture.teacher, dtype=float)
        theta = self.mu_modes / omega
        self.spectrum = Spectrum(omega=omega, bulk=np.full(self.p, 1.0 / self.p), teacher=theta**2, noise=0.0)


class MixtureProblem(engine.Problem):
    """The fixed-point map of one (mixture, alpha, lam, loss) point: :class:`.engine.Problem` with the
    mixture's channel side."""

    def __init__(self, theory: MixtureTheory, alpha: float, lam: float, loss: Loss, *,
                 order: int = energetic.ORDER) -> None:
        if lam <= 0:
            raise ValueError(f"the mixture theory needs lam > 0 (as the general engine), got lam = {lam}")
        _checks.at_most(alpha, engine.ALPHA_MAX, "alpha", f"0 < alpha <= {engine.ALPHA_MAX:g}")
        order = _checks.positive_int(order, "order")
        _checks.at_most(order, engine.ORDER_MAX, "order",
                        f"Gauss-Legendre nodes per panel, 1 to {engine.ORDER_MAX}")
        self.theory = theory
        self.spec, self.alpha, self.lam = theory.spectrum, float(alpha), float(lam)
        self.loss, self.channel, self.order = loss, None, order
        self.rho, self.noise = self.spec.rho, 0.0
        self.signal = self.rho > 0
        self.evaluations = 0
        self._memo = {}

    def hats(self, V: float, q: float, m: float) -> dict[str, float]:
        key = (V, q, m)
        out = self._memo.get(key)
        if out is None:
            self.evaluations += 1
            out = mixture_side.hats(self.loss, alpha=self.alpha, V=V, q=q, m=m, weights=self.theory.weights,
                                    order=self.order)
            if not self.signal:
                out["m_hat"] = 0.0
            if len(self._memo) >= engine.MEMO:
                del self._memo[next(iter(self._memo))]
            self._memo[key] = out
        return dict(out)

    def finish(self, point: dict, residual: float) -> dict:
        th = self.theory
        V, q, m = point["V"], point["q"], point["m"]
        train = point["train_loss"] * (2.0 if self.loss.is_square else 1.0)
        est = mixture_side.estimation_error(th.omega, th.mu_modes, th.target_modes, th.p, self.lam,
                                            point["V_hat"], point["q_hat"], point["m_hat"])
        return {**point, "train_loss": train, "eg": mixture_side.error(q=q, m=m),
                "test_loss": mixture_side.test_loss(self.loss, q=q, m=m, weights=th.weights,
                                                    order=self.order),
                "estimation_error": est,
                "kappa": self.lam / point["V_hat"] if point["V_hat"] > 0 else float("inf"),
                "residual": residual, "iterations": self.evaluations, "packed": self.pack(V, q, m)}


def solve_point(mixture, alpha: float, lam: float, loss: Loss, *, init=None,
                order: int = energetic.ORDER) -> dict:
    """Solve one point (``init``: packed unknowns to start from, or None); :class:`.engine.EngineFailure`
    if the residual stays above :data:`.engine.TOL`."""
    theory = mixture if isinstance(mixture, MixtureTheory) else MixtureTheory(mixture)
    problem = MixtureProblem(theory, alpha, lam, loss, order=order)
    out = engine.solve_point(problem, init=init)
    out["rho"] = problem.rho
    return out
