"""The discrete generalised Potts model (docs/potts.md).

A sequence is ``s = (s_1, ..., s_L)`` with each ``s_i`` one of ``q`` colours. The energy and the
Boltzmann weight are

    H(s) = -1/2 sum_{i != j} J_ij U_{s_i s_j},        P(s) ∝ exp(-beta H(s))         (docs/potts.md)

with ``J`` (L x L, symmetric, zero diagonal) coupling positions and ``U`` (q x q, symmetric) saying
how similar colours are. The exact conditional of one site is

    P(s_i = a | s_-i) = softmax_a( beta sum_{j != i} J_ij U_{a s_j} )          (Potts conditional)

:class:`PottsModel` evaluates energies, conditionals and the negative log pseudo-likelihood, and
samples with a vectorised Gibbs sampler: many independent chains are updated together, one site at a
time, from colour-resolved local fields that are updated incrementally when a spin changes. The
number of sweeps between saved configurations is chosen from a measured integrated autocorrelation
time (:meth:`PottsModel.gibbs_diagnostics`), not guessed.

Where single-site Gibbs stops mixing (on ``PottsModel.random(L=20, q=20)`` around beta ~ 4, short of
the paper's mean Hamming distance 0.3), ``method="tempering"`` runs parallel tempering: replicas of a
geometric ladder of inverse temperatures ending at the model's beta, all chains swept together with
per-chain temperatures, neighbouring rungs exchanging temperature labels with probability
``min(1, exp((beta_{k+1} - beta_k)(E_{k+1} - E_k)))``; samples are the configurations at the coldest
rung. ``method="auto"`` uses Gibbs where it mixes and tempering where it does not.

The model is the top of the ``potts`` folder: its sampling methods (:class:`PottsSampler`,
:mod:`replica_mlm.potts.sampler`) forward to the Gibbs kernel (:mod:`~replica_mlm.potts.kernel`),
the pilot runs (:mod:`~replica_mlm.potts.pilot`, recording a
:class:`~replica_mlm.potts.diagnostics.GibbsDiagnostics`), sampling
(:mod:`~replica_mlm.potts.sampling`), parallel tempering and its ladders
(:mod:`~replica_mlm.potts.tempering`) and the temperature tuner (:mod:`~replica_mlm.potts.tuning`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_softmax, logsumexp

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import (
    RngLike,
    as_generator,
    positive,
    positive_int,
    symmetric_matrix,
)
from replica_mlm.potts.kernel import colour_fields, gibbs_sweep, init_fields
from replica_mlm.potts.sampler import PottsSampler

__all__ = ["PottsModel", "check_sequences", "nll_from_logits"]


def check_sequences(seqs, *, L: int, q: int, name: str = "seqs") -> np.ndarray:
    """Validate an integer array of sequences of shape (n, L) with values in [0, q).

    Returns an ``intp`` copy. Float input is accepted only when every entry is an exact integer.
    Raises TypeError for booleans, complex numbers, strings and objects, ValueError for the wrong
    shape, NaN, non-integer values or colours out of range.
    """
    arr = _checks.real_array(seqs, name)
    if arr.ndim != 2 or arr.shape[1] != L:
        raise ValueError(
            f"{name} must have shape (n, L) = (n, {L}), got shape {arr.shape} "
            "(a single sequence must be passed as seqs[None, :])"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one sequence")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite entries")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must contain integer colours, got non-integer values")
    lo, hi = arr.min(), arr.max()
    if lo < 0 or hi >= q:
        raise ValueError(
            f"{name} has colours out of range: values must lie in [0, q) = [0, {q}), "
            f"got min {lo} and max {hi}"
        )
    return arr.astype(np.intp)


class PottsModel(PottsSampler):
    """Generalised Potts model ``P(s) ∝ exp(-beta H(s))``, ``H = -1/2 sum_{i!=j} J_ij U_{s_i s_j}``.

    Parameters
    ----------
    couplings : array (L, L)
        Positional couplings ``J``: finite, symmetric, zero diagonal. ``L >= 2``.
    colours : array (q, q)
        Colour similarity ``U``: finite, symmetric. ``q >= 2``. ``U = identity`` is the standard
        Potts model.
    beta : float
        Inverse temperature, ``> 0``.

    Notes
    -----
    See docs/potts.md. The model is immutable: :meth:`with_beta` returns a copy at another temperature.
    """

    def __init__(self, couplings, colours, beta: float = 1.0) -> None:
        J = symmetric_matrix(couplings, "couplings J")
        U = symmetric_matrix(colours, "colours U")
        if J.shape[0] < 2:
            raise ValueError(f"couplings J must be at least 2 x 2 (L >= 2), got shape {J.shape}")
        if U.shape[0] < 2:
            raise ValueError(f"colours U must be at least 2 x 2 (q >= 2), got shape {U.shape}")
        diag = float(np.max(np.abs(np.diag(J))))
        if diag != 0.0:
            raise ValueError(
                "couplings J must have a zero diagonal (no self-coupling), "
                f"got max |J_ii| = {diag:.3g}"
            )
        self._J = J
        self._U = U
        self._beta = positive(beta, "beta")
        self._J.flags.writeable = False
        self._U.flags.writeable = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def random(
        cls, L: int = 20, q: int = 20, seed: RngLike = _checks.NOT_GIVEN, *, beta: float = 1.0,
        rng: RngLike = _checks.NOT_GIVEN,
    ) -> PottsModel:
        """A random instance (our choice; docs/potts.md, 'Random instances').

        ``rng`` is an int seed, a numpy Generator or None (fresh entropy); default 0. ``seed``
        (also the third positional argument) is its alias, kept from earlier versions; ValueError
        if both are given.

        ``J_ij = J_ji ~ N(0, 1/L)`` for ``i < j`` with zero diagonal (the off-diagonal part of the
        GOE of docs/theory.md), and ``U = (G + G^T) / sqrt(2)`` with ``G`` i.i.d. standard normal, so that
        off-diagonal ``U_ab ~ N(0, 1)`` ("i.i.d. standard normal entries, symmetrised"). Tune
        ``beta`` with :meth:`tune_beta`.
        """
        L = positive_int(L, "L")
        q = positive_int(q, "q")
        if L < 2 or q < 2:
            raise ValueError(f"L and q must be >= 2, got L={L}, q={q}")
        gen = _checks.rng_or_seed(rng, seed, default=0)
        _checks.allocation(6 * 8 * (L * L + q * q), f"PottsModel.random(L={L}, q={q})")
        G = gen.standard_normal((L, L)) / math.sqrt(L)
        J = np.triu(G, 1)
        J = J + J.T
        H = gen.standard_normal((q, q))
        U = (H + H.T) / math.sqrt(2.0)
        return cls(couplings=J, colours=U, beta=beta)

    @classmethod
    def ising(cls, *, couplings, beta: float = 1.0) -> PottsModel:
        """Ising spins as the two-colour model: ``q = 2``, ``U_ab = sigma_a sigma_b``, ``sigma = (+1, -1)``.

        ``H = -1/2 sum_{i != j} J_ij s_i s_j`` with spin ``s_i = +1`` for colour 0 and ``-1`` for
        colour 1; everything else is a :class:`PottsModel`. :meth:`masked_site` turns a site into
        the logistic-regression task of its pseudo-likelihood.
        """
        from replica_mlm.tasks.ising_site import ising_colours

        return cls(couplings=couplings, colours=ising_colours(), beta=beta)

    @classmethod
    def random_ising(cls, L: int, *, beta: float, rng: RngLike = _checks.NOT_GIVEN,
                     seed: RngLike = _checks.NOT_GIVEN) -> PottsModel:
        """Sherrington-Kirkpatrick couplings ``J_ij = J_ji ~ N(0, 1/L)`` (zero diagonal), Ising spins.

        The paramagnetic phase without fields is ``beta < 1``. ``rng`` is an int seed, a numpy
        Generator or None (fresh entropy); default 0. ``seed=`` is its alias, kept from earlier
        versions; ValueError if both are given.
        """
        L = positive_int(L, "L")
        if L < 2:
            raise ValueError(f"L must be >= 2, got {L}")
        gen = _checks.rng_or_seed(rng, seed, default=0)
        J = np.triu(gen.standard_normal((L, L)) / math.sqrt(L), 1)
        return cls.ising(couplings=J + J.T, beta=beta)

    def masked_site(self, i: int, rng: RngLike = 0, *, samples: int = 20000, progress: bool | None = None,
                    neighbours=None):
        """Site ``i`` of an Ising model as a :class:`MaskedSite` with the logit channel; for
        q > 2 colours a :class:`~replica_mlm.tasks.potts_site.PottsSite` (softmax channel,
        covariance of the reduced one-hot colours, exact when ``q**L <= 2**22``).

        The covariance ``Cov(s_-i)`` is exact (enumeration) for ``L <= 16`` and otherwise measured
        from ``samples`` sequences of the sampler (thinning from its measured autocorrelation;
        parallel tempering where Gibbs does not mix); the teacher is ``2 beta J_{i,-i}``. ``rng``
        and ``samples`` are checked also where the enumeration leaves them unused. For the
        covariance with its standard error and batch estimates, use
        :func:`replica_mlm.tasks.ising_site.spin_covariance`. ``progress``: a bar on stderr while
        the sampler draws (None: only when stderr is a terminal). ``neighbours``: the sites the local
        theory treats exactly (``theory="local"``; ``task.neighbourhood``): None for the documented
        rule on the couplings (:func:`replica_mlm.tasks.neighbourhood.neighbourhood`), a count of the
        most strongly coupled sites, or a list of sites.
        """
        from replica_mlm.tasks.ising_site import ising_site, require_ising, spin_covariance

        if self.q > 2:  # the multi-class task of the softmax pseudo-likelihood (docs/multiclass.md)
            from replica_mlm.tasks.potts_site import colour_covariance, potts_site

            i = _checks.site_index(i, self.L)
            return potts_site(self, i, colour_covariance(self, samples=samples, rng=rng, progress=progress),
                              neighbours=neighbours)
        require_ising(self, "masked_site")
        i = _checks.site_index(i, self.L)
        return ising_site(self, i, spin_covariance(self, samples=samples, rng=rng, progress=progress),
                          neighbours=neighbours)

    def with_beta(self, beta: float) -> PottsModel:
        """The same couplings and colours at inverse temperature ``beta``."""
        return PottsModel(couplings=self._J, colours=self._U, beta=beta)

    # ------------------------------------------------------------------ properties
    @property
    def couplings(self) -> np.ndarray:
        """``J`` (L, L), read-only."""
        return self._J

    @property
    def colours(self) -> np.ndarray:
        """``U`` (q, q), read-only."""
        return self._U

    @property
    def beta(self) -> float:
        return self._beta

    @property
    def L(self) -> int:
        return self._J.shape[0]

    @property
    def q(self) -> int:
        return self._U.shape[0]

    @property
    def default_loss(self) -> str:
        """The loss its sites are learnt with (pseudo-likelihood): ``"cross_entropy"`` for q > 2
        colours (the default of its ``masked_site``), ``"logistic"`` for an Ising model."""
        return "cross_entropy" if self.q > 2 else "logistic"

    def coupling_tensor(self) -> np.ndarray:
        """``beta J_ij U`` as an (L, L, q, q) tensor, what factored attention's ``A_ij V`` fits."""
        return self._beta * self._J[:, :, None, None] * self._U[None, None, :, :]

    def __repr__(self) -> str:
        return f"PottsModel(L={self.L}, q={self.q}, beta={self._beta:.6g})"

    # ------------------------------------------------------------------ exact quantities
    def _check(self, seqs) -> np.ndarray:
        return check_sequences(seqs, L=self.L, q=self.q)

    def logits(self, seqs) -> np.ndarray:
        """``beta sum_{j != i} J_ij U_{a s_j}`` for every sequence, site and colour: (n, L, q)."""
        s = self._check(seqs)
        return self._beta * (colour_fields(self, s) @ self._U)

    def energy(self, seqs) -> np.ndarray:
        """``H(s) = -1/2 sum_{i != j} J_ij U_{s_i s_j}`` per sequence, shape (n,), without beta."""
        s = self._check(seqs)
        F = colour_fields(self, s) @ self._U  # F[n, i, a] = sum_j J_ij U_{a s_j}
        return -0.5 * np.take_along_axis(F, s[:, :, None], axis=2)[:, :, 0].sum(axis=1)

    def conditionals(self, seqs) -> np.ndarray:
        """Exact ``P(s_i = a | s_-i)`` for all sites: (n, L, q)."""
        return np.exp(log_softmax(self.logits(seqs), axis=2))

    def conditional(self, seqs, i: int) -> np.ndarray:
        """Exact ``P(s_i = a | s_-i)`` of site ``i`` (Potts conditional, docs/potts.md): (n, q)."""
        s = self._check(seqs)
        i = _checks.site_index(i, self.L)
        X = np.eye(self.q)[s]
        z = self._beta * (np.einsum("j,njb->nb", self._J[i], X) @ self._U)
        return np.exp(log_softmax(z, axis=1))

    def neg_pseudo_loglikelihood(self, seqs) -> float:
        """``-(1/n) sum_mu sum_i log P(s_i^mu | s_-i^mu)`` (docs/potts.md; Besag 1975)."""
        s = self._check(seqs)
        z = self._beta * (colour_fields(self, s) @ self._U)
        return float(nll_from_logits(z, s))

    def log_partition(self) -> float:
        """``log Z = log sum_s exp(-beta H(s))`` by enumeration (only for ``q**L <= 2**22``)."""
        return float(logsumexp(-self._beta * self.energy(self.all_sequences())))

    def all_sequences(self) -> np.ndarray:
        """All ``q**L`` sequences in lexicographic order (enumerable models, ``q**L <= 2**22``)."""
        if self.q**self.L > 2**22:
            raise ValueError(f"q**L = {self.q}**{self.L} is too large to enumerate (limit 2**22)")
        grids = np.indices((self.q,) * self.L).reshape(self.L, -1).T
        return grids.astype(np.intp)

    def boltzmann_probabilities(self) -> np.ndarray:
        """Exact ``P(s)`` of every sequence of :meth:`all_sequences` (enumerable models only)."""
        e = -self._beta * self.energy(self.all_sequences())
        return np.exp(e - logsumexp(e))

    def run_chains(
        self, s0, n_sweeps: int, rng: RngLike = 0, *, record_every: int = 0
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Run independent Gibbs chains from ``s0`` (C, L) for ``n_sweeps`` sweeps.

        Returns the final states and, if ``record_every > 0``, the states after every
        ``record_every``-th sweep as an array (n_records, C, L).
        """
        s = check_sequences(s0, L=self.L, q=self.q, name="s0")
        n_sweeps = _checks.nonnegative_int(n_sweeps, "n_sweeps")
        record_every = _checks.nonnegative_int(record_every, "record_every")
        gen = as_generator(rng)
        C, L = s.shape
        _checks.work(n_sweeps * C * self.L * self.q, f"run_chains(n_sweeps={n_sweeps})", steps=n_sweeps * L)
        records = n_sweeps // record_every if record_every else 0
        _checks.allocation(2 * 8 * records * C * self.L,
                           f"run_chains(n_sweeps={n_sweeps}, record_every={record_every}) recording "
                           f"{records} states of {C} chains")
        Nq = init_fields(self, s)
        rec = []
        for t in range(1, n_sweeps + 1):
            gibbs_sweep(self, s, Nq, gen)
            if record_every and t % record_every == 0:
                rec.append(s.copy())
        return s, (np.stack(rec) if rec else None)

    def mean_hamming(self, seqs) -> float:
        """Mean Hamming distance (fraction of differing sites) between distinct pairs of ``seqs``.

        Exact, from the colour counts c_ia: ``1 - (1/L) sum_ia c_ia (c_ia - 1) / (n (n - 1))``.
        """
        s = self._check(seqs)
        n = s.shape[0]
        if n < 2:
            raise ValueError("mean_hamming needs at least 2 sequences")
        counts = np.stack([np.bincount(s[:, i], minlength=self.q) for i in range(self.L)])
        same = (counts * (counts - 1)).sum(axis=1) / (n * (n - 1))
        return float(1.0 - same.mean())

# ---------------------------------------------------------------------- helpers
def nll_from_logits(z: np.ndarray, s: np.ndarray) -> float:
    """``-(1/n) sum_mu sum_i log softmax(z[mu, i])[s_i^mu]`` with a stable log-sum-exp."""
    m = z.max(axis=2, keepdims=True)
    lse = m[:, :, 0] + np.log(np.exp(z - m).sum(axis=2))
    picked = np.take_along_axis(z, s[:, :, None], axis=2)[:, :, 0]
    return float((lse - picked).sum() / s.shape[0])
