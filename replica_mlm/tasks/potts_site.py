"""One site of a Potts model with q > 2 colours as a multi-class learning task.

The conditional of site ``i`` of the generalised Potts model is a softmax over its ``q`` colours,

    P(s_i = a | s_-i) = softmax_a( beta sum_{j != i} J_ij U_{a s_j} ),

so masked language modelling with factored attention at that site (its pseudo-likelihood) is
multinomial logistic regression of the colour ``s_i`` on the colours of the other sites. This module
writes it in the reduced coordinates the multi-class replica theory uses (docs/multiclass.md):

* ``P`` (q x K, ``K = q - 1``) is an orthonormal basis of the complement of the all-ones vector
  (:func:`simplex_basis`); the input of site ``j`` is ``x_j = P^T e_{s_j}`` minus its mean, so
  ``x`` has ``d = p K`` centred components, ``p = L - 1``;
* the teacher's logits are ``P nu`` with ``nu = W*^T x + b*`` and, block by block,
  ``W*_j = beta J_ij P^T U P`` (d x K); ``b* = P^T (beta / q) (sum_j J_ij) U 1 + W*^T E[P^T e]``
  collects what the centring and the all-ones components leave (zero when all colours are alike,
  ``U = c I + c' 1 1^T``, whose marginals are uniform);
* the student's logits are ``P W^T x`` (no bias): a softmax is unchanged by a common shift of the
  logits, and the ridge penalty sets the all-ones class direction of an unreduced fit to zero, so
  the q-class fit and the K-direction fit are the same estimator with ``|W|_F = |B|_F``.

:class:`PottsSite` holds ``Sigma = Cov(x)``, ``W*``, ``b*`` and the normalisation ``p``;
:func:`colour_covariance` measures ``E[x]`` and ``Cov(x)`` exactly by enumeration or from the
sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.tasks.local_site import DiscreteSite

#: largest number of sequences ``q**L`` enumerated exactly
EXACT_MAX_STATES = 2**22
#: label channels of a :class:`PottsSite`
CHANNELS = ("softmax", "gaussian")


def simplex_basis(q: int) -> np.ndarray:
    """An orthonormal basis (q x (q - 1), Helmert) of the vectors orthogonal to ``(1, ..., 1)``.

    Column ``k - 1`` is ``(1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1))`` with ``k`` ones.
    """
    q = _checks.positive_int(q, "q")
    if q < 2:
        raise ValueError(f"q must be >= 2 colours, got {q}")
    basis = np.zeros((q, q - 1))
    for k in range(1, q):
        basis[:k, k - 1] = 1.0
        basis[k, k - 1] = -float(k)
        basis[:, k - 1] /= math.sqrt(k * (k + 1))
    return basis


class PottsSite:
    """Multi-class Gaussian-covariate task: ``x ~ N(0, Sigma)`` in R^d, teacher field ``nu = W*^T x + b*``.

    Parameters
    ----------
    covariance : array (d, d)
        Symmetric positive-definite ``Sigma``.
    teacher : array (d, K)
        ``W*``; ``K = q - 1`` logit directions for the softmax channel.
    p : int
        Normalisation of the conventions (``alpha = M / p``, ridge ``(lam p / 2) |W|_F^2``):
        the number of unmasked sites ``L - 1`` for a Potts site.
    bias : array (K,), optional
        ``b*`` (default zero).
    noise : float
        Label noise variance of the gaussian channel (0 for softmax).
    channel : {"softmax", "gaussian"}
        ``P(y = a | nu) = softmax(P nu + 0)_a`` over ``q = K + 1`` classes, or the vector label
        ``y = nu + sqrt(noise) eps`` in R^K.
    symmetric : bool
        Whether the task is invariant under the colour permutations (the standard Potts model):
        then every order parameter is a multiple of the identity and the solver uses three
        scalar unknowns. Checked: ``Sigma`` must be ``A kron I_K`` and ``W* = w kron I_K`` up
        to 1e-9 relative, and ``b* = 0``.
    """

    def __init__(self, *, covariance, teacher, p: int, bias=None, noise: float = 0.0,
                 channel: str = "softmax", symmetric: bool = False) -> None:
        self.covariance = _checks.positive_definite(covariance, "covariance")
        _checks.not_vanishing(self.covariance, "covariance")
        self.teacher = _checks.finite_array(teacher, "teacher", ndim=2)
        d, K = self.teacher.shape
        if d != self.covariance.shape[0]:
            raise ValueError(f"teacher has {d} rows but covariance is {self.covariance.shape}: "
                             "they must match")
        if K < 1:
            raise ValueError("teacher must have at least one column (K = q - 1 >= 1)")
        self.p = _checks.positive_int(p, "p")
        self.bias = (np.zeros(K) if bias is None else _checks.finite_array(bias, "bias", ndim=1))
        if self.bias.shape != (K,):
            raise ValueError(f"bias must have shape (K,) = ({K},), got {self.bias.shape}")
        self.noise = _checks.nonnegative(noise, "noise")
        self.channel = _checks.choice(channel, CHANNELS, "channel")
        if self.channel == "softmax" and self.noise != 0:
            raise ValueError(f"the softmax channel has no extra label noise: noise must be 0, got {noise}")
        self.symmetric = _checks.flag(symmetric, "symmetric")
        if self.symmetric:
            self._check_symmetric()
        for arr in (self.covariance, self.teacher, self.bias):
            arr.setflags(write=False)

    def _check_symmetric(self) -> None:
        d, K = self.teacher.shape
        if d % K or np.any(self.bias):
            raise ValueError("symmetric=True needs d = p K and a zero bias")
        blocks = self.covariance.reshape(d // K, K, d // K, K)
        a = np.einsum("jaka->jk", blocks) / K
        want = np.einsum("jk,ab->jakb", a, np.eye(K)).reshape(d, d)
        tw = self.teacher.reshape(d // K, K, K)
        w = np.einsum("jaa->j", tw) / K
        want_w = np.einsum("j,ab->jab", w, np.eye(K)).reshape(d, K)
        for got, ref, name in ((self.covariance, want, "covariance"), (self.teacher, want_w, "teacher")):
            scale = max(float(np.max(np.abs(ref))), 1e-300)
            if np.max(np.abs(got - ref)) > 1e-9 * scale:
                raise ValueError(f"symmetric=True needs the {name} to be (its block traces) kron I_K")

    def __repr__(self) -> str:
        return (f"PottsSite(d={self.d}, K={self.K}, p={self.p}, channel={self.channel!r}, "
                f"symmetric={self.symmetric})")

    @property
    def default_loss(self) -> str:
        """``"cross_entropy"`` with the softmax channel, ``"square"`` with the gaussian one: the
        pairs its multi-class theory solves (:class:`~replica_mlm.tasks.protocol.Task`)."""
        return "cross_entropy" if self.channel == "softmax" else "square"

    @property
    def d(self) -> int:
        """Input dimension ``p K``."""
        return self.covariance.shape[0]

    @property
    def K(self) -> int:
        """Logit directions (``q - 1`` for the softmax channel)."""
        return self.teacher.shape[1]

    @property
    def q(self) -> int:
        """Classes of the softmax channel, ``K + 1``."""
        return self.K + 1

    @cached_property
    def basis(self) -> np.ndarray:
        """``P`` (q x K): :func:`simplex_basis`."""
        return simplex_basis(self.q)

    @cached_property
    def modes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(omega, theta)``: eigenvalues of Sigma (d,) and teacher rows in its eigenbasis (d, K)."""
        omega, u = np.linalg.eigh(self.covariance)
        return omega, u.T @ self.teacher

    @property
    def rho(self) -> np.ndarray:
        """``W*^T Sigma W*`` (K x K)."""
        return self.teacher.T @ self.covariance @ self.teacher

    def sample(self, n: int, *, rng: _checks.RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` Gaussian inputs (n, d) and labels: classes in [0, q) (softmax) or vectors (n, K)."""
        from scipy.special import softmax

        n = _checks.positive_int(n, "n")
        gen = _checks.as_generator(rng)
        _checks.allocation(8 * (3 * n * self.d + 3 * n * self.q), f"sample(n={n}) in d = {self.d}")
        omega, u = np.linalg.eigh(self.covariance)
        x = (gen.standard_normal((n, self.d)) * np.sqrt(np.clip(omega, 0, None))) @ u.T
        nu = x @ self.teacher + self.bias
        if self.channel == "gaussian":
            return x, nu + math.sqrt(self.noise) * gen.standard_normal(nu.shape)
        prob = softmax(nu @ self.basis.T, axis=1)
        cum = np.cumsum(prob, axis=1)
        y = np.minimum((gen.random(n)[:, None] > cum).sum(axis=1), self.q - 1)
        return x, y


@dataclass(frozen=True)
class ColourCovariance:
    """Mean and covariance of the reduced one-hot inputs ``x_j = P^T e_{s_j}`` of all L sites.

    Attributes
    ----------
    mean : ndarray (L, K)
    covariance : ndarray (L K, L K)
        Site-major: rows ``j K : (j + 1) K`` belong to site ``j``.
    method : str
        ``"exact"`` (enumeration of all ``q**L`` sequences) or the sampler's method.
    n_samples : int
        Sequences used (0 when exact).
    symmetrised : bool
        Whether the colour symmetry of the model was imposed (mean zero, blocks ``c_jk I_K``).
    sequences : ndarray (n_samples, L) or None
        The sampled colour sequences (None when exact): a site's Gaussian mixture
        (:attr:`ModelPottsSite.mixture`) is measured on them.
    """

    mean: np.ndarray
    covariance: np.ndarray
    method: str
    n_samples: int
    symmetrised: bool
    sequences: np.ndarray | None = None


def all_colours_alike(model) -> bool:
    """True if ``U = c I + c' 1 1^T`` exactly: the model is invariant under every colour permutation."""
    U = model.colours
    q = U.shape[0]
    off = U[~np.eye(q, dtype=bool)]
    return bool(np.all(np.diag(U) == U[0, 0]) and np.all(off == off[0]))


def colour_covariance(model, *, samples: int = 20000, rng: _checks.RngLike = 0,
                      exact: bool | None = None, progress: bool | None = None) -> ColourCovariance:
    """``E[x]`` and ``Cov(x)`` of the reduced one-hot colours of a Potts model.

    Exact by enumeration when ``q**L <= 2**22`` (default), else from ``samples`` sequences of
    ``model.sample(method="auto")``. When every colour is alike (:func:`all_colours_alike`) the
    symmetry is imposed: the mean is exactly zero and each block is replaced by its trace over K
    times the identity (the symmetric part of a sampled estimate).
    """
    q, L = model.q, model.L
    P = simplex_basis(q)
    K = q - 1
    # checked whether or not the sampler runs: a bad value is an error also for exact enumeration
    samples = _checks.positive_int(samples, "samples")
    _checks.as_generator(rng)
    if exact is None:
        exact = q**L <= EXACT_MAX_STATES
    exact = _checks.flag(exact, "exact")
    if exact:
        if q**L > EXACT_MAX_STATES:
            raise ValueError(f"exact enumeration needs q**L <= 2**22, got {q}**{L}")
        seqs = model.all_sequences()
        prob = model.boltzmann_probabilities()
        method, n = "exact", 0
    else:
        from replica_mlm.tasks.ising_site import equilibrium_sample

        seqs, diag = equilibrium_sample(model, samples, rng, what="colour covariance", progress=progress)
        prob = np.full(seqs.shape[0], 1.0 / seqs.shape[0])
        method, n = diag.method, samples
    x = P[seqs].reshape(seqs.shape[0], L * K)  # (n, L K), site-major
    mean = prob @ x
    cov = (x * prob[:, None]).T @ x - np.outer(mean, mean)
    sym = all_colours_alike(model)
    if sym:
        mean = np.zeros_like(mean)
        cov = (x * prob[:, None]).T @ x
        blocks = cov.reshape(L, K, L, K)
        a = np.einsum("jaka->jk", blocks) / K
        cov = np.einsum("jk,ab->jakb", a, np.eye(K)).reshape(L * K, L * K)
    cov = (cov + cov.T) / 2
    return ColourCovariance(mean=mean.reshape(L, K), covariance=cov, method=method, n_samples=n,
                            symmetrised=sym, sequences=None if exact else np.asarray(seqs, dtype=np.int16))


def teacher_of(model, i: int) -> tuple[np.ndarray, np.ndarray]:
    """``W*`` ((L - 1) K x K, site-major) of site ``i`` and the constant ``P^T (beta/q)(sum_j J_ij) U 1``."""
    q, L = model.q, model.L
    P = simplex_basis(q)
    keep = np.arange(L) != i
    core = P.T @ model.colours @ P  # K x K, symmetric
    W = model.beta * model.couplings[i, keep][:, None, None] * core[None]
    const = P.T @ model.colours @ np.ones(q) * (model.beta / q) * float(model.couplings[i].sum())
    return W.reshape(-1, q - 1), const


def potts_site(model, i: int, covariance: ColourCovariance, *, neighbours=None) -> PottsSite:
    """Site ``i`` of a Potts model (any q >= 2) as a :class:`PottsSite` with the softmax channel.

    ``Sigma`` is the covariance of the other sites' reduced colours, ``W*`` from
    :func:`teacher_of`, ``b* = const + W*^T E[x_-i]`` so that ``P(s_i | s_-i) =
    softmax(P (W*^T (x_-i - E x_-i) + b*))`` exactly. ``neighbours`` overrides the rule of its
    neighbourhood (:func:`replica_mlm.tasks.neighbourhood.neighbourhood`).
    """
    from replica_mlm._base.checks import site_index

    L, K = model.L, model.q - 1
    i = site_index(i, L)
    keep = np.repeat(np.arange(L) != i, K)
    sigma = covariance.covariance[np.ix_(keep, keep)]
    W, const = teacher_of(model, i)
    bias = const + W.T @ covariance.mean[np.arange(L) != i].ravel()
    sym = covariance.symmetrised
    if sym:
        bias = np.zeros(K)  # exact: uniform marginals and U 1 proportional to 1
    return ModelPottsSite(covariance=sigma, teacher=W, p=L - 1, bias=bias, channel="softmax", symmetric=sym,
                          model=model, site=i, colour_cov=covariance, neighbours=neighbours)


class ModelPottsSite(DiscreteSite, PottsSite):
    """A site of a Potts model: a :class:`PottsSite` that also carries its q-class Gaussian mixture
    (:attr:`mixture`, docs/multiclass.md, section "The site as a Gaussian mixture"), its
    neighbourhood, local data model and validity checks (:class:`.local_site.DiscreteSite`)."""

    def __init__(self, *, model, site: int, colour_cov: ColourCovariance, neighbours=None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._colour_cov = self._moments = colour_cov
        self._block = self.K
        self._set_site(model, site, neighbours)

    @property
    def input_mean(self) -> np.ndarray:
        """``E[x]`` before centring: the mean reduced colours of the other sites (site-major, d =
        K (L - 1)), exact or from the samples the site's moments were measured on; a simulation on
        the model's own sequences centres its inputs by it."""
        return np.asarray(self._colour_cov.mean)[np.arange(self._model.L) != self._site].ravel()

    def _inputs(self, seqs: np.ndarray, prob) -> np.ndarray:
        """The centred reduced colours of the other sites (site-major)."""
        P = simplex_basis(self._model.q)
        x = P[seqs[:, np.arange(self._model.L) != self._site]].reshape(seqs.shape[0], -1)
        return x - (x.mean(axis=0) if prob is None else prob @ x)

    def _gaussian_bayes_error(self) -> float:
        from replica_mlm.tasks.bayes_error import channel_error

        return channel_error(self.bias, self.rho, self.basis)

    @cached_property
    def mixture(self):
        """The q classes (the site's colours) with their weights, the means of the centred reduced
        inputs ``E[x | s_i = c]`` and the pooled covariance: exact when enumerated, otherwise from
        the sampler's sequences (with standard errors). The symmetrised covariance of a model whose
        colours are all alike is not used: the mixture is measured as it is."""
        from replica_mlm.tasks.mixture import mixture_from_samples

        model, i, cov = self._model, self._site, self._colour_cov
        if cov.method == "exact":
            seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
        elif cov.sequences is not None:
            seqs, prob = np.asarray(cov.sequences, dtype=np.int64), None
        else:
            raise ValueError("the colour covariance keeps no sequences: measure it with colour_covariance")
        P = simplex_basis(model.q)
        keep = np.arange(model.L) != i
        x = P[seqs[:, keep]].reshape(seqs.shape[0], -1)
        x = x - (x.mean(axis=0) if prob is None else prob @ x)
        return mixture_from_samples(x, np.asarray(seqs[:, i], dtype=np.int64), K=model.q,
                                    logits=model.logits(seqs)[:, i, :], teacher=self.teacher,
                                    probabilities=prob)
