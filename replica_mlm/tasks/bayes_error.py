"""Bayes errors of a discrete site and of the data models its theories replace it with.

docs/discrete.md, section "When a theory holds". The Bayes error is the error of the best
classifier of the label that knows the law of the data, ``E[1 - max_a P(y = a | x)]``. A theory of
ERM on a site is a theory of ERM on its data model; if that model's Bayes error differs from the
site's, the model makes the problem easier (or harder) than it is, and no learning curve drawn from
it can be right at every sample size. Three data models:

* Gaussian equivalence: ``x ~ N(0, Sigma)``, the label from the site's channel on the teacher field
  ``nu = W*^T x + b*`` (:func:`channel_error`);
* the label-only mixture and the local (label x neighbourhood) mixture: clusters ``c`` with
  weights, labels and means, one pooled covariance (:func:`cluster_mixture_error`);

and the site itself (:func:`site_error`), exact over all configurations or estimated with its
standard error from samples.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_softmax, ndtr

#: quasi-Monte Carlo points (2^m) of the expectations in more than one dimension, their scrambling seed
QMC_M, QMC_SEED = 14, 2024
#: Gauss-Hermite nodes of the one-dimensional expectations
HERMITE = 160
#: a squared Mahalanobis distance below this is no distance: the classes are then told apart by
#: their weights alone
TINY = 1e-14


def _normal_points(k: int) -> np.ndarray:
    """Scrambled Sobol' points mapped to ``N(0, I_k)`` (fixed seed: a reproducible rule)."""
    from scipy.stats import norm, qmc  # here, not at import: scipy.stats costs 0.4 s to load

    u = qmc.Sobol(k, scramble=True, seed=QMC_SEED).random_base2(QMC_M)
    return norm.ppf(np.clip(u, 1e-16, 1 - 1e-16))


def _classes_error(log_w: np.ndarray, T: np.ndarray, weights: np.ndarray) -> float:
    """Bayes error of classes with weights ``weights`` (summing to one, logs ``log_w``) whose
    inputs are Gaussian with one covariance and the Mahalanobis Gram matrix ``T`` of their means."""
    k = weights.size
    if k == 1:
        return 0.0
    if k == 2:
        d2 = T[0, 0] + T[1, 1] - 2 * T[0, 1]
        if d2 <= TINY * max(1.0, abs(T[0, 0]) + abs(T[1, 1])):
            return float(1.0 - weights.max())
        d = math.sqrt(d2)
        lr = log_w[0] - log_w[1]
        return float(weights[0] * ndtr(-(lr + d2 / 2) / d) + weights[1] * ndtr(-(-lr + d2 / 2) / d))
    evals, evecs = np.linalg.eigh((T + T.T) / 2)
    root = evecs * np.sqrt(np.clip(evals, 0.0, None))
    z = _normal_points(k) @ root.T
    total = 0.0
    for a in range(k):
        scores = log_w + T[:, a] - np.diag(T) / 2 + z
        total += weights[a] * float(np.mean(np.argmax(scores, axis=1) != a))
    return total


def _states_error(log_w: np.ndarray, T: np.ndarray, weights: np.ndarray, labels: np.ndarray) -> float:
    """Bayes error of Gaussian clusters (one covariance, Mahalanobis Gram matrix ``T``) of which
    several carry one label (the states of :mod:`.rest_states`): the classifier sums each label's
    clusters' posteriors, and errs where the most probable label is not the cluster's."""
    from scipy.special import logsumexp

    found = np.unique(labels)
    if found.size == 1:
        return 0.0
    evals, evecs = np.linalg.eigh((T + T.T) / 2)
    z = _normal_points(weights.size) @ (evecs * np.sqrt(np.clip(evals, 0.0, None))).T
    total = 0.0
    for a in range(weights.size):
        scores = log_w + T[:, a] - np.diag(T) / 2 + z
        per_label = np.stack([logsumexp(scores[:, labels == b], axis=1) for b in found], axis=1)
        total += weights[a] * float(np.mean(found[np.argmax(per_label, axis=1)] != labels[a]))
    return total


def _binned_error(mixture) -> float:
    """Bayes error of a mixture of teacher-field bins: the error of the classifier that knows the
    cluster's bin, ``sum_b (P(b) - max_y P(y, b))``.

    Such a model keeps the law of the label given the teacher field (up to the bins' width) and
    blurs the neighbourhood's configuration into the Gaussian part, so the configuration cannot be
    read off its inputs; a linear student reads only the field. The error from the inputs would
    count that blur (on a contact-map-like band with 9 neighbours: 2.6 times the site's Bayes error,
    where the theory holds within 2.2 SE); the bin oracle's is the site's up to the bins' width.
    """
    joint = np.zeros((int(mixture.configurations.max()) + 1, mixture.classes))
    np.add.at(joint, (mixture.configurations[:, 0], mixture.labels), mixture.weights)
    return float(np.sum(joint.sum(axis=1) - joint.max(axis=1)))


def cluster_mixture_error(mixture) -> float:
    """The Bayes error of a cluster mixture (:class:`.local_mixture.ClusterMixture`).

    The neighbourhood's configuration is read off the inputs exactly; given it, the classes are
    Gaussian with one covariance, and the Bayes error is a function of the Mahalanobis Gram matrix
    of their means (closed form for two classes, scrambled Sobol' points for more). Clusters of
    teacher-field bins cannot be read off the inputs: then the error of the classifier that knows the
    bin (:func:`_binned_error`). Means measured on ``n_c`` samples carry noise whose squared
    Mahalanobis norm is ``d / n_c`` on average (``d`` Gaussian inputs): it is taken off the Gram
    matrix's diagonal, so that noise is not read as separation between the classes.
    """
    if mixture.binned:
        return _binned_error(mixture)
    free = mixture.free
    means = mixture.means[:, free]
    S = mixture.covariance[np.ix_(free, free)]
    gram = means @ np.linalg.solve(S, means.T) if free.size else np.zeros((mixture.C, mixture.C))
    if mixture.counts is not None:  # a sampled mean's noise adds d / n_c to its squared norm
        gram = gram - np.diag(free.size / np.maximum(mixture.counts, 1))
    configs = mixture.configurations
    _, group = np.unique(configs, axis=0, return_inverse=True) if configs.shape[1] else (None, np.zeros(
        mixture.C, dtype=np.int64))
    group = np.asarray(group).ravel()
    total = 0.0
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        w = mixture.weights[idx]
        if mixture.states is None:
            total += w.sum() * _classes_error(np.log(w / w.sum()), gram[np.ix_(idx, idx)], w / w.sum())
        else:
            total += w.sum() * _states_error(np.log(w / w.sum()), gram[np.ix_(idx, idx)], w / w.sum(),
                                             mixture.labels[idx])
    return float(total)


def channel_error(bias: np.ndarray, rho: np.ndarray, P: np.ndarray) -> float:
    """The Bayes error of Gaussian equivalence: the teacher field ``nu ~ N(bias, rho)`` (K dims)
    and ``P(y = a | nu) = softmax(P nu)_a`` (``P``: q x K); Ising (``K = 1``, ``P = (1, -1)^T / 2``
    for the logit channel ``1 / (1 + exp(-y nu))``) by Gauss-Hermite, more classes by Sobol' points."""
    K = rho.shape[0]
    if K == 1:
        x, w = np.polynomial.hermite_e.hermegauss(HERMITE)
        nu = bias[0] + math.sqrt(max(float(rho[0, 0]), 0.0)) * x
        post = np.exp(log_softmax(np.outer(nu, P[:, 0]), axis=1))
        return float(w @ (1.0 - post.max(axis=1)) / math.sqrt(2 * math.pi))
    evals, evecs = np.linalg.eigh((rho + rho.T) / 2)
    nu = bias + _normal_points(K) @ (evecs * np.sqrt(np.clip(evals, 0.0, None))).T
    post = np.exp(log_softmax(nu @ P.T, axis=1))
    return float(np.mean(1.0 - post.max(axis=1)))


def site_error(logits: np.ndarray, probabilities: np.ndarray | None) -> tuple[float, float]:
    """The site's true Bayes error ``E[1 - max_a P(s_i = a | s_-i)]`` from its conditional logits
    (n, q) on all configurations with their ``probabilities`` (exact: standard error 0) or on ``n``
    independent samples (mean and standard error)."""
    miss = 1.0 - np.exp(log_softmax(logits, axis=1)).max(axis=1)
    if probabilities is not None:
        w = probabilities / probabilities.sum()
        return float(w @ miss), 0.0
    n = miss.size
    return float(miss.mean()), float(miss.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf


__all__ = ["channel_error", "cluster_mixture_error", "site_error"]
