"""Helpers of the tests of the local theory (tests/test_local_theory.py, tests/test_validity.py):
small sparse and dense models, and ERM on data drawn from a cluster mixture built with known
moments (the simulation side, written without the theory's code).

:func:`constructed` builds a :class:`replica_mlm.tasks.local_mixture.ClusterMixture` by hand: a
label and a neighbourhood of ``m`` sites (``q`` colours each, one-hot reduced by the simplex basis
for ``q > 2``, the spin for ``q = 2``), weights from a small Potts energy of the label and the
neighbourhood, cluster means of norm O(1) (O(1/sqrt(d)) per coordinate) beyond the neighbourhood,
and a Wishart pooled covariance there (:func:`with_own_covariances` gives each cluster its own).
:func:`erm_point` fits the package's objective
``sum_mu loss + (lam p / 2)|W|_F^2`` (``n = alpha p``) on ``mixture.sample(n)`` (with each cluster's
own covariance where the mixture has them) and measures each fit
exactly under the mixture (its logits are Gaussian given the cluster), then averages over seeds.
"""

from __future__ import annotations

import dataclasses
import itertools
import types

import numpy as np
from scipy.special import log_softmax, ndtr
from scipy.stats import multivariate_normal

import replica_mlm as rm
from replica_mlm.learners import logistic
from replica_mlm.tasks.local_mixture import ClusterMixture, cluster_mixture
from replica_mlm.tasks.potts_site import simplex_basis


def constructed(*, d: int = 400, q: int = 2, m: int = 3, coupling: float = 0.6, seed: int = 0,
                mean_scale: float = 1.0) -> ClusterMixture:
    """A cluster mixture with known moments on ``d`` inputs (see the module docstring)."""
    gen = np.random.default_rng(seed)
    K = 1 if q == 2 else q - 1
    basis = np.array([[1.0], [-1.0]]) if q == 2 else simplex_basis(q)
    fixed = np.sort(gen.choice(d // K, size=m, replace=False))
    fixed = np.array([k * K + r for k in fixed for r in range(K)], dtype=np.int64)
    free = np.setdiff1d(np.arange(d), fixed)
    colour_pair = gen.normal(size=(q, q))  # a random colour matrix couples the label and each neighbour
    configs = np.array(list(itertools.product(range(q), repeat=m)), dtype=np.int64)
    keys = [(y, cfg) for y in range(q) for cfg in configs]
    energy = np.array([coupling * sum(colour_pair[y, s] for s in cfg) + 0.2 * colour_pair[y, y]
                       for y, cfg in keys])
    weights = np.exp(energy - energy.max())
    weights /= weights.sum()
    label_dirs = gen.normal(size=(q, free.size)) * mean_scale / np.sqrt(free.size)
    site_dirs = gen.normal(size=(m, q, free.size)) * 0.5 * mean_scale / np.sqrt(free.size)
    means = np.zeros((len(keys), d))
    for c, (y, cfg) in enumerate(keys):
        means[c, fixed] = basis[cfg].ravel()
        means[c, free] = label_dirs[y] + sum(site_dirs[j, s] for j, s in enumerate(cfg))
    X = gen.normal(size=(3 * free.size, free.size))
    S = np.zeros((d, d))
    S[np.ix_(free, free)] = X.T @ X / X.shape[0]
    teacher = np.zeros((d, K))
    centred = label_dirs - label_dirs.mean(axis=0)
    teacher[free] = np.linalg.solve(S[np.ix_(free, free)], centred.T) @ basis
    teacher[fixed] = gen.normal(size=(fixed.size, K))
    return ClusterMixture(weights=weights, labels=np.array([y for y, _ in keys]),
                          configurations=np.array([cfg for _, cfg in keys], dtype=np.int64),
                          means=means, covariance=S, fixed=fixed, classes=q,
                          teacher=teacher[:, 0] if q == 2 else teacher, method="exact", n_samples=0)


def boltzmann_draws(model: rm.PottsModel, n: int, seed: int) -> np.ndarray:
    """``n`` independent sequences of an enumerable model, drawn from its exact Boltzmann law (no
    Markov chain)."""
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    return seqs[np.random.default_rng(seed).choice(len(prob), size=n, p=prob / prob.sum())]


def mixture_of_draws(task, draws: np.ndarray, *, own: bool = False) -> ClusterMixture:
    """The local mixture of ``task``'s site measured on ``draws`` (its counts those of the draws), as
    the site measures it on its sampler's sequences; ``own``: each cluster's covariance too."""
    site = task._site
    return cluster_mixture(task._inputs(draws, None), draws[:, site].astype(np.int64),
                           draws[:, list(task.neighbourhood)], classes=task._model.q,
                           fixed=task.local_mixture.fixed, teacher=task.teacher, own_covariances=own)


def as_task(mixture: ClusterMixture, p: int) -> types.SimpleNamespace:
    """What :func:`replica_mlm.theory.solvers.local_engine.solve` reads of a task."""
    return types.SimpleNamespace(local_mixture=mixture, local_mixture_own_covariances=mixture, p=p)


def with_own_covariances(mixture: ClusterMixture, *, seed: int = 0) -> ClusterMixture:
    """``mixture`` with a covariance per cluster: the pooled one scaled by a factor in [0.3, 2.5]
    and a spike of variance up to 3 along the cluster's own mean beyond the neighbourhood (zero on
    the neighbourhood's coordinates); the pooled ``covariance`` becomes their mean under the weights."""
    gen = np.random.default_rng(seed)
    free = mixture.free
    covs = np.zeros((mixture.C, mixture.d, mixture.d))
    for c in range(mixture.C):
        u = np.zeros(mixture.d)
        u[free] = mixture.means[c, free] / np.linalg.norm(mixture.means[c, free])
        covs[c] = gen.uniform(0.3, 2.5) * mixture.covariance + gen.uniform(0.0, 3.0) * np.outer(u, u)
    return dataclasses.replace(mixture, covariance=np.einsum("c,cij->ij", mixture.weights, covs),
                               covariances=covs)


def _binary_measures(mixture: ClusterMixture, w: np.ndarray, nodes: tuple) -> tuple[float, float]:
    signs = np.where(mixture.labels == 0, 1.0, -1.0)
    mean = mixture.means @ w
    sd = (np.full(mixture.C, np.sqrt(w @ mixture.covariance @ w)) if mixture.covariances is None
          else np.sqrt(np.einsum("i,cij,j->c", w, mixture.covariances, w)))
    err = float(mixture.weights @ ndtr(-signs * mean / sd))
    x, gw = nodes
    z = signs[:, None] * (mean[:, None] + sd[:, None] * x[None, :])
    loss = np.logaddexp(0.0, -z) @ gw / np.sqrt(2 * np.pi)
    return err, float(mixture.weights @ loss)


def _multi_measures(mixture: ClusterMixture, W: np.ndarray, P: np.ndarray,
                    nodes: tuple) -> tuple[float, float]:
    mean = mixture.means @ W  # (C, K)
    Q = W.T @ mixture.covariance @ W
    chol = np.linalg.cholesky(Q)
    x, gw = nodes
    grid = np.array(list(itertools.product(x, repeat=W.shape[1])))
    gwt = np.prod(np.array(list(itertools.product(gw, repeat=W.shape[1]))), axis=1) / (2 * np.pi) ** (
        W.shape[1] / 2)
    err = loss = 0.0
    q = P.shape[0]
    for c, (y, pi) in enumerate(zip(mixture.labels, mixture.weights, strict=True)):
        h = mean[c] + grid @ chol.T
        loss += pi * float(gwt @ -log_softmax(h @ P.T, axis=1)[:, y])
        D = np.array([P[y] - P[b] for b in range(q) if b != y])  # class y wins: D h > 0
        win = multivariate_normal(mean=-D @ mean[c], cov=D @ Q @ D.T).cdf(np.zeros(q - 1))
        err += pi * (1.0 - float(win))
    return err, loss


def _sklearn_fit(x: np.ndarray, y: np.ndarray, P: np.ndarray, reg: float) -> tuple[np.ndarray, float]:
    """The q-class fit by scikit-learn (``C = 1 / reg``, no intercept; ``W = coef^T P``: the
    penalised coefficients sum to zero over the classes), polished by three Newton steps and
    certified by the KKT residual of the package's objective ``sum CE(y, P W^T x) + (reg / 2)|W|^2``
    (the package's Newton fitter builds a (dK)^2 Hessian by einsum: about 40 s per fit at d = 400)."""
    from scipy.special import softmax
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=1.0 / reg, fit_intercept=False, tol=1e-12, max_iter=20000)
    clf.fit(x, y)
    W = clf.coef_.T @ P
    d, K = W.shape
    for _ in range(3):  # Newton steps from there, the Hessian's K^2 blocks by matrix products
        s = softmax(x @ W @ P.T, axis=1)
        grad = x.T @ (s @ P - P[y]) + reg * W
        sp = s @ P
        A = np.einsum("nc,ca,cb->nab", s, P, P) - sp[:, :, None] * sp[:, None, :]
        H = np.zeros((d, K, d, K))
        for a in range(K):
            for b in range(K):
                H[:, a, :, b] = (x.T * A[:, a, b]) @ x
        H = H.reshape(d * K, d * K) + reg * np.eye(d * K)
        W = W - np.linalg.solve(H, grad.ravel()).reshape(d, K)
    grad = x.T @ (softmax(x @ W @ P.T, axis=1) @ P - P[y]) + reg * W
    return W, float(np.max(np.abs(grad)) / (1.0 + reg * np.max(np.abs(W))))


def erm_point(mixture: ClusterMixture, p: int, alpha: float, lam: float, seeds, *,
              kkt_tol: float = 1e-8) -> dict:
    """Mean and standard error over ``seeds`` of the fitted estimator's classification error, test
    loss (logistic, or cross-entropy for more classes) and ``|W - teacher|_F^2``."""
    n = round(alpha * p)
    q = mixture.classes
    P = logistic.BINARY_BASIS if q == 2 else simplex_basis(q)
    nodes = np.polynomial.hermite_e.hermegauss(60 if q == 2 else 30)
    rows = []
    covariance = "pooled" if mixture.covariances is None else "cluster"  # the mixture's own data model
    for s in seeds:
        x, clusters = mixture.sample(n, rng=s, covariance=covariance)
        y = mixture.labels[clusters]
        W, kkt = logistic.fit(x, y, P, lam * p) if q == 2 else _sklearn_fit(x, y, P, lam * p)
        assert kkt <= kkt_tol, f"fit not converged: KKT {kkt:.3g}"
        if q == 2:
            w = W[:, 0]  # logits (z/2, -z/2) with z = w.x: the logistic loss of y = +-1 on w.x
            err, loss = _binary_measures(mixture, w, nodes)
            est = float(np.sum((w - mixture.teacher) ** 2))
        else:
            err, loss = _multi_measures(mixture, W, P, nodes)
            est = float(np.sum((W - mixture.teacher) ** 2))
        rows.append((err, loss, est))
    a = np.array(rows)
    out = {}
    for k, name in enumerate(("eg", "test_loss", "estimation_error")):
        out[name] = float(a[:, k].mean())
        out[name + "_se"] = float(a[:, k].std(ddof=1) / np.sqrt(a.shape[0]))
    return out


def ring(L: int) -> np.ndarray:
    J = np.zeros((L, L))
    for i in range(L):
        J[i, (i + 1) % L] = J[(i + 1) % L, i] = 1.0
    return J


def square_lattice(side: int) -> np.ndarray:
    """Periodic side x side square lattice, unit ferromagnetic couplings."""
    L = side * side
    J = np.zeros((L, L))
    for r in range(side):
        for c in range(side):
            i = r * side + c
            for j in (r * side + (c + 1) % side, ((r + 1) % side) * side + c):
                J[i, j] = J[j, i] = 1.0
    return J


def dense(L: int, seed: int = 0) -> np.ndarray:
    gen = np.random.default_rng(seed)
    A = gen.normal(size=(L, L)) / np.sqrt(L)
    J = (A + A.T) / np.sqrt(2)
    np.fill_diagonal(J, 0.0)
    return J


def potts3(L: int = 7, beta: float = 0.8) -> rm.PottsModel:
    """A q = 3 Potts ring with a random symmetric colour matrix."""
    gen = np.random.default_rng(5)
    U = gen.normal(size=(3, 3))
    return rm.PottsModel(couplings=ring(L), colours=(U + U.T) / 2, beta=beta)
