"""The replica theory of softmax cross-entropy ERM on a q-cluster Gaussian mixture (a Potts site).

docs/multiclass.md, section "The site as a Gaussian mixture". The unknowns are ``V``, ``Q`` (K x K,
Cholesky factors with logarithmic diagonals) and ``M`` (K x q, ``M[:, c] = W^T mu_c``); the channel
side is :mod:`.mixture_classes` (sides), the prior side :func:`.prior.ridge_matrices` on the modes
of the pooled covariance ``S``; the driver and the convergence test (the largest relative violation
of the prior-side equations at most :data:`.multiclass.TOL`) are those of :mod:`.multiclass`.
"""

from __future__ import annotations

import numpy as np

from replica_mlm.theory.sides import mixture_classes, prior
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.solvers import multiclass

#: Gauss-Hermite nodes per dimension of the hats and the test loss, and the finer rule of the check
HERMITE = {1: 64, 2: 20}
#: scrambled Sobol' points (2^m) and scramblings of the error rate: the multi-class side's
EG_M, EG_SCRAMBLINGS = mc.EG_M, mc.EG_SCRAMBLINGS


class MixtureTheory:
    """What the theory reads from a K + 1 class mixture: modes of ``S``, the means per mode, the
    teacher per mode, weights and the simplex basis."""

    def __init__(self, mixture, basis: np.ndarray, p: int) -> None:
        omega, u = np.linalg.eigh(mixture.covariance)
        self.omega = omega
        self.mean_modes = (mixture.means @ u).T  # (d, q): mu_{c,k}
        self.theta = self.mean_modes / omega[:, None]
        teacher = np.asarray(mixture.teacher, dtype=float)
        self.target = u.T @ (teacher if teacher.ndim == 2 else teacher[:, None])
        self.weights = np.asarray(mixture.weights, dtype=float)
        self.P = basis
        self.p = p
        self.q = mixture.K
        self.K = self.q - 1


def solve_point(theory: MixtureTheory, alpha: float, lam: float, *, order: int | None = None,
                init=None) -> dict:
    """One point: the saddle point, the test measures with their integration errors (the test
    loss against a 1.5x finer Gauss-Hermite rule, the error rate over Sobol' scramblings)."""
    K = theory.K
    order = HERMITE.get(K, 12) if order is None else order
    rule = mc.hermite_rule(K, order)
    side = mixture_classes.MixtureClasses(rule, theory.weights, theory.P)
    ridge = prior.RidgeMatrixPrior(theory.omega, theory.theta, theory.p, lam, target=theory.target)
    problem = multiclass.MatrixProblem(side, ridge, multiclass.MatrixPacking(K, theory.q), alpha)
    start = None if init is None else problem.pack(init["V"], init["Q"], init["M"])
    point = multiclass.solve_point(problem, init=start)
    Q, M = point["Q"], point["M"]
    args = {"Q": Q, "M": M, "weights": theory.weights, "P": theory.P}
    tl = mixture_classes.test_loss(rule, **args)
    tl_fine = mixture_classes.test_loss(mc.hermite_rule(K, int(np.ceil(1.5 * order))), **args)
    rates = [mixture_classes.error(mc.sobol_rule(K, EG_M, 1000 + r), **args) for r in range(EG_SCRAMBLINGS)]
    est = ridge.estimation_error(point)
    return {**point, "test_loss": tl, "eg": float(np.mean(rates)), "estimation_error": est,
            "integration_error": {"test_loss": float(abs(tl_fine - tl)),
                                  "eg": float(np.std(rates, ddof=1) / np.sqrt(len(rates)))},
            "iterations": problem.evaluations, "integration": rule.name}


def solve(task, *, alpha: float, lam: float, order: int | None = None, init=None):
    """``rm.solve(task, theory="mixture")`` of a multi-class site with a mixture (a Potts site):
    a :class:`.multiclass.MulticlassSaddlePoint` with ``method="mixture"``, ``M`` of shape (K, q)
    (``W^T mu_c``, one column per class) and ``rho`` the q x q matrix ``theta^T S theta``
    (``theta = S^{-1} mu``, the means' Mahalanobis overlaps)."""
    from replica_mlm._base import checks as _checks

    if task.channel != "softmax":
        raise ValueError(f"theory='mixture' of a multi-class site needs the softmax channel, got "
                         f"{task.channel!r}")
    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.positive(lam, "lam")
    if order is not None:
        order = _checks.positive_int(order, "order")
        _checks.at_most(order, 64, "order", "Gauss-Hermite nodes per dimension, 1 to 64")
    if init is not None and not isinstance(init, multiclass.MulticlassSaddlePoint):
        raise TypeError(f"init must be a MulticlassSaddlePoint, got {type(init).__name__}")
    theory = MixtureTheory(task.mixture, task.basis, task.p)
    start = None if init is None or init.M.shape != (theory.K, theory.q) else {"V": init.V, "Q": init.Q,
                                                                                 "M": init.M}
    out = solve_point(theory, alpha, lam, order=order, init=start)  # ConvergenceError if it fails
    rho = theory.theta.T @ (theory.omega[:, None] * theory.theta)
    return multiclass.MulticlassSaddlePoint(
        alpha=alpha, lam=lam, test_loss=out["test_loss"], eg=out["eg"],
        estimation_error=out["estimation_error"], train_loss=out["train_loss"], Q=out["Q"], M=out["M"],
        V=out["V"], Q_hat=out["Q_hat"], M_hat=out["M_hat"], V_hat=out["V_hat"], rho=rho, converged=True,
        residual=out["residual"], iterations=out["iterations"],
        integration=f"{out['integration']} (test loss checked against 1.5x the nodes; error rate: "
                    f"{EG_SCRAMBLINGS} Sobol' scramblings of 2^{EG_M})",
        integration_error=out["integration_error"], method="mixture")
