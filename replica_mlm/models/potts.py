"""The discrete generalised Potts model (THEORY.md section 1).

A sequence is ``s = (s_1, ..., s_L)`` with each ``s_i`` one of ``q`` colours. The energy and the
Boltzmann weight are

    H(s) = -1/2 sum_{i != j} J_ij U_{s_i s_j},        P(s) ∝ exp(-beta H(s))         (THEORY.md §1)

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
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

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

__all__ = [
    "GibbsDiagnostics",
    "PottsModel",
    "check_sequences",
    "initial_monotone_tau",
    "integrated_autocorrelation_time",
]

#: autocorrelation left between two saved configurations of one chain: sweeps_between is chosen as
#: ceil(tau_int * log(1 / DECORRELATION)), i.e. exp(-sweeps_between / tau) <= DECORRELATION for an
#: exponentially decaying autocorrelation.
DECORRELATION = 0.01
#: Sokal's window constant for the integrated autocorrelation time.
SOKAL_C = 5.0
#: hottest inverse temperature of the parallel-tempering ladder (``min(TEMPERING_BETA_HOT, beta)``):
#: on ``PottsModel.random`` (J_ij ~ N(0, 1/L), U ~ N(0, 1)) single-site Gibbs decorrelates in
#: about a sweep there (measured tau_int = 0.83 sweeps at beta = 1, 3.6 at beta = 1.5, L = q = 20,
#: seed 0). A hotter end (0.3) gave the same autocorrelation at the cold rung with 1.5x the rungs.
TEMPERING_BETA_HOT = 1.0
#: smallest acceptable swap acceptance between neighbouring rungs; the automatic ladder gets more
#: rungs until every measured acceptance reaches it.
TEMPERING_MIN_ACCEPTANCE = 0.3
#: at most this many rungs in an automatic ladder.
TEMPERING_MAX_RUNGS = 128
#: number of blocks per chain in the blocking estimate of tau (tempering pilot runs).
BLOCKS = 10
METHODS = ("gibbs", "tempering", "auto")


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


def integrated_autocorrelation_time(rho: np.ndarray, *, c: float = SOKAL_C) -> tuple[float, int]:
    """Integrated autocorrelation time with Sokal's automatic window.

    ``tau_int(W) = 1/2 + sum_{t=1}^{W} rho(t)``, with ``W`` the smallest lag such that
    ``W >= c tau_int(W)``. ``rho[0]`` must be 1.

    Returns
    -------
    (tau_int, window) ; ``window = -1`` if no lag in ``rho`` satisfied the criterion (then ``tau``
    is a lower bound computed from all lags).
    """
    rho = np.asarray(rho, dtype=float)
    tau = 0.5
    for w in range(1, rho.size):
        tau += rho[w]
        if w >= c * tau:
            return max(tau, 0.5), w
    return max(tau, 0.5), -1


def initial_monotone_tau(rho: np.ndarray) -> tuple[float, bool]:
    """Integrated autocorrelation time by Geyer's initial monotone sequence estimator.

    With ``Gamma_k = rho(2k) + rho(2k + 1)``, ``tau_int = -1/2 + sum_{k <= m} Gamma_k`` summed
    while ``Gamma_k > 0``, each ``Gamma_k`` capped by the previous one (Geyer 1992). It keeps a
    small slowly decaying tail that Sokal's window cuts off. Returns ``(tau_int, terminated)``;
    ``terminated`` is False if ``Gamma_k`` stayed positive over all lags in ``rho`` (then
    ``tau_int`` is a lower bound).
    """
    rho = np.asarray(rho, dtype=float)
    m = rho.size // 2
    gam = rho[: 2 * m : 2] + rho[1 : 2 * m : 2]
    total, prev = 0.0, math.inf
    for g in gam:
        if g <= 0:
            return max(total - 0.5, 0.5), True
        prev = min(prev, g)
        total += prev
    return max(total - 0.5, 0.5), False


@dataclass
class GibbsDiagnostics:
    """What the pilot run of the Gibbs sampler measured.

    Attributes
    ----------
    tau_int : float
        Integrated autocorrelation time in sweeps, the larger of ``tau_spin`` and ``tau_energy``.
    tau_spin, tau_energy : float
        The integrated autocorrelation times of the spin overlap (one-hot indicators, summed over
        sites and colours) and of the energy, with Sokal's window (c = 5). For tempering, each is
        the largest of that, Geyer's initial monotone estimate and (spins) a blocking estimate.
    sweeps_between : int
        Sweeps between saved configurations of one chain: ``ceil(tau_int log(1/0.01))``.
    burn_in : int
        Sweeps discarded at the start of each chain (``10 * sweeps_between``, at least 20).
    rho_spin, rho_energy : ndarray
        Normalised autocorrelation functions at lags 0, 1, 2, ... sweeps.
    window_found : bool
        Whether Sokal's window criterion was met inside the measured lags (if not, ``tau_int`` is a
        lower bound).
    equilibrated : bool
        Whether the mean energies of the two halves of the measured run agree within 4 standard
        errors.
    n_chains, n_sweeps : int
        Size of the pilot run (for tempering, ``n_chains`` counts replicas of the ladder).
    method : str
        ``"gibbs"`` (independent single-site Gibbs chains) or ``"tempering"`` (parallel tempering;
        the autocorrelation is that of the configurations seen at the target, coldest, rung of each
        replica, one sweep being a Gibbs sweep of every rung followed by one round of swaps).
    ladder : ndarray
        Inverse temperatures of the tempering ladder, hottest first, the last being the model's
        beta (``[beta]`` for plain Gibbs).
    swap_acceptance : ndarray
        Measured acceptance of swaps between rungs ``k`` and ``k + 1`` during the recorded part of
        the pilot run, shape ``(len(ladder) - 1,)`` (empty for plain Gibbs).
    """

    tau_int: float
    tau_spin: float
    tau_energy: float
    sweeps_between: int
    burn_in: int
    rho_spin: np.ndarray = field(repr=False)
    rho_energy: np.ndarray = field(repr=False)
    window_found: bool = True
    equilibrated: bool = True
    n_chains: int = 0
    n_sweeps: int = 0
    method: str = "gibbs"
    ladder: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    swap_acceptance: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def mixing(self) -> bool:
        """Sokal window found and the two halves of the run agree (``window_found and equilibrated``)."""
        return bool(self.window_found and self.equilibrated)


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
    THEORY.md §1. The model is immutable: :meth:`with_beta` returns a copy at another temperature.
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
        cls, L: int = 20, q: int = 20, seed: RngLike = 0, *, beta: float = 1.0
    ) -> PottsModel:
        """A random instance (our choice; THEORY.md §1 fixes only U).

        ``J_ij = J_ji ~ N(0, 1/L)`` for ``i < j`` with zero diagonal (the off-diagonal part of the
        GOE of THEORY.md §3), and ``U = (G + G^T) / sqrt(2)`` with ``G`` i.i.d. standard normal, so that
        off-diagonal ``U_ab ~ N(0, 1)`` ("i.i.d. standard normal entries, symmetrised"). Tune
        ``beta`` with :meth:`tune_beta`.
        """
        L = positive_int(L, "L")
        q = positive_int(q, "q")
        if L < 2 or q < 2:
            raise ValueError(f"L and q must be >= 2, got L={L}, q={q}")
        gen = as_generator(seed, name="seed")
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
        from replica_mlm.models.ising import ising_colours

        return cls(couplings=couplings, colours=ising_colours(), beta=beta)

    @classmethod
    def random_ising(cls, L: int, *, beta: float, seed: RngLike = 0) -> PottsModel:
        """Sherrington-Kirkpatrick couplings ``J_ij = J_ji ~ N(0, 1/L)`` (zero diagonal), Ising spins.

        The paramagnetic phase without fields is ``beta < 1``.
        """
        L = positive_int(L, "L")
        if L < 2:
            raise ValueError(f"L must be >= 2, got {L}")
        gen = as_generator(seed, name="seed")
        J = np.triu(gen.standard_normal((L, L)) / math.sqrt(L), 1)
        return cls.ising(couplings=J + J.T, beta=beta)

    def masked_site(self, i: int, rng: RngLike = 0, *, samples: int = 20000):
        """Site ``i`` of an Ising model as a :class:`MaskedSite` with the logit channel.

        The covariance ``Cov(s_-i)`` is exact (enumeration) for ``L <= 16`` and otherwise measured
        from ``samples`` sequences of the sampler (thinning from its measured autocorrelation;
        parallel tempering where Gibbs does not mix); the teacher is ``2 beta J_{i,-i}``. For the
        covariance with its standard error and batch estimates, use
        :func:`replica_mlm.models.ising.spin_covariance`.
        """
        from replica_mlm.models.ising import ising_site, require_ising, spin_covariance

        require_ising(self, "masked_site")
        i = _site(i, self.L)
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
        """Exact ``P(s_i = a | s_-i)`` of site ``i`` (Potts conditional, THEORY.md §1): (n, q)."""
        s = self._check(seqs)
        i = _site(i, self.L)
        X = np.eye(self.q)[s]
        z = self._beta * (np.einsum("j,njb->nb", self._J[i], X) @ self._U)
        return np.exp(log_softmax(z, axis=1))

    def neg_pseudo_loglikelihood(self, seqs) -> float:
        """``-(1/n) sum_mu sum_i log P(s_i^mu | s_-i^mu)`` (THEORY.md §2; Besag 1975)."""
        s = self._check(seqs)
        z = self._beta * (self._colour_fields(s) @ self._U)
        return float(_nll_from_logits(z, s))

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
        """One systematic-scan Gibbs sweep of all chains, in place, with incremental fields.

        For each site ``i`` the logits of all chains are ``beta Nq[:, :, i] U`` (C x q times
        q x q), or ``betas[c] (Nq[c, :, i] U)`` with one inverse temperature per chain (parallel
        tempering); a new colour is drawn by inverting the cumulative distribution; for the chains
        whose colour changed the fields of every site move by ``J[i]`` from the old to the new
        colour row.
        """
        C = s.shape[0]
        bU = self._U if betas is not None else self._beta * self._U
        bcol = None if betas is None else np.asarray(betas, dtype=float)[:, None]
        J = self._J
        u = gen.random((self.L, C))
        for i in range(self.L):
            z = Nq[:, :, i] @ bU
            if bcol is not None:
                z *= bcol
            z -= z.max(axis=1, keepdims=True)
            np.exp(z, out=z)
            np.cumsum(z, axis=1, out=z)
            new = (z < (u[i] * z[:, -1])[:, None]).sum(axis=1)
            old = s[:, i]
            chg = np.flatnonzero(new != old)
            if chg.size:
                newc = new[chg]
                oldc = old[chg]
                Nq[chg, oldc, :] -= J[i]
                Nq[chg, newc, :] += J[i]
                s[chg, i] = newc

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
        C = s.shape[0]
        _checks.work(n_sweeps * C * self.L * self.q, f"run_chains(n_sweeps={n_sweeps}) of {C} chains")
        records = n_sweeps // record_every if record_every else 0
        _checks.allocation(2 * 8 * records * C * self.L,
                           f"run_chains(n_sweeps={n_sweeps}, record_every={record_every}) recording "
                           f"{records} states of {C} chains")
        Nq = self._init_fields(s)
        rec = []
        for t in range(1, n_sweeps + 1):
            self._sweep(s, Nq, gen)
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
        lo = min(beta_hot, self._beta)
        if n_rungs is None:
            if lo >= self._beta:
                return np.array([self._beta])
            ratio = 1.0 + 1.0 / math.sqrt(self.L)
            n_rungs = 1 + math.ceil(math.log(self._beta / lo) / math.log(ratio))
        n_rungs = positive_int(n_rungs, "n_rungs")
        if n_rungs == 1:
            return np.array([self._beta])
        ladder = np.geomspace(lo, self._beta, n_rungs)
        ladder[-1] = self._beta
        return ladder

    def _tempering_step(
        self,
        s: np.ndarray,
        Nq: np.ndarray,
        who: np.ndarray,
        ladder: np.ndarray,
        t: int,
        gen: np.random.Generator,
        tally: np.ndarray | None = None,
    ) -> np.ndarray:
        """One parallel-tempering step of ``R`` replicas of a ``K``-rung ladder, in place.

        Chains ``r K .. r K + K - 1`` (rows of ``s`` and ``Nq``) form replica ``r``; ``who[r, k]``
        is the chain of replica ``r`` currently at rung ``k``. A Gibbs sweep of every chain at its
        rung's inverse temperature is followed by swap proposals between rungs ``(k, k + 1)`` for
        every ``k`` of the parity of ``t`` (even/odd alternation), accepted with probability
        ``min(1, exp((beta_{k+1} - beta_k) (E_{k+1} - E_k)))`` (detailed balance for
        ``prod_k exp(-beta_k H(s_k))``). Swaps exchange temperature labels (``who``), not states.
        ``tally[0, k]`` / ``tally[1, k]`` count accepted / proposed swaps. Returns the energies of
        all chains after the sweep (before the swap, which does not change them).
        """
        R, K = who.shape
        rows = np.arange(R)[:, None]
        rung = np.empty_like(who)
        rung[rows, who] = np.arange(K)
        self._sweep(s, Nq, gen, betas=ladder[rung.ravel()])
        E = self._energies_from_fields(s, Nq)
        ks = np.arange(t % 2, K - 1, 2)
        if ks.size:
            A, B = who[:, ks], who[:, ks + 1]
            ER = E.reshape(R, K)
            logr = _swap_log_ratio(ladder[ks], ladder[ks + 1], ER[rows, A], ER[rows, B])
            acc = np.log(gen.random(A.shape)) < logr
            who[:, ks] = np.where(acc, B, A)
            who[:, ks + 1] = np.where(acc, A, B)
            if tally is not None:
                tally[0, ks] += acc.sum(axis=0)
                tally[1, ks] += R
        return E

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
        is not found within a quarter of the run, or the run is shorter than 50 tau, the burn-in
        and the run are doubled (up to ``max_sweeps``). ``sweeps_between = ceil(tau_int log(1/0.01))``: an
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
            ``exp(-beta H)`` of THEORY.md §1 at the coldest rung):
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
            least ``0.3`` (at most 128 rungs). ``"auto"``: plain Gibbs, and tempering if Gibbs
            does not mix (no Sokal window or unequal halves) within ``max_sweeps``.
        n_rungs : int, optional
            Fixed number of rungs (no adaptation).
        beta_hot : float
            Hottest rung of the ladder.
        """
        method = _checks.choice(method, METHODS, "method")
        n_sweeps = positive_int(n_sweeps, "n_sweeps")
        max_sweeps = positive_int(max_sweeps, "max_sweeps")
        gen = as_generator(rng)
        if n_chains is not None:
            n_chains = positive_int(n_chains, "n_chains")
        if n_rungs is not None:
            n_rungs = positive_int(n_rungs, "n_rungs")
        beta_hot = positive(beta_hot, "beta_hot")
        self._check_pilot_size(n_chains, n_sweeps, max_sweeps, n_rungs)
        if method in ("gibbs", "auto"):
            C = 64 if n_chains is None else positive_int(n_chains, "n_chains")
            d = self._pilot_gibbs(gen, C, n_sweeps, max_sweeps)
            if method == "gibbs" or d.mixing:
                return d
        R = 16 if n_chains is None else positive_int(n_chains, "n_chains")
        ladder = self.tempering_ladder(n_rungs, beta_hot=beta_hot)
        while True:
            d = self._pilot_tempering(gen, R, ladder, n_sweeps, max_sweeps)
            K = ladder.size
            low = d.swap_acceptance.size and d.swap_acceptance.min() < TEMPERING_MIN_ACCEPTANCE
            if n_rungs is not None or not low or K >= TEMPERING_MAX_RUNGS:
                return d
            K = min(TEMPERING_MAX_RUNGS, 1 + math.ceil(1.5 * (K - 1)))
            ladder = self.tempering_ladder(K, beta_hot=beta_hot)

    def _check_pilot_size(self, n_chains, n_sweeps, max_sweeps, n_rungs) -> None:
        """Refuse a pilot run whose recorded states or sweeps the machine cannot afford."""
        C = 64 if n_chains is None else n_chains
        K = TEMPERING_MAX_RUNGS if n_rungs is None else n_rungs
        T = max(n_sweeps, max_sweeps)  # the recorded run doubles from n_sweeps up to max_sweeps
        what = f"gibbs_diagnostics(n_chains={n_chains}, n_sweeps={n_sweeps}, max_sweeps={max_sweeps})"
        # recorded spins (int16) and energies, a boolean copy per lag; the chains' states and fields
        _checks.allocation(T * C * (4 * self.L + 8) + 8 * C * K * self.L * (self.q + 2), what)
        _checks.work(4 * T * C * self.L * self.q, what)

    def _pilot_gibbs(self, gen, n_chains, n_sweeps, max_sweeps) -> GibbsDiagnostics:
        s = gen.integers(0, self.q, size=(n_chains, self.L))
        Nq = self._init_fields(s)

        def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
            self._sweep(s, Nq, gen)
            return s, self._energies_from_fields(s, Nq)

        d = self._pilot(step, n_chains, n_sweeps, max_sweeps, None)
        d.ladder = np.array([self._beta])
        return d

    def _pilot_tempering(self, gen, R, ladder, n_sweeps, max_sweeps) -> GibbsDiagnostics:
        K = ladder.size
        s = gen.integers(0, self.q, size=(R * K, self.L))
        Nq = self._init_fields(s)
        who = np.tile(np.arange(K), (R, 1))
        base = np.arange(R) * K

        def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
            E = self._tempering_step(s, Nq, who, ladder, t, gen, tally)
            cold = base + who[:, -1]
            return s[cold], E[cold]

        tally = np.zeros((2, K - 1))
        d = self._pilot(step, R, n_sweeps, max_sweeps, tally)
        d.method = "tempering"
        d.ladder = ladder.copy()
        d.swap_acceptance = tally[0] / np.maximum(tally[1], 1)
        return d

    def _pilot(self, step, n_chains, n_sweeps, max_sweeps, tally) -> GibbsDiagnostics:
        """Burn in, record, measure tau; double the run until it is >= 50 tau (see above)."""
        burnt = 0
        T = n_sweeps
        t_global = 0
        while True:
            while burnt < T:
                step(t_global, None)
                t_global += 1
                burnt += 1
            states = np.empty((T, n_chains, self.L), dtype=np.int16)
            energies = np.empty((T, n_chains))
            if tally is not None:
                tally[:] = 0
            for t in range(T):
                states[t], energies[t] = step(t_global, tally)
                t_global += 1
            max_lag = T // 4
            rho_s = _spin_autocorrelation(states, self.q, max_lag)
            rho_e = _energy_autocorrelation(energies, max_lag)
            tau_s, w_s = integrated_autocorrelation_time(rho_s)
            tau_e, w_e = integrated_autocorrelation_time(rho_e)
            tau = max(tau_s, tau_e)
            found = w_s > 0 and w_e > 0
            if tally is not None:
                # tempering: fast local moves plus a small, slowly decaying tail (configurations
                # coming back from excursions up the ladder) that Sokal's window truncates
                g_s, ok_s = initial_monotone_tau(rho_s)
                g_e, ok_e = initial_monotone_tau(rho_e)
                tau_s = max(tau_s, g_s, _blocked_spin_tau(states, self.q, BLOCKS))
                tau_e = max(tau_e, g_e)
                tau = max(tau_s, tau_e)
                found = found and ok_s and ok_e
            if (found and T >= 50 * tau) or 2 * T > max_sweeps:
                break
            T *= 2
        half = T // 2
        m1, m2 = energies[:half].mean(axis=0), energies[half:].mean(axis=0)
        diff = float(np.mean(m2 - m1))
        se = float(np.std(m2 - m1, ddof=1) / math.sqrt(n_chains)) if n_chains > 1 else np.inf
        equilibrated = bool(abs(diff) <= 4 * se + 1e-12)
        between = max(1, math.ceil(tau * math.log(1.0 / DECORRELATION)))
        return GibbsDiagnostics(
            tau_int=float(tau),
            tau_spin=float(tau_s),
            tau_energy=float(tau_e),
            sweeps_between=int(between),
            burn_in=int(max(20, 10 * between)),
            rho_spin=rho_s,
            rho_energy=rho_e,
            window_found=bool(found),
            equilibrated=equilibrated,
            n_chains=n_chains,
            n_sweeps=T,
        )

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
            ladder is the one the pilot run settled on, or ``tempering_ladder(n_rungs, beta_hot)``
            when ``sweeps_between`` and ``burn_in`` are both given. ``"auto"``: the method the
            pilot run chose (Gibbs if it mixes, else tempering).

        Returns
        -------
        seqs : int array (n, L), or ``(seqs, diagnostics)`` if ``return_diagnostics`` (diagnostics
        is None when both ``sweeps_between`` and ``burn_in`` were given).
        """
        method = _checks.choice(method, METHODS, "method")
        n = positive_int(n, "n")
        gen = as_generator(rng)
        if n_chains is not None:
            n_chains = positive_int(n_chains, "n_chains")
        if sweeps_between is not None:
            sweeps_between = positive_int(sweeps_between, "sweeps_between")
        if burn_in is not None:
            burn_in = _checks.nonnegative_int(burn_in, "burn_in")
        return_diagnostics = _checks.flag(return_diagnostics, "return_diagnostics")
        if n_rungs is not None:
            n_rungs = positive_int(n_rungs, "n_rungs")
        beta_hot = positive(beta_hot, "beta_hot")
        C = min(n, 500 if n_chains is None else n_chains)
        K = n_rungs or 1
        what = f"sample(n={n}, sweeps_between={sweeps_between}, burn_in={burn_in}, n_rungs={n_rungs})"
        # the saved configurations (intp) and their copy; the chains' states and colour fields
        _checks.allocation(2 * 8 * (n + C) * self.L + 8 * C * K * self.L * (self.q + 2),
                           f"{what} of L = {self.L} sites")
        sweeps = (burn_in or 0) + (sweeps_between or 1) * (-(-n // C))
        _checks.work(sweeps * C * K * self.L * self.q, what)
        diag = None
        if sweeps_between is None or burn_in is None:
            diag = self.gibbs_diagnostics(rng=gen, method=method, n_rungs=n_rungs,
                                          beta_hot=beta_hot)
            if not diag.mixing:
                warnings.warn(
                    f"{diag.method} sampler at beta={self._beta:.4g} did not decorrelate within "
                    f"the pilot run ({diag.n_sweeps} sweeps; tau_int >= {diag.tau_int:.1f} "
                    "sweeps): samples may not be from the Boltzmann distribution",
                    RuntimeWarning,
                    stacklevel=2,
                )
            method = diag.method
            ladder = diag.ladder
        elif method == "auto":
            raise ValueError('method="auto" needs the pilot run: leave sweeps_between or burn_in '
                             "unset, or choose gibbs or tempering")
        else:
            ladder = (self.tempering_ladder(n_rungs, beta_hot=beta_hot)
                      if method == "tempering" else np.array([self._beta]))
        between = diag.sweeps_between if sweeps_between is None else positive_int(
            sweeps_between, "sweeps_between"
        )
        burn = diag.burn_in if burn_in is None else burn_in
        if method == "tempering":
            K = ladder.size
            C = min(n, max(16, 500 // K)) if n_chains is None else min(n_chains, n)
            s = gen.integers(0, self.q, size=(C * K, self.L))
            Nq = self._init_fields(s)
            who = np.tile(np.arange(K), (C, 1))
            base = np.arange(C) * K
            t = 0

            def advance() -> None:
                nonlocal t
                self._tempering_step(s, Nq, who, ladder, t, gen)
                t += 1

            def current() -> np.ndarray:
                return s[base + who[:, -1]]
        else:
            C = min(n, 500) if n_chains is None else min(n_chains, n)
            s = gen.integers(0, self.q, size=(C, self.L))
            Nq = self._init_fields(s)

            def advance() -> None:
                self._sweep(s, Nq, gen)

            def current() -> np.ndarray:
                return s
        per_chain = -(-n // C)
        for _ in range(burn):
            advance()
        out = np.empty((per_chain, C, self.L), dtype=np.intp)
        for k in range(per_chain):
            if k > 0:
                for _ in range(between):
                    advance()
            out[k] = current()
        # interleave chains so that the first n rows come from as many chains as possible
        seqs = out.reshape(per_chain * C, self.L)[:n].copy()
        if return_diagnostics:
            return seqs, diag
        return seqs

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
        tol: float = 0.005,
        max_iter: int = 30,
        method: str = "auto",
    ) -> float:
        """The inverse temperature at which sampled sequences differ at ``target_hamming`` of sites.

        The mean Hamming distance between independent samples falls from ``1 - 1/q``-ish at beta = 0
        towards 0 as beta grows. Bisection on ``log beta`` (after bracketing upwards from the
        model's beta by factors of sqrt 2), each trial drawing ``n_samples`` sequences with
        :meth:`sample` from the same seed (common random numbers), stops when the measured distance
        is within ``tol`` of the target. With ``method="auto"`` each trial first measures plain
        Gibbs (800 pilot sweeps at most); where it does not mix (no Sokal window, or the two halves
        of the run disagree) it switches to parallel tempering
        (``gibbs_diagnostics(method="tempering")``, automatic ladder, 3200 pilot steps at most),
        and stays with tempering at larger beta. ``method="gibbs"`` never tempers (raises where
        Gibbs stops mixing); ``method="tempering"`` always tempers. The model itself is not
        changed: use :meth:`with_beta`. Raises ValueError if the sampler(s) allowed do not mix
        before the target is reached.

        Measured (``PottsModel.random(L=20, q=20, seed=0).tune_beta(0.3, rng=0)``, one thread of
        the 2-core development machine): see benchmarks/README.md, "tune_beta with parallel
        tempering".
        """
        method = _checks.choice(method, METHODS, "method")
        target = positive(target_hamming, "target_hamming")
        ceiling = 1.0 - 1.0 / self.q
        if target >= ceiling:
            raise ValueError(
                f"target_hamming must be < 1 - 1/q = {ceiling:.4g} (the beta -> 0 limit), "
                f"got {target}"
            )
        tol = positive(tol, "tol")
        n_samples = positive_int(n_samples, "n_samples")
        if n_samples < 2:
            raise ValueError(f"n_samples must be >= 2 (a Hamming distance needs pairs), got {n_samples}")
        _checks.allocation(2 * 8 * (n_samples + 500) * self.L, f"tune_beta(n_samples={n_samples})")
        max_iter = positive_int(max_iter, "max_iter")
        symmetry = _colour_symmetry(self._J, self._U)
        if symmetry is not None:
            raise ValueError(
                f"target_hamming={target} cannot be reached at any beta: {symmetry}, so the "
                "Boltzmann measure is unchanged when the colours are permuted and has no fields "
                "to break that symmetry; every site's marginal is then uniform and two independent "
                f"samples differ at a site with probability exactly 1 - 1/q = {ceiling:.4g}, "
                "whatever beta is"
            )
        seed = int(as_generator(rng).integers(2**31))
        # smallest beta at which plain Gibbs was seen not to mix
        gibbs_fails = 0.0 if method == "tempering" else math.inf

        def hamming(b: float) -> float:
            nonlocal gibbs_fails
            m = self.with_beta(b)
            d = None
            if b < gibbs_fails:
                d = m.gibbs_diagnostics(rng=seed, max_sweeps=800)
                if not d.mixing:
                    if method == "gibbs":
                        raise ValueError(
                            f"cannot tune beta to target_hamming={target}: at beta={b:.4g} the "
                            f"Gibbs sampler does not decorrelate within {d.n_sweeps} sweeps "
                            f"(tau_int >= {d.tau_int:.1f}) before the target is reached"
                        )
                    gibbs_fails = b
            if b >= gibbs_fails:
                d = m.gibbs_diagnostics(rng=seed, method="tempering", max_sweeps=3200)
                if not d.mixing:
                    raise ValueError(
                        f"cannot tune beta to target_hamming={target}: at beta={b:.4g} neither "
                        f"Gibbs nor parallel tempering ({d.ladder.size} rungs) decorrelates within "
                        f"{d.n_sweeps} sweeps (tau_int >= {d.tau_int:.1f}) before the target is "
                        "reached"
                    )
            s = m.sample(n_samples, rng=seed, sweeps_between=d.sweeps_between, burn_in=d.burn_in,
                         method=d.method, n_rungs=d.ladder.size)
            return m.mean_hamming(s)

        lo, hi = 0.0, self._beta
        h = hamming(hi)
        it = 0
        while it < max_iter:  # bracket by factors of sqrt(2)
            if abs(h - target) <= tol:
                return float(hi)
            if h < target:
                break
            lo, hi = hi, math.sqrt(2.0) * hi
            h = hamming(hi)
            it += 1
        if h > target:
            raise ValueError(f"could not reach target_hamming={target} below beta={hi:.3g}")
        while it < max_iter:
            mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
            hm = hamming(mid)
            if abs(hm - target) <= tol:
                return float(mid)
            if hm > target:
                lo = mid
            else:
                hi = mid
            it += 1
        return float(math.sqrt(lo * hi) if lo > 0 else 0.5 * hi)


# ---------------------------------------------------------------------- helpers
def _colour_symmetry(J: np.ndarray, U: np.ndarray) -> str | None:
    """Why P(s) is invariant under a transitive group of colour permutations, or None.

    Checked exactly (no tolerance): ``J = 0`` (every sequence equally likely); ``U = c I + d``
    (constant diagonal and constant off-diagonal: invariant under every permutation of the
    colours, e.g. the standard Potts model U = identity); ``U`` circulant,
    ``U[a, b] = f((b - a) mod q)`` (invariant under the cyclic shifts). The model has no fields,
    so in each case the group acts transitively on colours and every marginal is uniform.
    """
    q = U.shape[0]
    if not np.any(J):
        return "the couplings J are all zero"
    off = U[~np.eye(q, dtype=bool)]
    if np.all(np.diag(U) == U[0, 0]) and np.all(off == off[0]):
        return (f"the colour matrix U = {U[0, 0]:.6g} I + {off[0]:.6g} (1 - I) treats all "
                f"{q} colours alike (U = identity is the standard Potts model)")
    idx = (np.arange(q)[None, :] - np.arange(q)[:, None]) % q
    if np.array_equal(U, U[0][idx]):
        return "the colour matrix U is circulant (unchanged by cyclic shifts of the colours)"
    return None


def _site(i, L: int) -> int:
    if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer):
        raise TypeError(f"site index i must be an integer in [0, {L}), got {type(i).__name__} {i!r}")
    if not 0 <= i < L:
        raise ValueError(f"site index i must lie in [0, L) = [0, {L}), got {i}")
    return int(i)


def _swap_log_ratio(beta_lo, beta_hi, e_lo, e_hi) -> np.ndarray:
    """Log Metropolis ratio of exchanging the states at rungs ``beta_lo`` and ``beta_hi``.

    The ladder's joint weight ``exp(-beta_lo E_lo - beta_hi E_hi)`` becomes
    ``exp(-beta_lo E_hi - beta_hi E_lo)``: the ratio is ``exp((beta_hi - beta_lo) (E_hi - E_lo))``.
    """
    return (beta_hi - beta_lo) * (e_hi - e_lo)


def _nll_from_logits(z: np.ndarray, s: np.ndarray) -> float:
    """``-(1/n) sum_mu sum_i log softmax(z[mu, i])[s_i^mu]`` with a stable log-sum-exp."""
    m = z.max(axis=2, keepdims=True)
    lse = m[:, :, 0] + np.log(np.exp(z - m).sum(axis=2))
    picked = np.take_along_axis(z, s[:, :, None], axis=2)[:, :, 0]
    return float((lse - picked).sum() / s.shape[0])


def _spin_autocorrelation(states: np.ndarray, q: int, max_lag: int) -> np.ndarray:
    """Normalised one-hot autocorrelation of recorded states (T, C, L), lags 0..max_lag."""
    T, C, L = states.shape
    p = np.stack([np.bincount(states[:, :, i].ravel(), minlength=q) for i in range(L)]) / (T * C)
    base = float((p**2).sum(axis=1).mean())
    var = 1.0 - base
    if var <= 1e-12:
        rho = np.zeros(max_lag + 1)
        rho[0] = 1.0
        return rho
    rho = np.empty(max_lag + 1)
    for t in range(max_lag + 1):
        same = np.mean(states[: T - t] == states[t:])
        rho[t] = (same - base) / var
    return rho


def _blocked_spin_tau(states: np.ndarray, q: int, n_blocks: int = BLOCKS) -> float:
    """Integrated autocorrelation time of the one-hot spins from the variance of block means.

    ``states`` (T, C, L) is cut into ``n_blocks`` blocks of ``B = T // n_blocks`` sweeps per chain;
    with ``f`` the colour frequencies of one block of one chain and ``p`` the overall frequencies,
    ``tau = (B / 2) sum_ia <(f_ia - p_ia)^2> / sum_ia p_ia (1 - p_ia)`` (1/2 for independent
    sweeps). Unlike a truncated sum of ``rho(t)`` it keeps a small, slowly decaying tail, as long
    as ``B`` is well above that tail's time scale.
    """
    T, C, L = states.shape
    B = T // n_blocks
    if B < 1:
        return 0.5
    X = states[: B * n_blocks].reshape(n_blocks, B, C, L)
    p = np.stack([np.bincount(X[:, :, :, i].ravel(), minlength=q) for i in range(L)])
    p = p / (B * n_blocks * C)
    var = float((p * (1.0 - p)).sum())
    if var <= 1e-12:
        return 0.5
    dev = 0.0
    for i in range(L):
        idx = (np.arange(n_blocks * C)[:, None] * q + np.moveaxis(X[:, :, :, i], 1, 2).reshape(-1, B))
        f = np.bincount(idx.ravel(), minlength=n_blocks * C * q).reshape(n_blocks * C, q) / B
        dev += float(((f - p[i]) ** 2).sum(axis=1).mean())
    return max(0.5, 0.5 * B * dev / var)


def _energy_autocorrelation(energies: np.ndarray, max_lag: int) -> np.ndarray:
    """Normalised autocorrelation of the energy (T, C), global mean, lags 0..max_lag."""
    T = energies.shape[0]
    x = energies - energies.mean()
    var = float(np.mean(x * x))
    rho = np.zeros(max_lag + 1)
    rho[0] = 1.0
    if var <= 1e-300:
        return rho
    for t in range(1, max_lag + 1):
        rho[t] = float(np.mean(x[: T - t] * x[t:])) / var
    return rho

