"""Pilot runs of the samplers of :class:`~replica_mlm.potts.model.PottsModel`.

A pilot run burns in, records the spins and energies of its chains, applies the autocorrelation
estimators of :mod:`replica_mlm.potts.autocorrelation` (Sokal's window, Geyer's initial monotone
sequence, blocking) and doubles the run until it is long enough; it fills a
:class:`~replica_mlm.potts.diagnostics.GibbsDiagnostics`. :func:`pilot_run` does this for any
sampler step (plain Gibbs: :func:`pilot_gibbs`; Swendsen-Wang clusters: :func:`pilot_cluster`;
parallel tempering: :func:`replica_mlm.potts.tempering.pilot_tempering`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.progress import bar
from replica_mlm._base.stats import mean_stderr
from replica_mlm.potts.autocorrelation import BLOCKS, _blocked_spin_tau, _windowed_taus
from replica_mlm.potts.clusters import ClusterBonds, cluster_sweep
from replica_mlm.potts.diagnostics import (
    DECORRELATION,
    TEMPERING_MAX_RUNGS,
    GibbsDiagnostics,
    _colour_counts,
    cross_chain_hamming,
    hamming_drift,
    log,
)
from replica_mlm.potts.kernel import PottsLike, energies_from_fields, gibbs_sweep, init_fields

__all__ = ["check_pilot_size", "pilot_cluster", "pilot_gibbs", "pilot_run"]


def pilot_gibbs(model: PottsLike, gen, n_chains, n_sweeps, max_sweeps, *,
                progress: bool | None = False) -> GibbsDiagnostics:
    """Pilot run of ``n_chains`` independent Gibbs chains (see ``PottsModel.gibbs_diagnostics``)."""
    s = gen.integers(0, model.q, size=(n_chains, model.L))
    Nq = init_fields(model, s)

    def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
        gibbs_sweep(model, s, Nq, gen)
        return s, energies_from_fields(model, s, Nq)

    d = pilot_run(model, step, n_chains, n_sweeps, max_sweeps, None, progress=progress)
    d.ladder = np.array([model.beta])
    d.state = (s.copy(), None)
    return d


def pilot_cluster(model: PottsLike, gen, n_chains, n_sweeps, max_sweeps, *,
                  progress: bool | None = False) -> GibbsDiagnostics:
    """Pilot run of ``n_chains`` independent chains of Swendsen-Wang updates (a ferromagnet of the
    Potts form: :mod:`replica_mlm.potts.clusters`; ValueError naming why for any other model)."""
    bonds = ClusterBonds(model)
    s = gen.integers(0, model.q, size=(n_chains, model.L))

    def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
        cluster_sweep(bonds, s, gen)
        return s, bonds.energies(s)

    d = pilot_run(model, step, n_chains, n_sweeps, max_sweeps, None, progress=progress)
    d.method = "cluster"
    d.ladder = np.array([model.beta])
    d.state = (s.copy(), None)
    return d


def pilot_run(model: PottsLike, step: Callable, n_chains: int, n_sweeps: int, max_sweeps: int,
              tally: np.ndarray | None, burnt: int = 0, *,
              keep_record: bool = False, progress: bool | None = False) -> GibbsDiagnostics:
    """Burn in, record, measure tau; double the run until it is >= 50 tau.

    Parameters
    ----------
    model : PottsModel
        The model whose chains ``step`` advances (its ``L`` and ``q``).
    step : callable ``step(t, tally) -> (states, energies)``
        Advances every chain by one sweep (or tempering step) ``t`` and returns the
        configurations (n_chains, L) and energies (n_chains,) to record, at the model's beta.
    n_chains : int
        Chains (or replicas) that ``step`` returns.
    n_sweeps, max_sweeps : int
        Initial and largest length of the recorded run.
    tally : ndarray or None
        None for plain Gibbs; for tempering it collects swap counts (reset before every recorded
        run) and switches on the tempering estimates of tau (Geyer's and blocking besides
        Sokal's).
    burnt : int
        Steps the chains have already run (continued chains); every recorded run of ``T``
        steps follows at least ``T`` steps that were not recorded in it.
    keep_record : bool
        Keep the last recorded run's configurations and energies in ``record``.
    progress : bool or None
        A progress bar on stderr over the steps (their number is not known in advance: the run
        doubles until it is long enough); None: only when stderr is a terminal
        (:mod:`replica_mlm._base.progress`).

    Returns
    -------
    GibbsDiagnostics
        With ``method="gibbs"`` and no ladder or state; the callers fill those in.
    """
    T = n_sweeps
    t_global = 0
    steps = bar(progress=progress, desc="sampler pilot run", unit="sweep")
    while True:
        states, energies, burnt, t_global = _burn_and_record(model, step, n_chains, T, tally, burnt,
                                                             t_global, steps)
        rho_s, rho_e, tau_s, w_s, tau_e, w_e, tau, found = _taus(states, energies, model.q, T,
                                                                 tempering=tally is not None)
        equilibrated, drift, drift_se = _equilibrated(states, energies, model.q, n_chains, T)
        log.info("pilot: %d chains, T = %d recorded steps: tau_spin %.1f (Sokal window %d), "
                 "tau_energy %.1f (window %d), tau %.1f, window found %s, equilibrated %s "
                 "(Hamming drift %.4f +- %.4f)", n_chains, T, tau_s, w_s, tau_e, w_e, tau,
                 found, equilibrated, drift, drift_se)
        if (found and equilibrated and T >= 50 * tau) or 2 * T > max_sweeps:
            break
        burnt += T  # this record is not part of the next one: it counts as its burn-in
        T *= 2
    steps.close()
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


def _burn_and_record(model: PottsLike, step: Callable, n_chains: int, T: int,
                     tally: np.ndarray | None, burnt: int, t_global: int, steps):
    """Step until ``T`` steps were burnt, then record ``T`` steps of every chain.

    Returns the recorded states (T, n_chains, L) and energies (T, n_chains), the steps burnt and
    the global step count after the run; ``tally`` (tempering) is reset before the recording.
    """
    while burnt < T:
        step(t_global, None)
        t_global += 1
        burnt += 1
        steps.update()
    states = np.empty((T, n_chains, model.L), dtype=np.int16)
    energies = np.empty((T, n_chains))
    if tally is not None:
        tally[:] = 0
    for t in range(T):
        states[t], energies[t] = step(t_global, tally)
        t_global += 1
        steps.update()
    return states, energies, burnt, t_global


def _taus(states: np.ndarray, energies: np.ndarray, q: int, T: int, *, tempering: bool):
    """Autocorrelations and integrated times of a recorded run: whether a window was found.

    Returns ``(rho_spin, rho_energy, tau_spin, window_spin, tau_energy, window_energy, tau,
    found)``; under tempering tau also takes Geyer's and the blocking estimates into account.
    """
    rho_s, rho_e, (tau_s, w_s, g_s, ok_s), (tau_e, w_e, g_e, ok_e) = _windowed_taus(
        states, energies, q, T // 4, geyer=tempering)
    tau = max(tau_s, tau_e)
    found = w_s > 0 and w_e > 0
    if tempering:
        # tempering: fast local moves plus a small, slowly decaying tail (configurations
        # coming back from excursions up the ladder) that Sokal's window truncates
        tau_s = max(tau_s, g_s, _blocked_spin_tau(states, q, BLOCKS))
        tau_e = max(tau_e, g_e)
        tau = max(tau_s, tau_e)
        found = found and ok_s and ok_e
    return rho_s, rho_e, tau_s, w_s, tau_e, w_e, tau, found


def _equilibrated(states: np.ndarray, energies: np.ndarray, q: int, n_chains: int, T: int):
    """Whether the two halves of the run agree (mean energy; Hamming distance for >= 3 chains).

    Returns ``(equilibrated, hamming_drift, hamming_drift_se)``, the drift NaN under 3 chains.
    """
    half = T // 2
    m1, m2 = energies[:half].mean(axis=0), energies[half:].mean(axis=0)
    diff, se = mean_stderr(m2 - m1, single=math.inf)
    equilibrated = bool(abs(diff) <= 4 * se + 1e-12)
    drift, drift_se = (hamming_drift(states, q) if n_chains >= 3
                       else (math.nan, math.nan))
    if n_chains >= 3:
        # the Hamming distance is what the samples are for: its two halves must agree too
        equilibrated = equilibrated and bool(abs(drift) <= 4 * drift_se + 1e-12)
    return equilibrated, drift, drift_se


def check_pilot_size(model: PottsLike, n_chains, n_sweeps, max_sweeps, n_rungs, what=None) -> None:
    """Refuse a pilot run whose recorded states or sweeps the machine cannot afford."""
    C = 64 if n_chains is None else n_chains
    K = TEMPERING_MAX_RUNGS if n_rungs is None else n_rungs
    T = max(n_sweeps, max_sweeps)  # the recorded run doubles from n_sweeps up to max_sweeps
    what = what or f"gibbs_diagnostics(n_chains={n_chains}, n_sweeps={n_sweeps}, max_sweeps={max_sweeps})"
    # recorded spins (int16) and energies, a boolean copy per lag; the chains' states and fields
    _checks.allocation(T * C * (4 * model.L + 8) + 8 * C * K * model.L * (model.q + 2), what)
    _checks.work(4 * T * C * model.L * model.q, what, steps=4 * T * model.L)  # sweeps: loops over L sites


