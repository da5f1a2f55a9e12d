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


def mixture_problem(mixture, alpha: float, lam: float, loss: Loss, *, order: int = energetic.ORDER
                    ) -> engine.Problem:
    """The problem of one point: :class:`.engine.Problem` with the mixture's two sides
    (:class:`.mixture_side.MixtureClusters`, :class:`.mixture_side.MixturePrior`), solved by
    :func:`.engine.solve_point`."""
    th = mixture if isinstance(mixture, MixtureTheory) else MixtureTheory(mixture)
    if lam <= 0:
        raise ValueError(f"the mixture theory needs lam > 0 (as the general engine), got lam = {lam}")
    side = mixture_side.MixtureClusters(loss, th.weights, order=engine.check_order(order))
    ridge = mixture_side.MixturePrior(th.spectrum, float(lam), th.omega, th.mu_modes, th.target_modes, th.p)
    return engine.Problem(side, ridge, alpha)
