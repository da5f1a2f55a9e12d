"""A discrete site as a mixture over its label and its neighbourhood: exact there, Gaussian beyond.

docs/discrete.md, section "Sparse couplings". With sparse couplings the teacher field of site ``i``
is a function of the few sites ``N(i)`` it is coupled to, a discrete variable at any size, and no
Gaussian law of the inputs given the label alone reproduces it. The local data model keeps the
neighbourhood exact: its clusters are ``c = (s_i, s_N(i))``, the label and the neighbourhood's
configuration, with their exact probabilities ``pi_c``; given ``c`` the inputs of the neighbourhood
are the constant ``x_N(c)`` and the rest are Gaussian with the cluster's mean and one pooled
covariance ``S = sum_c pi_c Cov(x | c)`` (zero on the neighbourhood's coordinates). An empty
neighbourhood is the label-only mixture of :mod:`.mixture`.

:func:`cluster_mixture` measures it from weighted samples (exact when they are all configurations
with their Boltzmann probabilities); :meth:`ClusterMixture.bayes_error` is the Bayes error of the
data model, which the validity check compares with the site's true one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks import bayes_error as _bayes

#: a pooled covariance whose smallest eigenvalue on the Gaussian coordinates is below this fraction
#: of its largest is regularised by adding that fraction (as :data:`.mixture.SINGULAR`)
SINGULAR = 1e-10


@dataclass(frozen=True, eq=False)
class ClusterMixture:
    """Clusters ``c`` with weights ``pi_c``, labels ``y_c`` and means ``mu_c``; one pooled covariance.

    Attributes
    ----------
    weights : ndarray (C,)
        ``pi_c`` (positive, summing to one).
    labels : ndarray (C,) of int
        The class of each cluster (the masked site's colour), in ``[0, classes)``.
    configurations : ndarray (C, |N|) of int
        The neighbourhood's colours in each cluster (no columns for an empty neighbourhood).
    means : ndarray (C, d)
        ``E[x | c]``.
    covariance : ndarray (d, d)
        The pooled within-cluster covariance ``S``: zero on the rows and columns of
        ``fixed`` (constant within a cluster), regularised on the others if singular.
    fixed : ndarray of int
        The coordinates of ``x`` that belong to the neighbourhood.
    classes : int
        Number of classes of the label.
    teacher : ndarray (d,) or (d, K)
        The site's teacher (its estimation error is measured against it).
    method : str
        ``"exact"`` or ``"samples"``.
    n_samples : int
        Samples used (0 when exact).
    regularisation : float
        What was added to the diagonal of ``S`` on the Gaussian coordinates (0 if nothing).
    binned : bool
        Whether ``configurations`` are bins of the teacher field rather than the neighbourhood's
        colours (then they cannot be read off the inputs, and nothing is fixed).
    counts : ndarray (C,) or None
        Samples per cluster (None when exact): the sampling noise of a mean adds ``d / n_c`` to its
        squared Mahalanobis norm, which the Bayes error takes off (:mod:`.bayes_error`), as the
        local theory takes ``S / n_c`` off the means' squares (docs/discrete.md, "Sampled cluster
        means").
    states : ndarray (C,) of int or None
        The ordered state of the rest in each cluster when the clusters are split by it
        (:mod:`.rest_states`; a latent variable, not read off the inputs), else None.
    covariances : ndarray (C, d, d) or None
        Each cluster's own covariance ``Cov(x | c)`` (zero on ``fixed``), when asked for
        (``own_covariances=True``): exact when enumerated (their mean under ``pi_c`` is then ``S``
        before it is regularised), from samples the unbiased estimate (divided by ``n_c - 1``); a
        cluster sampled once, or whose samples do not spread, takes the pooled ``S``.
    """

    weights: np.ndarray
    labels: np.ndarray
    configurations: np.ndarray
    means: np.ndarray
    covariance: np.ndarray
    fixed: np.ndarray
    classes: int
    teacher: np.ndarray
    method: str
    n_samples: int
    regularisation: float = 0.0
    binned: bool = False
    counts: np.ndarray | None = None
    states: np.ndarray | None = None
    covariances: np.ndarray | None = None

    @property
    def C(self) -> int:
        """Number of clusters."""
        return self.weights.shape[0]

    @property
    def d(self) -> int:
        """Number of inputs."""
        return self.covariance.shape[0]

    @cached_property
    def free(self) -> np.ndarray:
        """The Gaussian coordinates (those not in :attr:`fixed`)."""
        return np.setdiff1d(np.arange(self.d), self.fixed)

    @cached_property
    def modes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(omega, U)``: eigenvalues and eigenvectors of ``S``, exactly zero on the neighbourhood's
        coordinates (their unit vectors, first) and those of the Gaussian block after them."""
        free, fixed = self.free, self.fixed
        omega_r, u_r = np.linalg.eigh(self.covariance[np.ix_(free, free)])
        U = np.zeros((self.d, self.d))
        U[fixed, np.arange(fixed.size)] = 1.0
        U[np.ix_(free, np.arange(fixed.size, self.d))] = u_r
        return np.concatenate([np.zeros(fixed.size), omega_r]), U

    def sample(self, n: int, *, rng: _checks.RngLike = None, covariance: str = "pooled"
               ) -> tuple[np.ndarray, np.ndarray]:
        """``n`` draws of the data model itself: inputs (n, d) and their clusters (n,); with
        ``covariance="cluster"`` each cluster's own covariance (:attr:`covariances`) instead of the
        pooled one (the data model of the local theory's ``covariance="cluster"``)."""
        n = _checks.positive_int(n, "n")
        own = _checks.choice(covariance, ("pooled", "cluster"), "covariance") == "cluster"
        if own and self.covariances is None:
            raise ValueError("covariance='cluster' needs each cluster's covariance: measure the mixture "
                             "with own_covariances=True (a site's local_mixture_own_covariances)")
        gen = _checks.as_generator(rng)
        _checks.allocation(8 * 3 * n * self.d, f"sample(n={n}) on d = {self.d} inputs")
        clusters = gen.choice(self.C, size=n, p=self.weights)
        if not own:
            omega, U = self.modes
            g = gen.standard_normal((n, self.d)) * np.sqrt(np.clip(omega, 0.0, None))
            return self.means[clusters] + g @ U.T, clusters
        x, free, roots = self.means[clusters].copy(), self.free, self._cluster_roots
        for c in np.unique(clusters):  # each cluster's draws through its covariance's square root
            at = np.flatnonzero(clusters == c)
            x[np.ix_(at, free)] += gen.standard_normal((at.size, free.size)) @ roots[c].T
        return x, clusters

    @cached_property
    def _cluster_roots(self) -> np.ndarray:
        """``U_c sqrt(e_c)`` of each cluster's covariance on the Gaussian coordinates (C, f, f), for
        :meth:`sample` (built once: its ERM checks draw many training sets)."""
        free = self.free
        roots = np.empty((self.C, free.size, free.size))
        for c, S in enumerate(self.covariances):
            e, U = np.linalg.eigh(S[np.ix_(free, free)])
            roots[c] = U * np.sqrt(np.clip(e, 0.0, None))
        return roots

    def bayes_error(self) -> float:
        """The Bayes error of the data model: the error of the best classifier of the label that
        knows the model (:func:`replica_mlm.tasks.bayes_error.cluster_mixture_error`)."""
        return _bayes.cluster_mixture_error(self)

    def __repr__(self) -> str:
        return (f"ClusterMixture(C={self.C}, classes={self.classes}, d={self.d}, "
                f"neighbourhood coordinates={self.fixed.size}, method={self.method!r})")


def cluster_mixture(x, labels, configurations, *, classes: int, fixed, teacher,
                    probabilities=None, binned: bool = False, states=None,
                    own_covariances: bool = False) -> ClusterMixture:
    """Measure the local data model of a site from samples (or all configurations with their
    probabilities).

    Parameters
    ----------
    x : array (n, d)
        Inputs of the site (the other sites' spins, or their reduced colours).
    labels : array (n,) of int
        The masked site's class in each sample, in ``[0, classes)``.
    configurations : array (n, m) of int
        The neighbourhood's colours in each sample (``m = 0`` columns for an empty one).
    classes : int
        Number of classes (>= 2).
    fixed : array of int
        The coordinates of ``x`` the neighbourhood's configuration determines.
    teacher : array
        The site's teacher, kept for the estimation error.
    probabilities : array (n,), optional
        Exact probabilities of the samples (then the moments are exact); None for equally weighted
        independent samples.
    binned : bool
        ``configurations`` are bins of the teacher field (:attr:`ClusterMixture.binned`).
    states : array (n,) of int, optional
        The ordered state of the rest in each sample (:func:`.rest_states.rest_states`): the clusters
        are then (label, configuration, state) (:attr:`ClusterMixture.states`).
    own_covariances : bool
        Also measure each cluster's own covariance (:attr:`ClusterMixture.covariances`; C d^2 numbers).
    """
    x = _checks.finite_array(x, "x", ndim=2)
    n, d = x.shape
    labels = np.asarray(labels)
    configurations = np.asarray(configurations).reshape(n, -1)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers of shape ({n},), got {labels.dtype} {labels.shape}")
    if configurations.shape[0] != n or not (configurations.size == 0
                                            or np.issubdtype(configurations.dtype, np.integer)):
        raise ValueError(f"configurations must be integers with one row per sample ({n}), got "
                         f"{configurations.dtype} {configurations.shape}")
    w = np.full(n, 1.0 / n) if probabilities is None else _checks.finite_array(probabilities, "probabilities",
                                                                                   ndim=1)
    if w.shape != (n,) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError("probabilities must be n >= 0 numbers with a positive sum")
    w = w / w.sum()
    keys = np.concatenate([labels[:, None], configurations], axis=1)
    if states is not None:
        states = np.asarray(states)
        if states.shape != (n,) or not np.issubdtype(states.dtype, np.integer):
            raise ValueError(f"states must be integers of shape ({n},), got {states.dtype} {states.shape}")
        keys = np.concatenate([keys, states[:, None]], axis=1)
    found, cluster = np.unique(keys[w > 0], axis=0, return_inverse=True)
    x, w = x[w > 0], w[w > 0]
    cluster = cluster.ravel()
    weights = np.bincount(cluster, weights=w, minlength=found.shape[0])
    means = np.stack([(w[cluster == c] @ x[cluster == c]) / weights[c] for c in range(found.shape[0])])
    resid = x - means[cluster]
    S = (resid.T * w) @ resid
    S = (S + S.T) / 2
    fixed = np.asarray(fixed, dtype=np.int64)
    S[fixed, :] = 0.0
    S[:, fixed] = 0.0
    free = np.setdiff1d(np.arange(d), fixed)
    reg = 0.0
    if free.size:
        eig = np.linalg.eigvalsh(S[np.ix_(free, free)])
        if eig[0] <= SINGULAR * eig[-1]:
            reg = SINGULAR * eig[-1]
            S[free, free] += reg
    counts = None if probabilities is not None else np.bincount(cluster, minlength=found.shape[0])
    own = _own_covariances(resid, w, cluster, weights, fixed, S, counts) if own_covariances else None
    for arr in (weights, means, S) + ((own,) if own is not None else ()):
        arr.setflags(write=False)
    last = found.shape[1] - (states is not None)
    return ClusterMixture(weights=weights, labels=found[:, 0].astype(np.int64),
                          configurations=found[:, 1:last].astype(np.int64), means=means, covariance=S,
                          fixed=fixed, classes=_checks.positive_int(classes, "classes"),
                          teacher=np.asarray(teacher, dtype=float),
                          method="exact" if probabilities is not None else "samples",
                          n_samples=0 if probabilities is not None else n, regularisation=reg,
                          binned=binned, counts=counts,
                          states=None if states is None else found[:, last].astype(np.int64),
                          covariances=own)


def _own_covariances(resid, w, cluster, weights, fixed, pooled, counts) -> np.ndarray:
    """Each cluster's weighted covariance of the residuals ``resid`` (zero on ``fixed``), unbiased
    when ``counts`` (samples per cluster) are given; a cluster sampled once, or whose samples do not
    spread, takes ``pooled``."""
    C, d = weights.size, resid.shape[1]
    _checks.allocation(8 * C * d * d, f"each cluster's own covariance ({C} clusters, d = {d})")
    out = np.empty((C, d, d))
    for c in range(C):
        r, wc = resid[cluster == c], w[cluster == c]
        S_c = (r.T * (wc / weights[c])) @ r
        if counts is not None:
            if counts[c] < 2:
                out[c] = pooled
                continue
            S_c *= counts[c] / (counts[c] - 1)
        S_c = (S_c + S_c.T) / 2
        S_c[fixed, :] = 0.0
        S_c[:, fixed] = 0.0
        out[c] = S_c if np.trace(S_c) > 0 else pooled
    return out


__all__ = ["ClusterMixture", "cluster_mixture"]
