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
rung. ``method="auto"`` uses Gibbs where it mixes and tempering where it does not. The diagnostics,
and the tempering kernel, ladders with equal swap acceptance and the temperature tuner, live in
:mod:`replica_mlm.potts.sampling` and :mod:`replica_mlm.potts.tempering`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_softmax, logsumexp

from replica_mlm import _checks
from replica_mlm._checks import (
    RngLike,
    as_generator,
    positive,
    positive_int,
    symmetric_matrix,
)
from replica_mlm.potts import sampling as _ps
from replica_mlm.potts import tempering as _pt
from replica_mlm.potts.sampling import (  # GibbsDiagnostics etc. re-exported from here
    TEMPERING_BETA_HOT,
    TEMPERING_SWAP_ROUNDS,
    GibbsDiagnostics,
    initial_monotone_tau,
    integrated_autocorrelation_time,
)
from replica_mlm.potts.tempering import TuneResult

__all__ = [
    "GibbsDiagnostics",
    "PottsModel",
    "TuneResult",
    "check_sequences",
    "initial_monotone_tau",
    "integrated_autocorrelation_time",
]


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


class PottsModel:
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

    def masked_site(self, i: int, rng: RngLike = 0, *, samples: int = 20000):
        """Site ``i`` of an Ising model as a :class:`MaskedSite` with the logit channel; for
        q > 2 colours a :class:`~replica_mlm.tasks.potts_site.PottsSite` (softmax channel,
        covariance of the reduced one-hot colours, exact when ``q**L <= 2**22``).

        The covariance ``Cov(s_-i)`` is exact (enumeration) for ``L <= 16`` and otherwise measured
        from ``samples`` sequences of the sampler (thinning from its measured autocorrelation;
        parallel tempering where Gibbs does not mix); the teacher is ``2 beta J_{i,-i}``. ``rng``
        and ``samples`` are checked also where the enumeration leaves them unused. For the
        covariance with its standard error and batch estimates, use
        :func:`replica_mlm.tasks.ising_site.spin_covariance`.
        """
        from replica_mlm.tasks.ising_site import ising_site, require_ising, spin_covariance

        if self.q > 2:  # the multi-class task of the softmax pseudo-likelihood (docs/multiclass.md)
            from replica_mlm.tasks.potts_site import colour_covariance, potts_site

            i = _checks.site_index(i, self.L)
            return potts_site(self, i, colour_covariance(self, samples=samples, rng=rng))
        require_ising(self, "masked_site")
        i = _checks.site_index(i, self.L)
        return ising_site(self, i, spin_covariance(self, samples=samples, rng=rng))

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

    def _colour_fields(self, s: np.ndarray) -> np.ndarray:
        """``N[n, i, b] = sum_k J_ik [s_k == b]`` (n, L, q)."""
        X = np.eye(self.q)[s]  # (n, L, q) one-hot
        return np.matmul(self._J, X)

    def logits(self, seqs) -> np.ndarray:
        """``beta sum_{j != i} J_ij U_{a s_j}`` for every sequence, site and colour: (n, L, q)."""
        s = self._check(seqs)
        return self._beta * (self._colour_fields(s) @ self._U)

    def energy(self, seqs) -> np.ndarray:
        """``H(s) = -1/2 sum_{i != j} J_ij U_{s_i s_j}`` per sequence, shape (n,), without beta."""
        s = self._check(seqs)
        F = self._colour_fields(s) @ self._U  # F[n, i, a] = sum_j J_ij U_{a s_j}
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
        z = self._beta * (self._colour_fields(s) @ self._U)
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

    # ------------------------------------------------------------------ Gibbs sampling
    def _init_fields(self, s: np.ndarray) -> np.ndarray:
        """Colour-major fields ``Nq[c, b, i] = sum_k J_ik [s_ck == b]``, shape (C, q, L).

        With this layout the update after a colour change of site ``k`` in chain ``c`` touches two
        contiguous rows of length L (``Nq[c, old, :]`` and ``Nq[c, new, :]``).
        """
        return np.ascontiguousarray(self._colour_fields(s).transpose(0, 2, 1))

    def _sweep(
        self,
        s: np.ndarray,
        Nq: np.ndarray,
        gen: np.random.Generator,
        betas: np.ndarray | None = None,
    ) -> None:
        """One Gibbs sweep of all chains in place (``sampling.gibbs_sweep``)."""
        _ps.gibbs_sweep(self, s, Nq, gen, betas)

    def _energies_from_fields(self, s: np.ndarray, Nq: np.ndarray) -> np.ndarray:
        Ug = self._U[s]  # (C, L, q): U[s_ci, b]
        return -0.5 * np.einsum("cbi,cib->c", Nq, Ug)

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
        Nq = self._init_fields(s)
        rec = []
        for t in range(1, n_sweeps + 1):
            _ps.gibbs_sweep(self, s, Nq, gen)
            if record_every and t % record_every == 0:
                rec.append(s.copy())
        return s, (np.stack(rec) if rec else None)

    # ------------------------------------------------------------------ parallel tempering
    def tempering_ladder(
        self, n_rungs: int | None = None, *, beta_hot: float = TEMPERING_BETA_HOT
    ) -> np.ndarray:
        """Geometric ladder of inverse temperatures from ``min(beta_hot, beta)`` to ``beta``.

        Parameters
        ----------
        n_rungs : int, optional
            Number of rungs. Default: the starting rule of the automatic ladder, a ratio
            ``1 + 1/sqrt(L)`` between neighbouring inverse temperatures (the energy fluctuates by
            O(sqrt L), so this keeps ``(beta_{k+1} - beta_k) (E_b - E_a)`` of order one);
            :meth:`gibbs_diagnostics` then adds rungs until every measured swap acceptance is at
            least 0.3. One rung (plain Gibbs) if ``beta <= beta_hot``.
        beta_hot : float
            Hottest inverse temperature, where single-site Gibbs mixes quickly.

        Returns
        -------
        ndarray, hottest first; the last entry is the model's ``beta`` exactly.
        """
        beta_hot = positive(beta_hot, "beta_hot")
        if n_rungs is not None:
            n_rungs = positive_int(n_rungs, "n_rungs")
            _checks.allocation(4 * 8 * n_rungs, f"a tempering ladder of n_rungs={n_rungs}")
        return _pt.geometric_ladder(self._beta, n_rungs, beta_hot, self.L)

    def _tempering_step(self, s, Nq, who, ladder, t, gen, tally=None, swap_rounds=1) -> np.ndarray:
        """One parallel-tempering step in place (``tempering.tempering_step``)."""
        return _pt.tempering_step(self, s, Nq, who, ladder, t, gen, tally, swap_rounds)

    # ------------------------------------------------------------------ diagnostics
    def gibbs_diagnostics(
        self,
        rng: RngLike = 0,
        *,
        n_chains: int | None = None,
        n_sweeps: int = 200,
        max_sweeps: int = 3200,
        method: str = "gibbs",
        n_rungs: int | None = None,
        beta_hot: float = TEMPERING_BETA_HOT,
        ladder=None,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
    ) -> GibbsDiagnostics:
        """Measure the autocorrelation of the sampler and choose the sweeps between samples.

        ``n_chains`` chains start from uniformly random sequences, are burnt in for ``n_sweeps``
        sweeps, then run ``n_sweeps`` more sweeps while recording the spins and the energy after
        every sweep. Two normalised autocorrelation functions are measured, averaged over chains and
        time origins (means and variances are taken over all chains, so chains stuck in different
        states show up as autocorrelation that does not decay):

        * spin: ``rho(t) ∝ sum_i [ P(s_i(t0) = s_i(t0 + t)) - sum_a p_i(a)^2 ]``, the overlap of
          one-hot indicators with its equilibrium value subtracted;
        * energy: ``rho(t) ∝ <(E(t0) - Ebar)(E(t0 + t) - Ebar)>``.

        Each gives an integrated autocorrelation time with Sokal's window (c = 5). If the window
        is not found within a quarter of the run, the run is shorter than 50 tau, or the two
        halves of the run disagree (mean energy, or with 3 chains or more the cross-chain mean
        Hamming distance, ``diagnostics.hamming_drift``; 4 standard errors), the burn-in and the
        run are doubled (up to ``max_sweeps``). ``sweeps_between = ceil(tau_int log(1/0.01))``: an
        exponentially decaying autocorrelation is below 1 % between saved configurations.

        Parameters
        ----------
        rng : seed or Generator
        n_chains : int, optional
            Independent chains (``method="gibbs"``, default 64) or independent replicas of the
            tempering ladder (``method="tempering"``, default 16; ``n_chains * len(ladder)``
            chains are updated together).
        n_sweeps, max_sweeps : int
            Initial and largest length of the recorded run.
        method : {"gibbs", "tempering", "auto"}
            ``"tempering"``: parallel tempering (replica exchange; same target distribution
            ``exp(-beta H)`` of docs/potts.md at the coldest rung):
            ``n_chains`` replicas of a geometric ladder from ``min(beta_hot, beta)`` to ``beta``
            (:meth:`tempering_ladder`); the autocorrelation is measured on the configurations seen
            at the coldest rung (the model's beta) of each replica, so ``sweeps_between`` is in
            tempering steps (one Gibbs sweep of every rung plus one round of swaps). That
            autocorrelation has a small, slowly decaying tail (configurations coming back from
            excursions up the ladder; at L = q = 20, beta = 8: rho = 0.1 at lag 50) which Sokal's
            window truncates, so for tempering each tau is the largest of Sokal's, Geyer's initial
            monotone estimate (:func:`initial_monotone_tau`, which must terminate within the
            measured lags) and, for spins, a blocking estimate (10 blocks per replica). With
            ``n_rungs=None`` the ladder starts from the ``1 + 1/sqrt(L)`` ratio rule and gets
            ``1.5x`` more rungs (pilot run restarted) until every measured swap acceptance is at
            least ``0.3`` (at most 128 rungs; the new rungs are placed at equal predicted swap
            acceptance 0.5 from the measured acceptances, at least 1.5x as many). The returned
            diagnostics carry the mean Hamming distance at beta measured on the pilot run
            (``hamming``, ``hamming_se``). ``"auto"``: plain Gibbs, and tempering if Gibbs
            does not mix (no Sokal window or unequal halves) within ``max_sweeps``.
        n_rungs : int, optional
            Fixed number of rungs (no adaptation).
        beta_hot : float
            Hottest rung of the ladder.
        ladder : array, optional
            Explicit ladder (strictly increasing, positive, ending at the model's beta; no
            adaptation), e.g. one with equal swap acceptance
            (``tempering.equal_acceptance_ladder``) or a previous run's ``diagnostics.ladder``.
        swap_rounds : int
            Rounds of even/odd swaps after each tempering sweep (default 1). Swaps do not change
            the energies, so extra rounds cost little; each round keeps the target exact.
        """
        return _pt.diagnose(self, rng, n_chains=n_chains, n_sweeps=n_sweeps, max_sweeps=max_sweeps,
                            method=method, n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder,
                            swap_rounds=swap_rounds)

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        n: int,
        rng: RngLike = 0,
        *,
        n_chains: int | None = None,
        sweeps_between: int | None = None,
        burn_in: int | None = None,
        return_diagnostics: bool = False,
        method: str = "gibbs",
        n_rungs: int | None = None,
        beta_hot: float = TEMPERING_BETA_HOT,
        ladder=None,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
        resume: GibbsDiagnostics | None = None,
    ) -> np.ndarray | tuple[np.ndarray, GibbsDiagnostics | None]:
        """Draw ``n`` sequences by Gibbs sampling with the exact conditionals.

        ``n_chains`` independent chains (default ``min(n, 500)``) start from uniformly random
        sequences and are updated together, one site at a time, with incremental fields. After
        ``burn_in`` sweeps each chain saves a configuration every ``sweeps_between`` sweeps until
        ``n`` are collected. Unless both are given, they come from :meth:`gibbs_diagnostics`
        (measured integrated autocorrelation time, pilot run seeded from ``rng``).

        Parameters
        ----------
        method : {"gibbs", "tempering", "auto"}
            ``"tempering"``: parallel tempering (see :meth:`gibbs_diagnostics`); ``n_chains``
            replicas of the ladder (default ``min(n, max(16, 500 // len(ladder)))``) run side by
            side and each saves the configuration at its coldest rung (the model's beta). The
            ladder is the one the pilot run settled on, or the given ``ladder`` (else
            ``tempering_ladder(n_rungs, beta_hot)``) when ``sweeps_between`` and ``burn_in`` are
            both given; pass ``ladder=diagnostics.ladder`` and
            ``swap_rounds=diagnostics.swap_rounds`` to sample with what a pilot run measured.
            ``"auto"``: the method the pilot run chose (Gibbs if it mixes, else tempering).
        resume : GibbsDiagnostics, optional
            Continue the chains where this pilot run of the model ended (e.g.
            ``tune_beta(..., return_result=True).diagnostics``), with its method, ladder and swap
            rounds, instead of starting new chains from random sequences: those chains passed the
            pilot's equilibration checks, so ``burn_in`` defaults to 0 and ``sweeps_between`` to
            the pilot's. ``n_chains`` (default: all of the pilot's) takes the first replicas;
            ``method``, ``n_rungs``, ``beta_hot``, ``ladder`` and ``swap_rounds`` are not used.

        Returns
        -------
        seqs : int array (n, L), or ``(seqs, diagnostics)`` if ``return_diagnostics`` (diagnostics
        is None when both ``sweeps_between`` and ``burn_in`` were given).
        """
        return _ps.draw(self, n, rng, n_chains=n_chains, sweeps_between=sweeps_between,
                        burn_in=burn_in, return_diagnostics=return_diagnostics, method=method,
                        n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder, swap_rounds=swap_rounds,
                        resume=resume)

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

    def tune_beta(
        self,
        target_hamming: float = 0.3,
        rng: RngLike = 0,
        *,
        n_samples: int = 400,
        tol: float | None = None,
        max_iter: int = 30,
        method: str = "auto",
        n_replicas: int = 32,
        max_sweeps: int = 51200,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
        beta_hot: float = TEMPERING_BETA_HOT,
        return_result: bool = False,
    ) -> float | TuneResult:
        """The inverse temperature at which sampled sequences differ at ``target_hamming`` of sites.

        The mean Hamming distance between independent samples falls from ``1 - 1/q``-ish at beta = 0
        towards 0 as beta grows.

        ``method="auto"`` or ``"tempering"`` (scan, verify, move;
        ``tempering.tune_with_tempering``; docs/potts.md, "Tuning the temperature"):
        parallel-tempering scans over ladders from ``min(beta_hot, beta)`` upwards, widened by
        factors of 2 until the mean Hamming distance at the rungs (cross-replica pairs, with
        jackknife errors) crosses the target, give a first beta by interpolation in
        ``log beta``. At that beta a pilot run (``n_replicas`` replicas of a ladder with equal
        predicted swap acceptance, or plain Gibbs chains if beta <= ``beta_hot``) must pass the
        mixing check (:meth:`gibbs_diagnostics`, at most ``max_sweeps`` recorded steps) and
        measure the Hamming distance with a standard error below ``tol / 3``. Where undecided,
        longer runs continue the same chains, up to ``max_sweeps``, then more replicas (copies
        of the chains, burnt in apart), up to 4x. If it is more than ``tol + 2 se`` from the
        target, the recorded run is reweighted to the beta where it predicts the target (while
        the weights' effective fraction stays above 1/2; else a Newton step in ``log beta``),
        and the next run continues the chains there (at most ``max_iter`` runs).
        ``max_sweeps`` is 51200 by default: on ``PottsModel.random(L=20, q=20)`` the slow mode
        at Hamming 0.3 (hops between a few far-apart groups of sequences, carried through the
        ladder's hot rungs) gives tau = 20-60 steps, and se <= tol / 3 then takes runs of this
        length (benchmarks/README.md).
        ``n_samples`` is not used by this method; ``tol`` defaults to 0.01.

        ``method="gibbs"``: bisection on ``log beta`` (after bracketing upwards from the model's
        beta by factors of sqrt 2), each trial drawing ``n_samples`` sequences with plain Gibbs
        from the same seed (common random numbers), until the measured distance is within ``tol``
        (default 0.005) of the target; raises where Gibbs stops mixing (800 pilot sweeps at most).

        The model itself is not changed: use :meth:`with_beta`. Raises ValueError if the sampler
        does not mix at the target or the target is not reached.

        Returns
        -------
        beta : float, or a :class:`~replica_mlm.potts.tempering.TuneResult` (beta, the
        measured Hamming distance and its standard error, the final pilot run's diagnostics, the
        trials and scans) if ``return_result``.

        Measured on ``PottsModel.random(L=20, q=20, seed=s)``, s = 0..9, target 0.3: see
        benchmarks/README.md, "tune_beta with parallel tempering" (``benchmarks/bench_tempering.py``).
        """
        from replica_mlm.potts.tuning import tune

        return tune(self, target_hamming, rng, n_samples=n_samples, tol=tol, max_iter=max_iter,
                    method=method, n_replicas=n_replicas, max_sweeps=max_sweeps,
                    swap_rounds=swap_rounds, beta_hot=beta_hot, return_result=return_result)


# ---------------------------------------------------------------------- helpers
def nll_from_logits(z: np.ndarray, s: np.ndarray) -> float:
    """``-(1/n) sum_mu sum_i log softmax(z[mu, i])[s_i^mu]`` with a stable log-sum-exp."""
    m = z.max(axis=2, keepdims=True)
    lse = m[:, :, 0] + np.log(np.exp(z - m).sum(axis=2))
    picked = np.take_along_axis(z, s[:, :, None], axis=2)[:, :, 0]
    return float((lse - picked).sum() / s.shape[0])
