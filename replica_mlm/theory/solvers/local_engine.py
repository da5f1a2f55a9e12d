"""The local theory of a discrete site: the replica theory of ERM on its cluster mixture.

docs/discrete.md, section "Sparse couplings". The clusters are the label times the neighbourhood's
configuration (:class:`replica_mlm.tasks.local_mixture.ClusterMixture`); the student's logits on a
sample of cluster ``c`` are ``M_c + Q^(1/2) xi`` with ``M_c = W^T mu_c`` (one column of the K x C
overlap ``M``). The neighbourhood's coordinates are modes of zero variance of the pooled covariance,
so the ridge prior is written in the cluster means (:class:`.prior.RidgeMeansPrior`): there the
estimator is the deterministic ``M_hat a_k / lam``, the finite set of extra order parameters the
neighbourhood adds. Two classes (an Ising site) take any convex loss
(:class:`.local_clusters.LocalClusters`, K = 1); more classes the softmax cross-entropy
(:class:`.mixture_classes.MixtureClasses` with a class per cluster). Both are solved by the
multi-class driver (:func:`.multiclass.solve_point`, residual at most :data:`.multiclass.TOL`): two
classes by Newton's method with the Jacobian both sides give from one evaluation
(:meth:`.local_clusters.LocalClusters.hats_jacobian`, :meth:`.prior.RidgeMeansPrior.overlaps_jacobian`),
more by Anderson mixing.
With ``covariance="cluster"`` (two classes) each cluster keeps its own covariance
(:mod:`.cluster_covariances`: one ``V_c``, ``Q_c`` per cluster, the prior side in the inputs'
coordinates), on the same driver (Anderson mixing, from the pooled theory's point).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.errors import ConvergenceError
from replica_mlm.tasks.potts_site import simplex_basis
from replica_mlm.theory.sides import cluster_covariances, local_clusters, mixture_classes, prior
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.sides.energetic import ORDER
from replica_mlm.theory.solvers import mixture_multiclass, multiclass
from replica_mlm.theory.solvers.mixture_multiclass import EG_M, EG_SCRAMBLINGS

#: Gauss-Hermite nodes per dimension by the number of logit directions K (more clusters than the
#: mixture, so fewer nodes each; the test loss is checked against 1.5x the nodes, and at K = 2 ten
#: nodes move it by 6e-10 from twenty on a q = 3 site with three neighbours)
HERMITE = {1: 32, 2: 10, 3: 6}
#: Anderson's evaluations before the driver's hybr takes over: where a few clusters carry almost
#: all the weight it converges slowly (the ordered 10 x 10 lattice at beta = 0.6, alpha = 1: 1275
#: evaluations; with the multi-class default of 600, hybr from Anderson's best point then failed)
MAX_EVALUATIONS = 3000
#: the values of the route's ``covariance=`` option: one pooled covariance, or each cluster's own
COVARIANCES = ("pooled", "cluster")
#: the error rate's Sobol' points per cluster: 2^m with C 2^m at most 2^EG_TOTAL (C clusters), m in
#: [EG_MIN, EG_M]; the spread over the scramblings is reported as its integration error
EG_TOTAL, EG_MIN = 20, 10


class LocalTheory:
    """What the theory reads from a cluster mixture: the modes of ``S`` (zeros first, on the
    neighbourhood), the means' and the teacher's modes, weights and labels; ``p`` normalises.
    ``own_covariances``: the problem reads each cluster's covariance from ``mixture`` instead."""

    def __init__(self, mixture, p: int, *, own_covariances: bool = False) -> None:
        if own_covariances and mixture.covariances is None:
            raise ValueError("the mixture carries no covariance per cluster: build it with "
                             "own_covariances=True (a site's local_mixture_own_covariances)")
        self.mixture, self.own_covariances = mixture, own_covariances
        omega, U = mixture.modes
        self.omega = omega
        self.means = U.T @ mixture.means.T  # (d, C): a_{k, c}
        teacher = np.asarray(mixture.teacher, dtype=float)
        self.target = U.T @ (teacher if teacher.ndim == 2 else teacher[:, None])
        self.weights = np.asarray(mixture.weights, dtype=float)
        self.labels = np.asarray(mixture.labels)
        self.classes = mixture.classes
        self.p = p
        # sampled means: 1 / n_c, whose noise the prior sides take out of the means' squares
        self.noise = None if mixture.counts is None else 1.0 / np.asarray(mixture.counts, dtype=float)

    @property
    def C(self) -> int:
        return self.weights.size

    @property
    def rho(self) -> np.ndarray:
        """The C x C overlaps ``mu_c . mu_c'`` of the cluster means; of sampled means, less their
        noise ``tr(S_c) / n_c`` on the diagonal (as the prior sides read them; ``S_c`` the pooled
        covariance unless each cluster keeps its own)."""
        rho = self.means.T @ self.means
        if self.noise is not None:
            trace = (np.trace(self.mixture.covariances, axis1=1, axis2=2) if self.own_covariances
                     else float(np.sum(self.omega)))
            rho[np.diag_indices_from(rho)] -= trace * self.noise
        return rho


def problem(theory: LocalTheory, alpha: float, lam: float, loss, order: int) -> multiclass.MatrixProblem:
    """The problem of one point: the channel side of the clusters with the ridge prior on the means."""
    mix = theory.mixture
    if theory.own_covariances:  # each cluster's own covariance (two classes)
        side = cluster_covariances.OwnCovarianceClusters(loss, theory.weights, _signs(theory), order)
        own = cluster_covariances.OwnCovarianceRidge(mix.means, mix.covariances, theory.p, lam,
                                                     np.asarray(mix.teacher, dtype=float), theory.noise)
        return multiclass.MatrixProblem(side, own, cluster_covariances.ClusterPacking(theory.C), alpha)
    ridge = prior.RidgeMeansPrior(theory.omega, theory.means, theory.p, lam, theory.target, theory.noise)
    if theory.classes == 2 and loss is not None:
        side = local_clusters.LocalClusters(loss, theory.weights, _signs(theory), order)
        K = 1
    else:
        K = theory.classes - 1
        side = mixture_classes.MixtureClasses(mc.hermite_rule(K, order), theory.weights,
                                              simplex_basis(theory.classes), theory.labels)
    return multiclass.MatrixProblem(side, ridge, multiclass.MatrixPacking(K, theory.C), alpha)


def _signs(theory: LocalTheory) -> np.ndarray:
    """The clusters' labels as signs of the logit: +1 for colour 0, -1 for colour 1."""
    return np.where(theory.labels == 0, 1.0, -1.0)


def _measures(prob: multiclass.MatrixProblem, point: dict, order: int, scalar: bool) -> dict:
    """Test loss, error and their integration errors at the solution."""
    side, Q, M = prob.channel_side, point["Q"], point["M"]
    if scalar:
        finer = type(side)(side.loss, side.weights, side.signs, order + 8)
        tl = side.test_loss(Q, M)
        return {"test_loss": tl, "eg": side.error(Q, M),
                "integration_error": {"test_loss": abs(finer.test_loss(Q, M) - tl), "eg": 0.0}}
    K = Q.shape[0]
    args = {"Q": Q, "M": M, "weights": side.weights, "P": side.P, "labels": side.labels}
    tl = mixture_classes.test_loss(side.rule, **args)
    tl_fine = mixture_classes.test_loss(mc.hermite_rule(K, int(np.ceil(1.5 * order))), **args)
    m = int(np.clip(EG_TOTAL - np.ceil(np.log2(M.shape[1])), EG_MIN, EG_M))
    rates = [mixture_classes.error(mc.sobol_rule(K, m, 1000 + r), **args) for r in range(EG_SCRAMBLINGS)]
    return {"test_loss": tl, "eg": float(np.mean(rates)),
            "integration_error": {"test_loss": float(abs(tl_fine - tl)),
                                  "eg": float(np.std(rates, ddof=1) / np.sqrt(len(rates)))}}


def _pooled_start(task, prob: multiclass.MatrixProblem, **point) -> tuple[np.ndarray | None, int]:
    """The own-covariance problem's start at the pooled theory's point (every ``V_c``, ``Q_c`` at the
    pooled ``V``, ``Q``; the same ``M``), and the evaluations that took; a cold start (None) if the
    pooled theory fails. Measured on the 4 x 4 lattice's site 0 (beta 0.3, 0.44, 0.6; alpha 1, 2, 4):
    14-19 evaluations from there, 18-443 from a cold start."""
    try:
        pooled = solve(task, **point)
    except ConvergenceError:
        return None, 0
    row = np.ones((1, pooled.M.shape[1]))
    return prob.pack(pooled.V[0, 0] * row, pooled.Q[0, 0] * row, pooled.M), pooled.iterations


def _explain_short_sample(err, theory: LocalTheory, alpha: float) -> None:
    """Re-raise a failed solve of sampled means with the reason when the training set is larger than
    the sample: then taking the means' noise out can leave no positive ``Q`` (docs/discrete.md,
    "Sampled cluster means"); otherwise return and let the caller re-raise."""
    n, sampled = alpha * theory.p, theory.mixture.n_samples
    if theory.noise is None or n <= sampled:
        return
    raise ConvergenceError(f"{err.message}; the training set (alpha p = {n:.0f}) is larger than the "
                           f"{sampled} sampled sequences the cluster means rest on, and with their noise "
                           "taken out the theory needs at least as many: measure the site with "
                           f"masked_site(..., samples={int(np.ceil(n))}) or more (docs/discrete.md, "
                           "\"Sampled cluster means\")", last=err.last, residual=err.residual,
                           iterations=err.iterations) from None


def solve(task, *, alpha: float, lam: float, loss=None, order: int | None = None, init=None,
          covariance: str = "pooled") -> multiclass.MulticlassSaddlePoint:
    """``rm.solve(task, theory="local")``: a :class:`.multiclass.MulticlassSaddlePoint` with
    ``method="local"``, ``M`` of shape (K, C) (``W^T mu_c``, one column per cluster) and ``rho`` the
    C x C overlaps ``mu_c . mu_c'`` of the cluster means. ``loss`` (a Loss) for a two-class site,
    None (the softmax cross-entropy) for more classes; ``init`` a result of the same site to
    warm-start from; ``order``: quadrature nodes per panel (two classes) or Gauss-Hermite nodes per
    dimension (more); ``covariance``: ``"pooled"`` (one covariance beyond the neighbourhood) or
    ``"cluster"`` (each cluster's own, two classes only; then ``V``, ``Q`` and their hats are 1 x C,
    one entry per cluster)."""
    if lam < multiclass.MIN_LAM:
        raise ValueError(f"lam must be >= {multiclass.MIN_LAM:g} for the local theory (as for the "
                         f"multi-class theory, whose driver it shares), got {lam:g}")
    own = _checks.choice(covariance, COVARIANCES, "covariance") == "cluster"
    if own and loss is None:
        raise ValueError("covariance='cluster' is built for a site with two colours (any convex loss); a "
                         "site with more colours takes covariance='pooled'")
    theory = LocalTheory(task.local_mixture_own_covariances if own else task.local_mixture, task.p,
                         own_covariances=own)
    scalar = theory.classes == 2 and loss is not None
    K = 1 if scalar else theory.classes - 1
    # an empty neighbourhood is the label-only mixture: then its rule, so the two theories agree
    table = mixture_multiclass.HERMITE if theory.C <= theory.classes else HERMITE
    order = (ORDER if scalar else table.get(K, 12 if table is not HERMITE else 4)) if order is None else order
    prob = problem(theory, alpha, lam, loss, order)
    start = None
    shape_V = (1, theory.C) if own else (K, K)
    if (isinstance(init, multiclass.MulticlassSaddlePoint) and init.M.shape == (K, theory.C)
            and init.V.shape == shape_V):
        start = prob.pack(init.V, init.Q, init.M)
    before = 0
    if own and start is None:
        start, before = _pooled_start(task, prob, alpha=alpha, lam=lam, loss=loss, order=order)
    # ConvergenceError if it fails (Newton where the sides give their Jacobian, else Anderson; after
    # Anderson, the driver's hybr takes over from its best point)
    method = "newton" if prob.has_jacobian else "anderson"
    try:
        point = multiclass.solve_point(prob, init=start, method=method, max_evaluations=MAX_EVALUATIONS)
    except ConvergenceError as err:
        _explain_short_sample(err, theory, alpha)
        raise
    meas = _measures(prob, point, order, scalar)
    return multiclass.MulticlassSaddlePoint(
        alpha=alpha, lam=lam, test_loss=meas["test_loss"], eg=meas["eg"],
        estimation_error=prob.prior_side.estimation_error(point), train_loss=point["train_loss"],
        Q=point["Q"], M=point["M"], V=point["V"], Q_hat=point["Q_hat"], M_hat=point["M_hat"],
        V_hat=point["V_hat"], rho=theory.rho, converged=True, residual=point["residual"],
        iterations=before + prob.evaluations, integration=("Gauss-Legendre panels" if scalar else
                                                  f"Gauss-Hermite {order}^{K}; error rate: {EG_SCRAMBLINGS} "
                                                  "Sobol' scramblings"),
        integration_error=meas["integration_error"], method="local")
