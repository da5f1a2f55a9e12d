"""Ising spins as the two-colour generalised Potts model, and their masked-site learning tasks.

With ``q = 2`` colours and ``U_ab = sigma_a sigma_b``, ``sigma = (+1, -1)``, the generalised Potts
energy is the Ising (Sherrington-Kirkpatrick for random ``J``) energy
``H = -1/2 sum_{i != j} J_ij s_i s_j`` of the spins ``s_i = sigma_{colour_i}``, and the conditional
of one site is ``P(s_i | s_-i) = 1 / (1 + exp(-2 beta s_i h_i))`` with ``h_i = sum_j J_ij s_j``.
Masked language modelling with factored attention at site ``i`` (its pseudo-likelihood) is
therefore l2-penalised logistic regression of ``y = s_i`` on ``x = s_-i`` with the "logit" label
channel and teacher ``w* = 2 beta J_{i,-i}`` (docs: "Discrete spins", in the theory pages).

The replica theory treats ``x`` as Gaussian with the spins' own covariance
``Sigma = Cov(s_-i) = E[s_-i s_-i^T]`` (the mean is exactly zero: ``H(-s) = H(s)``).
:func:`spin_covariance` measures it, exactly by enumeration for ``L <= 16`` and from Gibbs (or
parallel-tempering) samples with their standard error otherwise; :func:`ising_site` turns one site
into a :class:`MaskedSite` with the logit channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import site_index
from replica_mlm.tasks.local_site import DiscreteSite
from replica_mlm.tasks.masked_site import MaskedSite
from replica_mlm.tasks.mixture import GaussianMixture, mixture_from_samples

#: spin value of each colour: colour 0 is +1, colour 1 is -1
SPINS = np.array([1.0, -1.0])
#: largest L whose 2**L configurations are enumerated exactly
EXACT_MAX_L = 16


def ising_colours() -> np.ndarray:
    """``U_ab = sigma_a sigma_b`` with ``sigma = (+1, -1)``: the colour matrix of Ising spins."""
    return np.outer(SPINS, SPINS)


def is_ising(model) -> bool:
    """True if ``model`` has two colours and ``U = sigma sigma^T`` exactly (up to 1e-12)."""
    U = model.colours
    return U.shape == (2, 2) and bool(np.max(np.abs(U - ising_colours())) <= 1e-12)


def require_ising(model, what: str) -> None:
    """ValueError naming ``what`` unless ``model`` is an Ising model (:func:`is_ising`)."""
    if not is_ising(model):
        raise ValueError(
            f"{what} needs an Ising model (q = 2 colours with U = [[1, -1], [-1, 1]], e.g. "
            f"PottsModel.ising or PottsModel.random_ising), got q = {model.q} with U = "
            f"{np.array2string(model.colours, precision=3)}"
        )


def spins(seqs: np.ndarray) -> np.ndarray:
    """Colour sequences (n, L) of an Ising model as float spins +-1."""
    return SPINS[np.asarray(seqs)]


@dataclass(frozen=True)
class SpinCovariance:
    """``Sigma = E[s s^T]`` of all L spins, with how it was obtained.

    Attributes
    ----------
    covariance : ndarray (L, L)
        The covariance (diagonal exactly 1; the mean is exactly zero by spin-flip symmetry).
    stderr : ndarray (L, L)
        Standard error of each entry (zeros when exact).
    method : str
        ``"exact"`` (enumeration), ``"gibbs"`` or ``"tempering"``.
    n_samples : int
        Sequences used (0 when exact).
    batches : ndarray (B, L, L) or None
        Covariances of B disjoint batches of the samples (None when exact): a jackknife over them
        propagates the statistical error of Sigma into any prediction made from it.
    sequences : ndarray (n_samples, L) or None
        The sampled colour sequences (None when exact): the class moments of a site's Gaussian
        mixture (:attr:`IsingSite.mixture`) are measured on them.
    """

    covariance: np.ndarray
    stderr: np.ndarray
    method: str
    n_samples: int
    batches: np.ndarray | None
    sequences: np.ndarray | None = None


def spin_covariance(model, *, samples: int = 20000, batches: int = 10,
                    rng: _checks.RngLike = 0, exact: bool | None = None,
                    progress: bool | None = None) -> SpinCovariance:
    """Measure ``Sigma = E[s s^T]`` of an Ising model.

    Parameters
    ----------
    model : PottsModel
        An Ising model (:func:`is_ising`).
    samples : int
        Sequences drawn when not exact (checked always); thinning from the sampler's measured autocorrelation
        (``PottsModel.sample(method="auto")``: cluster updates on a ferromagnet, else Gibbs, or
        parallel tempering where Gibbs does not mix). The sampler's warning that it did not
        decorrelate is turned into a ValueError.
    batches : int
        Disjoint batches for :attr:`SpinCovariance.batches` (>= 2).
    rng : int or Generator
        Seed of the sampler.
    exact : bool, optional
        Enumerate all ``2**L`` configurations (default: when ``L <= 16``).
    progress : bool or None
        A progress bar on stderr while sampling; None: only when stderr is a terminal.
    """
    require_ising(model, "spin_covariance")
    L = model.L
    # checked whether or not the sampler runs: a bad value is an error also where L <= 16
    samples = _checks.positive_int(samples, "samples")
    batches = _checks.positive_int(batches, "batches")
    _checks.as_generator(rng)
    if exact is None:
        exact = L <= EXACT_MAX_L
    exact = _checks.flag(exact, "exact")
    if exact:
        if L > EXACT_MAX_L:
            raise ValueError(f"exact enumeration needs L <= {EXACT_MAX_L}, got L = {L}")
        s = spins(model.all_sequences())
        prob = model.boltzmann_probabilities()
        cov = (s * prob[:, None]).T @ s
        np.fill_diagonal(cov, 1.0)
        return SpinCovariance(covariance=cov, stderr=np.zeros_like(cov), method="exact",
                              n_samples=0, batches=None)
    if batches < 2 or samples < 2 * batches:
        raise ValueError(f"need batches >= 2 and samples >= 2 * batches, got samples={samples}, "
                         f"batches={batches}")
    seqs, diag = equilibrium_sample(model, samples, rng, what="spin covariance", progress=progress)
    s = spins(seqs)
    cov = s.T @ s / samples
    np.fill_diagonal(cov, 1.0)
    # samples come from chains interleaved row by row; batches of consecutive rows mix chains
    parts = np.array_split(s, batches)
    batch_cov = np.stack([p.T @ p / p.shape[0] for p in parts])
    for c in batch_cov:
        np.fill_diagonal(c, 1.0)
    # thinned samples are decorrelated (autocorrelation <= 1 % between saved configurations):
    # Var(s_j s_k) = 1 - Sigma_jk^2 for +-1 spins with zero mean
    stderr = np.sqrt(np.clip(1.0 - cov**2, 0.0, None) / samples)
    return SpinCovariance(covariance=cov, stderr=stderr, method=diag.method, n_samples=samples,
                          batches=batch_cov, sequences=np.asarray(seqs, dtype=np.int8))


class IsingSite(DiscreteSite, MaskedSite):
    """An Ising site: a :class:`MaskedSite` with the logit channel that also carries its Gaussian
    mixture (:attr:`mixture`, docs/discrete.md, section "The site as a Gaussian mixture"), its
    neighbourhood, local data model and validity checks (:class:`.local_site.DiscreteSite`)."""

    def __init__(self, *, model, site: int, spin_cov: SpinCovariance, neighbours=None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._spin_cov = self._moments = spin_cov
        self._set_site(model, site, neighbours)

    def _inputs(self, seqs: np.ndarray, prob) -> np.ndarray:
        """The other spins ``s_-i`` of each sequence (their mean is zero by the spin-flip symmetry)."""
        return spins(seqs)[:, np.arange(self._model.L) != self._site]

    def _gaussian_bayes_error(self) -> float:
        from replica_mlm.tasks.bayes_error import channel_error

        return channel_error(np.zeros(1), np.array([[self.rho]]), SPINS[:, None] / 2)

    @cached_property
    def mixture(self) -> GaussianMixture:
        """The two classes ``y = s_i = +1`` (class 0) and ``-1`` (class 1) with their weights, means
        ``E[s_-i | s_i]`` and pooled covariance: exact by enumeration for ``L <= 16``, otherwise
        from the sampler's sequences (with standard errors)."""
        model, i, cov = self._model, self._site, self._spin_cov
        if cov.method == "exact":
            seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
        elif cov.sequences is not None:
            seqs, prob = cov.sequences, None
        else:
            raise ValueError("the spin covariance keeps no sequences: measure it with spin_covariance")
        s = spins(seqs)
        keep = np.arange(model.L) != i
        x = s[:, keep]
        nu = x @ self.teacher
        return mixture_from_samples(x, np.asarray(seqs[:, i], dtype=np.int64), K=2,
                                    logits=np.stack([nu / 2, -nu / 2], axis=1), teacher=self.teacher,
                                    probabilities=prob)


def ising_site(model, i: int, covariance: SpinCovariance, *, neighbours=None) -> IsingSite:
    """Site ``i`` of an Ising model as a :class:`MaskedSite` with the logit channel.

    ``Sigma = Cov(s_-i)`` (rows and columns ``-i`` of the spin covariance), teacher
    ``w* = 2 beta J_{i,-i}``, no extra label noise; :attr:`IsingSite.mixture` is its Gaussian mixture.
    """
    require_ising(model, "ising_site")
    L = model.L
    i = site_index(i, L)
    keep = np.arange(L) != i
    sigma = covariance.covariance[np.ix_(keep, keep)]
    teacher = 2.0 * model.beta * model.couplings[i, keep]
    return IsingSite(covariance=sigma, teacher=teacher, noise=0.0, channel="logit", model=model, site=i,
                     spin_cov=covariance, neighbours=neighbours)


def equilibrium_sample(model, samples: int, rng, *, what: str, progress: bool | None = None):
    """``model.sample(samples, method="auto", return_diagnostics=True)``, with the sampler's
    RuntimeWarning (it could not verify mixing) raised as a ValueError naming ``what`` was measured."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return model.sample(samples, rng=rng, method="auto", return_diagnostics=True,
                                progress=progress)
        except RuntimeWarning as exc:
            raise ValueError(f"cannot measure the {what}: {exc}") from None
