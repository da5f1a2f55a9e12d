"""What the samplers of :class:`~replica_mlm.potts.model.PottsModel` share: constants, the record
of a pilot run (:class:`GibbsDiagnostics`) and the mean Hamming distance between chains.

* The sampler constants (``METHODS``, ``DECORRELATION``, ``TEMPERING_*``) used by the Gibbs
  sampler (:mod:`~replica_mlm.potts.sampling`), parallel tempering
  (:mod:`~replica_mlm.potts.tempering`) and the tuner (:mod:`~replica_mlm.potts.tuning`).
* :class:`GibbsDiagnostics`, what a pilot run (:mod:`~replica_mlm.potts.pilot`) measured.
* The mean Hamming distance between independent chains (:func:`cross_chain_hamming`): pairs of
  configurations from different chains only, with a jackknife standard error over chains, and
  its drift between the two halves of a run (:func:`hamming_drift`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DECORRELATION",
    "METHODS",
    "TEMPERING_BETA_HOT",
    "TEMPERING_MAX_RUNGS",
    "TEMPERING_MIN_ACCEPTANCE",
    "TEMPERING_SWAP_ROUNDS",
    "TEMPERING_TARGET_ACCEPTANCE",
    "GibbsDiagnostics",
    "cross_chain_hamming",
    "hamming_drift",
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
#: the samplers: single-site Gibbs, parallel tempering, Swendsen-Wang clusters (ferromagnets of the
#: Potts form, :mod:`replica_mlm.potts.clusters`), or the pilot run's choice
METHODS = ("gibbs", "tempering", "cluster", "auto")
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
        ``"gibbs"`` (independent single-site Gibbs chains), ``"tempering"`` (parallel tempering;
        the autocorrelation is that of the configurations seen at the target, coldest, rung of each
        replica, one sweep being a Gibbs sweep of every rung followed by ``swap_rounds`` rounds of
        swaps) or ``"cluster"`` (independent chains of Swendsen-Wang updates, one update counted as
        a sweep).
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


