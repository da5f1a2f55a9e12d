"""Sampling diagnostics of :class:`~replica_mlm.potts.model.PottsModel`.

Everything here acts on a model through its private Gibbs kernel (``_sweep``, ``_init_fields``,
``_energies_from_fields``) and is reached through the model's public methods
(:meth:`~replica_mlm.potts.model.PottsModel.gibbs_diagnostics`, ``sample``, ``tune_beta``).
Parallel tempering, its ladders and the temperature tuner are in
:mod:`replica_mlm.potts.tempering`.

* The pilot run that applies the autocorrelation estimators of
  :mod:`replica_mlm.potts.autocorrelation` (Sokal's window, Geyer's initial monotone
  sequence, blocking; re-exported here) and the :class:`GibbsDiagnostics` it fills.
* The mean Hamming distance between independent chains (:func:`cross_chain_hamming`): pairs of
  configurations from different chains only, with a jackknife standard error over chains.
* The Gibbs kernel (:func:`gibbs_sweep`) and the body of ``PottsModel.sample`` (:func:`draw`).
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from replica_mlm import _checks
from replica_mlm.potts.autocorrelation import (
    BLOCKS,
    _blocked_spin_tau,
    _windowed_taus,
    initial_monotone_tau,
    integrated_autocorrelation_time,
)
from replica_mlm.stats import mean_stderr

if TYPE_CHECKING:  # pragma: no cover
    from replica_mlm.potts.model import PottsModel

__all__ = [
    "GibbsDiagnostics",
    "cross_chain_hamming",
    "hamming_drift",
    "initial_monotone_tau",
    "integrated_autocorrelation_time",
]

#: autocorrelation left between two saved configurations of one chain: sweeps_between is chosen as
#: ceil(tau_int * log(1 / DECORRELATION)), i.e. exp(-sweeps_between / tau) <= DECORRELATION for an
#: exponentially decaying autocorrelation.
DECORRELATION = 0.01
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
METHODS = ("gibbs", "tempering", "auto")
#: default rounds of even/odd swaps after each tempering sweep
TEMPERING_SWAP_ROUNDS = 1
#: swap acceptance the tuner's equal-acceptance ladders are designed for
TEMPERING_TARGET_ACCEPTANCE = 0.5

#: progress of pilot runs and of the tuner (every doubling and every verification run, at INFO)
log = logging.getLogger("replica_mlm.potts.tempering")


# ---------------------------------------------------------------------- Hamming distance
def _colour_counts(states: np.ndarray, q: int) -> np.ndarray:
    """Colour counts per chain: states (T, C, L) -> counts (C, L, q)."""
    _, C, L = states.shape
    idx = (np.arange(C * L).reshape(1, C, L) * q + states).ravel()
    return np.bincount(idx, minlength=C * L * q).reshape(C, L, q).astype(float)


def cross_chain_hamming(counts: np.ndarray) -> tuple[float, float]:
    """Mean Hamming distance between independent chains, with its jackknife standard error.

    ``counts`` (C, L, q) [or (C, ..., L, q)]: colour counts of each of ``C`` independent chains,
    each over the same number of recorded configurations. With ``f_c`` the frequencies of chain
    ``c``, the estimate ``1 - (1/L) sum_ia sum_{c != c'} f_cia f_c'ia / (C (C - 1))`` averages the
    probability that two configurations differ at a site over pairs from *different* chains, which
    are independent, so it is unbiased for ``1 - (1/L) sum_ia p_ia^2`` (the mean Hamming distance
    of independent samples) however correlated each chain is in time. The standard error is the
    jackknife over chains (leave one chain out); it includes slow modes, provided the chains are
    independent. Needs ``C >= 3``. Returns arrays of the leading extra axes if there are any.
    """
    f = np.asarray(counts, dtype=float)
    C = f.shape[0]
    if C < 3:
        raise ValueError(f"cross_chain_hamming needs at least 3 chains, got {C}")
    f = f / f.sum(axis=-1, keepdims=True)
    S = f.sum(axis=0)
    Q = (f * f).sum(axis=0)
    h = 1.0 - ((S * S - Q).sum(axis=-1) / (C * (C - 1))).mean(axis=-1)
    S_loo = S[None] - f
    Q_loo = Q[None] - f * f
    h_loo = 1.0 - ((S_loo * S_loo - Q_loo).sum(axis=-1) / ((C - 1) * (C - 2))).mean(axis=-1)
    se = np.sqrt((C - 1) / C * ((h_loo - h_loo.mean(axis=0)) ** 2).sum(axis=0))
    if np.ndim(h) == 0:
        return float(h), float(se)
    return h, se


def hamming_drift(states: np.ndarray, q: int) -> tuple[float, float]:
    """Second-half minus first-half cross-chain Hamming distance of a run, jackknife error.

    ``states`` (T, C, L): the two halves' estimates (:func:`cross_chain_hamming`) share the chains,
    so the error of their difference is a jackknife over chains of the difference itself. Chains
    still relaxing from their random starts (a burn-in too short for the Hamming distance, which
    the energy can miss) show up as a drift.
    """
    half = states.shape[0] // 2
    f = np.stack([_colour_counts(states[:half], q), _colour_counts(states[half:2 * half], q)],
                 axis=1)  # (C, 2, L, q)
    C = f.shape[0]
    if C < 3:
        raise ValueError(f"hamming_drift needs at least 3 chains, got {C}")
    f = f / f.sum(axis=-1, keepdims=True)
    S, Q = f.sum(axis=0), (f * f).sum(axis=0)
    h = 1.0 - ((S * S - Q).sum(axis=-1) / (C * (C - 1))).mean(axis=-1)  # (2,)
    S_loo, Q_loo = S[None] - f, Q[None] - f * f
    h_loo = 1.0 - ((S_loo * S_loo - Q_loo).sum(axis=-1) / ((C - 1) * (C - 2))).mean(axis=-1)
    d_loo = h_loo[:, 1] - h_loo[:, 0]
    se = math.sqrt((C - 1) / C * float(((d_loo - d_loo.mean()) ** 2).sum()))
    return float(h[1] - h[0]), se


# ---------------------------------------------------------------------- diagnostics result
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
        Sweeps discarded at the start of each chain (``10 * sweeps_between``, at least 20; for
        tempering at least ``2 * n_sweeps``, the pilot's own burn-in plus its recorded run).
    rho_spin, rho_energy : ndarray
        Normalised autocorrelation functions at lags 0, 1, 2, ... sweeps, up to the lag where
        the window estimators stopped (at most a quarter of the recorded run).
    window_found : bool
        Whether Sokal's window criterion was met inside the measured lags (if not, ``tau_int`` is a
        lower bound).
    equilibrated : bool
        Whether the mean energies of the two halves of the measured run agree within 4 standard
        errors, and (3 chains or more) so do their mean Hamming distances (``hamming_drift``).
    n_chains, n_sweeps : int
        Size of the pilot run (for tempering, ``n_chains`` counts replicas of the ladder).
    method : str
        ``"gibbs"`` (independent single-site Gibbs chains) or ``"tempering"`` (parallel tempering;
        the autocorrelation is that of the configurations seen at the target, coldest, rung of each
        replica, one sweep being a Gibbs sweep of every rung followed by ``swap_rounds`` rounds of
        swaps).
    ladder : ndarray
        Inverse temperatures of the tempering ladder, hottest first, the last being the model's
        beta (``[beta]`` for plain Gibbs).
    swap_acceptance : ndarray
        Measured acceptance of swaps between rungs ``k`` and ``k + 1`` during the recorded part of
        the pilot run, shape ``(len(ladder) - 1,)`` (empty for plain Gibbs).
    swap_rounds : int
        Rounds of even/odd swaps after each sweep (tempering).
    hamming, hamming_se : float
        Mean Hamming distance at the model's beta from the recorded configurations of the pilot
        run (pairs from different chains / replicas, :func:`cross_chain_hamming`) and its
        jackknife standard error over chains.
    hamming_drift, hamming_drift_se : float
        Cross-chain Hamming distance of the second half of the recorded run minus that of the
        first half, and its jackknife standard error over chains (:func:`hamming_drift`).
    state : tuple (states, who) or None
        The chains where the pilot run ended: ``states`` (n_chains * len(ladder), L) and, for
        tempering, ``who`` (n_chains, len(ladder)), the chain of each replica at each rung (None
        for Gibbs). ``PottsModel.sample(..., resume=diagnostics)`` continues these chains, which
        passed the equilibration check, instead of burning in new ones from random sequences.
    steps_burnt : int
        Steps the chains ran before the last recorded run, not recorded in it (its burn-in: at
        least ``n_sweeps``).
    record : tuple (states, energies) or None
        Only if the pilot was asked to keep it: the last recorded run's configurations
        (n_sweeps, n_chains, L) and energies (n_sweeps, n_chains) at the model's beta.
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
    swap_rounds: int = 1
    hamming: float = math.nan
    hamming_se: float = math.nan
    hamming_drift: float = math.nan
    hamming_drift_se: float = math.nan
    state: tuple | None = field(default=None, repr=False)
    steps_burnt: int = 0
    record: tuple | None = field(default=None, repr=False)

    @property
    def mixing(self) -> bool:
        """Sokal window found and the two halves of the run agree (``window_found and equilibrated``)."""
        return bool(self.window_found and self.equilibrated)


# ---------------------------------------------------------------------- pilot runs
def pilot_gibbs(model: PottsModel, gen, n_chains, n_sweeps, max_sweeps) -> GibbsDiagnostics:
    """Pilot run of ``n_chains`` independent Gibbs chains (see ``PottsModel.gibbs_diagnostics``)."""
    s = gen.integers(0, model.q, size=(n_chains, model.L))
    Nq = model._init_fields(s)

    def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
        gibbs_sweep(model, s, Nq, gen)
        return s, model._energies_from_fields(s, Nq)

    d = _pilot(model, step, n_chains, n_sweeps, max_sweeps, None)
    d.ladder = np.array([model.beta])
    d.state = (s.copy(), None)
    return d


def _pilot(model: PottsModel, step, n_chains, n_sweeps, max_sweeps, tally,
           burnt: int = 0, *, keep_record: bool = False) -> GibbsDiagnostics:
    """Burn in, record, measure tau; double the run until it is >= 50 tau.

    ``tally`` is None for plain Gibbs; for tempering it collects swap counts and switches on the
    tempering estimates of tau (Geyer's and blocking besides Sokal's). ``burnt``: steps the
    chains have already run (continued chains); every recorded run of ``T`` steps follows at
    least ``T`` steps that were not recorded in it.
    """
    T = n_sweeps
    t_global = 0
    while True:
        while burnt < T:
            step(t_global, None)
            t_global += 1
            burnt += 1
        states = np.empty((T, n_chains, model.L), dtype=np.int16)
        energies = np.empty((T, n_chains))
        if tally is not None:
            tally[:] = 0
        for t in range(T):
            states[t], energies[t] = step(t_global, tally)
            t_global += 1
        rho_s, rho_e, (tau_s, w_s, g_s, ok_s), (tau_e, w_e, g_e, ok_e) = _windowed_taus(
            states, energies, model.q, T // 4, geyer=tally is not None)
        tau = max(tau_s, tau_e)
        found = w_s > 0 and w_e > 0
        if tally is not None:
            # tempering: fast local moves plus a small, slowly decaying tail (configurations
            # coming back from excursions up the ladder) that Sokal's window truncates
            tau_s = max(tau_s, g_s, _blocked_spin_tau(states, model.q, BLOCKS))
            tau_e = max(tau_e, g_e)
            tau = max(tau_s, tau_e)
            found = found and ok_s and ok_e
        half = T // 2
        m1, m2 = energies[:half].mean(axis=0), energies[half:].mean(axis=0)
        diff, se = mean_stderr(m2 - m1, single=math.inf)
        equilibrated = bool(abs(diff) <= 4 * se + 1e-12)
        drift, drift_se = (hamming_drift(states, model.q) if n_chains >= 3
                           else (math.nan, math.nan))
        if n_chains >= 3:
            # the Hamming distance is what the samples are for: its two halves must agree too
            equilibrated = equilibrated and bool(abs(drift) <= 4 * drift_se + 1e-12)
        log.info("pilot: %d chains, T = %d recorded steps: tau_spin %.1f (Sokal window %d), "
                 "tau_energy %.1f (window %d), tau %.1f, window found %s, equilibrated %s "
                 "(Hamming drift %.4f +- %.4f)", n_chains, T, tau_s, w_s, tau_e, w_e, tau,
                 found, equilibrated, drift, drift_se)
        if (found and equilibrated and T >= 50 * tau) or 2 * T > max_sweeps:
            break
        burnt += T  # this record is not part of the next one: it counts as its burn-in
        T *= 2
    between = max(1, math.ceil(tau * math.log(1.0 / DECORRELATION)))
    h, h_se = (cross_chain_hamming(_colour_counts(states, model.q)) if n_chains >= 3
               else (math.nan, math.nan))
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
        hamming=float(h),
        hamming_se=float(h_se),
        hamming_drift=float(drift),
        hamming_drift_se=float(drift_se),
        steps_burnt=int(burnt),
        record=(states, energies) if keep_record else None,
    )


# ---------------------------------------------------------------------- Gibbs kernel
def gibbs_sweep(model: PottsModel, s: np.ndarray, Nq: np.ndarray, gen: np.random.Generator,
                betas: np.ndarray | None = None) -> None:
    """One systematic-scan Gibbs sweep of all chains, in place, with incremental fields.

    For each site ``i`` the logits of all chains are ``beta Nq[:, :, i] U`` (C x q times
    q x q), or ``betas[c] (Nq[c, :, i] U)`` with one inverse temperature per chain (parallel
    tempering); a new colour is drawn by inverting the cumulative distribution; for the chains
    whose colour changed the fields of every site move by ``J[i]`` from the old to the new
    colour row.
    """
    C = s.shape[0]
    bU = model.colours if betas is not None else model.beta * model.colours
    bcol = None if betas is None else np.asarray(betas, dtype=float)[:, None]
    J = model.couplings
    u = gen.random((model.L, C))
    for i in range(model.L):
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


def check_pilot_size(model: PottsModel, n_chains, n_sweeps, max_sweeps, n_rungs, what=None) -> None:
    """Refuse a pilot run whose recorded states or sweeps the machine cannot afford."""
    C = 64 if n_chains is None else n_chains
    K = TEMPERING_MAX_RUNGS if n_rungs is None else n_rungs
    T = max(n_sweeps, max_sweeps)  # the recorded run doubles from n_sweeps up to max_sweeps
    what = what or f"gibbs_diagnostics(n_chains={n_chains}, n_sweeps={n_sweeps}, max_sweeps={max_sweeps})"
    # recorded spins (int16) and energies, a boolean copy per lag; the chains' states and fields
    _checks.allocation(T * C * (4 * model.L + 8) + 8 * C * K * model.L * (model.q + 2), what)
    _checks.work(4 * T * C * model.L * model.q, what, steps=4 * T * model.L)  # sweeps: loops over L sites


# ---------------------------------------------------------------------- sampling
def _resume_from(model: PottsModel, d, n_chains):
    """Check that ``d`` is a pilot run of this model that kept its chains; its chains to continue."""
    if not isinstance(d, GibbsDiagnostics):
        raise TypeError(f"resume must be the GibbsDiagnostics of a pilot run (e.g. "
                        f"tune_beta(..., return_result=True).diagnostics), got {type(d).__name__}")
    if d.state is None:
        raise ValueError("resume: these diagnostics did not keep the pilot's chains (state is None)")
    s, who = d.state
    K = d.ladder.size
    if (s.ndim != 2 or s.shape[1] != model.L or s.shape[0] != d.n_chains * K
            or s.min() < 0 or s.max() >= model.q):
        raise ValueError(f"resume: the pilot's chains {s.shape} do not belong to a model of "
                         f"L = {model.L} sites and q = {model.q} colours")
    if not np.isclose(d.ladder[-1], model.beta, rtol=1e-12):
        raise ValueError(f"resume: the pilot ran at beta = {d.ladder[-1]:.6g}, the model is at "
                         f"beta = {model.beta:.6g}")
    R = d.n_chains if n_chains is None else min(n_chains, d.n_chains)
    s = s[: R * K].copy()
    who = None if who is None else who[:R].copy()
    return s, who, R


def draw(model: PottsModel, n, rng, *, n_chains, sweeps_between, burn_in, return_diagnostics,
         method, n_rungs, beta_hot, ladder, swap_rounds, resume=None):
    """The body of :meth:`PottsModel.sample <replica_mlm.potts.model.PottsModel.sample>`."""
    from replica_mlm.potts.tempering import checked_ladder, tempering_step

    if resume is not None:
        return _draw_resumed(model, n, rng, resume, n_chains=n_chains,
                             sweeps_between=sweeps_between, burn_in=burn_in,
                             return_diagnostics=return_diagnostics)
    method = _checks.choice(method, METHODS, "method")
    n = _checks.positive_int(n, "n")
    gen = _checks.as_generator(rng)
    n_chains = _checks.optional(_checks.positive_int, n_chains, "n_chains")
    sweeps_between = _checks.optional(_checks.positive_int, sweeps_between, "sweeps_between")
    burn_in = _checks.optional(_checks.nonnegative_int, burn_in, "burn_in")
    return_diagnostics = _checks.flag(return_diagnostics, "return_diagnostics")
    n_rungs = _checks.optional(_checks.positive_int, n_rungs, "n_rungs")
    beta_hot = _checks.positive(beta_hot, "beta_hot")
    L, q, beta = model.L, model.q, model.beta
    C = min(n, 500 if n_chains is None else n_chains)
    K = n_rungs or 1
    what = f"sample(n={n}, sweeps_between={sweeps_between}, burn_in={burn_in}, n_rungs={n_rungs})"
    # the saved configurations (intp) and their copy; the chains' states and colour fields
    _checks.allocation(2 * 8 * (n + C) * L + 8 * C * K * L * (q + 2), f"{what} of L = {L} sites")
    sweeps = (burn_in or 0) + (sweeps_between or 1) * (-(-n // C))
    _checks.work(sweeps * C * K * L * q, what, steps=sweeps * L)  # a sweep: a loop over the L sites
    diag = None
    if sweeps_between is None or burn_in is None:
        diag = model.gibbs_diagnostics(rng=gen, method=method, n_rungs=n_rungs,
                                       beta_hot=beta_hot, ladder=ladder, swap_rounds=swap_rounds)
        if not diag.mixing:
            warnings.warn(
                f"{diag.method} sampler at beta={beta:.4g} did not decorrelate within "
                f"the pilot run ({diag.n_sweeps} sweeps; tau_int >= {diag.tau_int:.1f} "
                "sweeps): samples may not be from the Boltzmann distribution",
                RuntimeWarning,
                stacklevel=3,
            )
        method = diag.method
        ladder = diag.ladder
        swap_rounds = diag.swap_rounds
    elif method == "auto":
        raise ValueError('method="auto" needs the pilot run: leave sweeps_between or burn_in '
                         "unset, or choose gibbs or tempering")
    else:
        ladder = (checked_ladder(model, ladder, n_rungs, beta_hot)
                  if method == "tempering" else np.array([beta]))
        swap_rounds = _checks.positive_int(swap_rounds, "swap_rounds")
    between = diag.sweeps_between if sweeps_between is None else sweeps_between
    burn = diag.burn_in if burn_in is None else burn_in
    if method == "tempering":
        K = ladder.size
        C = min(n, max(16, 500 // K)) if n_chains is None else min(n_chains, n)
        s = gen.integers(0, q, size=(C * K, L))
        Nq = model._init_fields(s)
        who = np.tile(np.arange(K), (C, 1))
        base = np.arange(C) * K
        t = 0

        def advance() -> None:
            nonlocal t
            tempering_step(model, s, Nq, who, ladder, t, gen, None, swap_rounds)
            t += 1

        def current() -> np.ndarray:
            return s[base + who[:, -1]]
    else:
        C = min(n, 500) if n_chains is None else min(n_chains, n)
        s = gen.integers(0, q, size=(C, L))
        Nq = model._init_fields(s)

        def advance() -> None:
            gibbs_sweep(model, s, Nq, gen)

        def current() -> np.ndarray:
            return s
    per_chain = -(-n // C)
    for _ in range(burn):
        advance()
    out = np.empty((per_chain, C, L), dtype=np.intp)
    for k in range(per_chain):
        if k > 0:
            for _ in range(between):
                advance()
        out[k] = current()
    # interleave chains so that the first n rows come from as many chains as possible
    seqs = out.reshape(per_chain * C, L)[:n].copy()
    if return_diagnostics:
        return seqs, diag
    return seqs


def _draw_resumed(model: PottsModel, n, rng, d, *, n_chains, sweeps_between, burn_in,
                  return_diagnostics):
    """Continue the chains of pilot run ``d`` and save every ``sweeps_between`` steps."""
    from replica_mlm.potts.tempering import tempering_step

    n = _checks.positive_int(n, "n")
    gen = _checks.as_generator(rng)
    n_chains = _checks.optional(_checks.positive_int, n_chains, "n_chains")
    s, who, C = _resume_from(model, d, n_chains)
    between = d.sweeps_between if sweeps_between is None else _checks.positive_int(
        sweeps_between, "sweeps_between")
    burn = 0 if burn_in is None else _checks.nonnegative_int(burn_in, "burn_in")
    return_diagnostics = _checks.flag(return_diagnostics, "return_diagnostics")
    K, L = d.ladder.size, model.L
    per_chain = -(-n // C)
    what, sweeps = f"sample(n={n}, resume=<{d.method} pilot of {C} chains>)", burn + between * per_chain
    _checks.allocation(2 * 8 * (n + C) * L + 8 * C * K * L * (model.q + 2), what)
    _checks.work(sweeps * C * K * L * model.q, what, steps=sweeps * L)
    Nq = model._init_fields(s)
    ladder, rounds = d.ladder.copy(), d.swap_rounds
    base = np.arange(C) * K
    t = 0  # even/odd swap rounds alternate from here (either parity keeps the target exact)

    def advance() -> None:
        nonlocal t
        if who is None:
            gibbs_sweep(model, s, Nq, gen)
        else:
            tempering_step(model, s, Nq, who, ladder, t, gen, None, rounds)
        t += 1

    out = np.empty((per_chain, C, L), dtype=np.intp)
    for _ in range(burn):
        advance()
    for k in range(per_chain):
        for _ in range(between):  # the pilot's last state was recorded: step away from it first
            advance()
        out[k] = s if who is None else s[base + who[:, -1]]
    seqs = out.reshape(per_chain * C, L)[:n].copy()
    return (seqs, d) if return_diagnostics else seqs
