"""Parallel tempering of :class:`~replica_mlm.potts.model.PottsModel`: kernel, ladders, tuner.

* Replicas of a ladder of inverse temperatures, each step a Gibbs sweep of every rung followed by
  ``swap_rounds`` rounds of even/odd neighbour exchanges. Every round exchanges the temperature
  labels of rungs ``(k, k + 1)`` with probability ``min(1, exp((beta_{k+1} - beta_k)(E_{k+1} -
  E_k)))``, which satisfies detailed balance for the product measure ``prod_k exp(-beta_k H(s_k))``
  whatever the energies, so several rounds per sweep (energies unchanged between them) keep the
  target exact and let a configuration move several rungs per sweep.
* Ladders with equal swap acceptance: for Gaussian energy distributions the acceptance between two
  rungs is ``erfc(Delta Lambda / 2)`` with ``Lambda = int sigma_E(beta) d beta`` the thermodynamic
  length, so measured acceptances give ``Lambda`` along the ladder and rungs are placed at equal
  steps of it.
* The pilot run of the ladder (:func:`pilot_tempering`), the body of
  ``PottsModel.gibbs_diagnostics`` (:func:`diagnose`: Gibbs, then tempering with ladder growth)
  and the mean Hamming distance at every rung of one tempering run (:func:`tempering_scan`),
  which the temperature tuner (:mod:`replica_mlm.potts.tuning`) builds on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import erfcinv

from replica_mlm._base import checks as _checks
from replica_mlm.potts.clusters import cluster_form
from replica_mlm.potts.diagnostics import (
    METHODS,
    TEMPERING_MAX_RUNGS,
    TEMPERING_MIN_ACCEPTANCE,
    TEMPERING_TARGET_ACCEPTANCE,
    GibbsDiagnostics,
    cross_chain_hamming,
)
from replica_mlm.potts.kernel import PottsLike, energies_from_fields, gibbs_sweep, init_fields
from replica_mlm.potts.pilot import check_pilot_size, pilot_cluster, pilot_gibbs, pilot_run

__all__ = [
    "TemperingScan",
    "checked_ladder",
    "diagnose",
    "equal_acceptance_ladder",
    "geometric_ladder",
    "pilot_tempering",
    "tempering_scan",
    "tempering_step",
    "thermodynamic_length",
    "warm_start_allowed",
]


# ---------------------------------------------------------------------- parallel tempering
def _swap_log_ratio(beta_lo, beta_hi, e_lo, e_hi) -> np.ndarray:
    """Log Metropolis ratio of exchanging the states at rungs ``beta_lo`` and ``beta_hi``.

    The ladder's joint weight ``exp(-beta_lo E_lo - beta_hi E_hi)`` becomes
    ``exp(-beta_lo E_hi - beta_hi E_lo)``: the ratio is ``exp((beta_hi - beta_lo) (E_hi - E_lo))``.
    """
    return (beta_hi - beta_lo) * (e_hi - e_lo)


def tempering_step(
    model: PottsLike,
    s: np.ndarray,
    Nq: np.ndarray,
    who: np.ndarray,
    ladder: np.ndarray,
    t: int,
    gen: np.random.Generator,
    tally: np.ndarray | None = None,
    *,
    swap_rounds: int = 1,
) -> np.ndarray:
    """One parallel-tempering step of ``R`` replicas of a ``K``-rung ladder, in place.

    Chains ``r K .. r K + K - 1`` (rows of ``s`` and ``Nq``) form replica ``r``; ``who[r, k]``
    is the chain of replica ``r`` currently at rung ``k``. A Gibbs sweep of every chain at its
    rung's inverse temperature is followed by ``swap_rounds`` rounds of swap proposals between
    rungs ``(k, k + 1)`` for every ``k`` of alternating parity (round ``m`` of step ``t`` uses
    parity ``(t swap_rounds + m) mod 2``), each accepted with probability
    ``min(1, exp((beta_{k+1} - beta_k) (E_{k+1} - E_k)))`` (detailed balance for
    ``prod_k exp(-beta_k H(s_k))``). Swaps exchange temperature labels (``who``), not states.
    ``tally[0, k]`` / ``tally[1, k]`` count accepted / proposed swaps. Returns the energies of
    all chains after the sweep (swaps do not change them).
    """
    R, K = who.shape
    rows = np.arange(R)[:, None]
    rung = np.empty_like(who)
    rung[rows, who] = np.arange(K)
    gibbs_sweep(model, s, Nq, gen, betas=ladder[rung.ravel()])
    E = energies_from_fields(model, s, Nq)
    ER = E.reshape(R, K)
    for m in range(swap_rounds):
        ks = np.arange((t * swap_rounds + m) % 2, K - 1, 2)
        if not ks.size:
            continue
        A, B = who[:, ks], who[:, ks + 1]
        logr = _swap_log_ratio(ladder[ks], ladder[ks + 1], ER[rows, A], ER[rows, B])
        acc = np.log(gen.random(A.shape)) < logr
        who[:, ks] = np.where(acc, B, A)
        who[:, ks + 1] = np.where(acc, A, B)
        if tally is not None:
            tally[0, ks] += acc.sum(axis=0)
            tally[1, ks] += R
    return E


def geometric_ladder(beta: float, n_rungs: int | None, beta_hot: float, L: int) -> np.ndarray:
    """Geometric ladder from ``min(beta_hot, beta)`` to ``beta`` (ratio ``1 + 1/sqrt(L)`` by default)."""
    lo = min(beta_hot, beta)
    if n_rungs is None:
        if lo >= beta:
            return np.array([beta])
        ratio = 1.0 + 1.0 / math.sqrt(L)
        n_rungs = 1 + math.ceil(math.log(beta / lo) / math.log(ratio))
    if n_rungs == 1:
        return np.array([beta])
    ladder = np.geomspace(lo, beta, n_rungs)
    ladder[-1] = beta
    return ladder


def checked_ladder(model: PottsLike, ladder, n_rungs, beta_hot) -> np.ndarray:
    """An explicit ladder (checked: increasing, positive, ending at beta) or a geometric one."""
    beta = model.beta
    if ladder is None:
        return geometric_ladder(beta, n_rungs, beta_hot, model.L)
    lad = np.asarray(ladder, dtype=float)
    if (lad.ndim != 1 or lad.size < 1 or not np.all(np.isfinite(lad)) or lad[0] <= 0
            or np.any(np.diff(lad) <= 0) or not np.isclose(lad[-1], beta, rtol=1e-12)):
        raise ValueError("ladder must be a strictly increasing 1-d array of positive inverse "
                         f"temperatures ending at the model's beta = {beta:.6g}, got "
                         f"{np.array2string(np.asarray(ladder), precision=4)}")
    lad = lad.copy()
    lad[-1] = beta
    return lad


def thermodynamic_length(acceptance: np.ndarray, n_proposed: float = 1e4) -> np.ndarray:
    """Thermodynamic length between neighbouring rungs from swap acceptances, ``2 erfcinv(a)``.

    For Gaussian energy distributions of equal width ``sigma`` at two rungs ``Delta beta`` apart
    (mean shift ``-sigma^2 Delta beta``), the log swap ratio is normal with mean ``-x^2`` and
    variance ``2 x^2``, ``x = sigma Delta beta``, and the mean acceptance is ``erfc(x / 2)``.
    Acceptances are clipped to ``[1 / n_proposed, 1 - 1e-12]``.
    """
    a = np.clip(np.asarray(acceptance, dtype=float), 1.0 / max(n_proposed, 2.0), 1.0 - 1e-12)
    return 2.0 * erfcinv(a)


def equal_acceptance_ladder(
    ladder: np.ndarray,
    acceptance: np.ndarray,
    *,
    beta_lo: float,
    beta_hi: float,
    target: float,
    n_proposed: float = 1e4,
    max_rungs: int = TEMPERING_MAX_RUNGS,
) -> np.ndarray:
    """Ladder from ``beta_lo`` to ``beta_hi`` with the same predicted swap acceptance ``target``.

    The measured acceptances of ``ladder`` give the thermodynamic length ``Lambda`` at its rungs
    (:func:`thermodynamic_length`), piecewise linear in ``log beta`` (extrapolated linearly beyond
    the measured rungs). The new ladder has the fewest rungs whose equal steps in ``Lambda`` have
    predicted acceptance ``erfc(Delta Lambda / 2) >= target``, and places them at equal steps.
    """
    ladder = np.asarray(ladder, dtype=float)
    if ladder.size < 2:
        raise ValueError("equal_acceptance_ladder needs a measured ladder of at least 2 rungs")
    if not 0.0 < target < 1.0:
        raise ValueError(f"target acceptance must lie in (0, 1), got {target}")
    if not 0.0 < beta_lo <= beta_hi:
        raise ValueError(f"need 0 < beta_lo <= beta_hi, got {beta_lo}, {beta_hi}")
    if beta_lo == beta_hi:
        return np.array([beta_hi])
    x = np.log(ladder)
    lam = np.concatenate([[0.0], np.cumsum(thermodynamic_length(acceptance, n_proposed))])

    def length(lb: float) -> float:
        if lb <= x[0]:
            return float(lam[0] + (lb - x[0]) * (lam[1] - lam[0]) / (x[1] - x[0]))
        if lb >= x[-1]:
            return float(lam[-1] + (lb - x[-1]) * (lam[-1] - lam[-2]) / (x[-1] - x[-2]))
        return float(np.interp(lb, x, lam))

    l0, l1 = length(math.log(beta_lo)), length(math.log(beta_hi))
    step = 2.0 * float(erfcinv(target))
    n = min(max_rungs - 1, max(1, math.ceil((l1 - l0) / step - 1e-9)))
    grid = np.linspace(l0, l1, n + 1)
    # invert Lambda(log beta), monotone non-decreasing: extend the table to the two ends
    xs = np.concatenate([[math.log(beta_lo)], x[(x > math.log(beta_lo)) & (x < math.log(beta_hi))],
                         [math.log(beta_hi)]])
    ls = np.array([length(v) for v in xs])
    ls = np.maximum.accumulate(ls + 1e-12 * np.arange(ls.size))
    out = np.exp(np.interp(grid, ls, xs))
    out[0], out[-1] = beta_lo, beta_hi
    return out


def warm_start_allowed(start: GibbsDiagnostics, ladder: np.ndarray, R: int) -> bool:
    """Whether ``pilot_tempering(start=start)`` may warm-start ``R`` replicas of ``ladder``.

    Needs a tempering pilot that kept its chains, at least as many replicas, and a new top rung
    at most one of the earlier ladder's top spacings (in ``log beta``) above its coldest rung.
    """
    if start is None or start.method != "tempering" or start.state is None or R < start.n_chains:
        return False
    old = np.log(start.ladder)
    top = old[-1] + (old[-1] - old[-2] if old.size > 1 else 0.0)
    return bool(math.log(ladder[-1]) <= top + 1e-12)


def pilot_tempering(model: PottsLike, gen, R, ladder, n_sweeps, max_sweeps,
                    swap_rounds: int = 1, *, start: GibbsDiagnostics | None = None,
                    keep_record: bool = False, progress: bool | None = False) -> GibbsDiagnostics:
    """Pilot run of ``R`` replicas of ``ladder`` (see ``PottsModel.gibbs_diagnostics``).

    ``start``: an earlier tempering pilot of the same model whose chains this run continues.

    * Same ladder and number of replicas: the chains go on exactly, and the earlier run's
      unrecorded and recorded steps (``steps_burnt + n_sweeps``) count as this run's burn-in, as
      if the earlier run had gone on doubling its own recorded length (same burn-in rule: every
      recorded run of ``T`` steps follows at least ``T`` steps not recorded in it).
    * Another ladder (a new target beta) or more replicas (a *warm start*): each new rung starts
      from the earlier chain at the nearest rung in ``log beta``, replica ``r`` from earlier
      replica ``r mod R_earlier``; the chains then run ``10 sweeps_between`` steps (at least 20)
      of the earlier run on the new ladder before recording, and the steps they ran before count
      as burn-in. The two halves checks of the recorded run (energy and Hamming distance) judge
      whether that was enough. Allowed only while the new top rung lies at most one of the
      earlier ladder's top spacings above its coldest rung (else: ValueError).

    ``keep_record``: keep the coldest rung's recorded configurations and energies of the final
    run in ``record`` (the tuner reweights them; see :mod:`replica_mlm.potts.reweighting`).
    """
    K = ladder.size
    burnt = 0
    warm_burn = 0
    if start is not None:
        if (start.state is None or start.state[1] is None or start.method != "tempering"
                or start.state[0].shape[1] != model.L):
            raise ValueError("pilot_tempering(start=...) needs a tempering pilot of this model "
                             "that kept its chains")
        s_old, who_old = start.state
        same = (start.n_chains == R and start.ladder.shape == ladder.shape
                and np.array_equal(start.ladder, ladder))
        if same:
            s, who = s_old.copy(), who_old.copy()
        else:
            old = np.log(start.ladder)
            if not warm_start_allowed(start, ladder, R):
                raise ValueError(
                    f"pilot_tempering(start=...): a warm start needs at least the earlier "
                    f"{start.n_chains} replicas and a top rung at most one spacing above the "
                    f"earlier beta = {start.ladder[-1]:.6g}, got {R} replicas and "
                    f"beta = {ladder[-1]:.6g}")
            nearest = np.abs(np.log(ladder)[:, None] - old[None, :]).argmin(axis=1)
            K_old = start.ladder.size
            chains = ((np.arange(R) % start.n_chains)[:, None] * K_old
                      + who_old[np.arange(R) % start.n_chains][:, nearest])
            s = s_old[chains.ravel()].copy()
            who = np.tile(np.arange(K), (R, 1))
            warm_burn = max(20, 10 * start.sweeps_between)
        burnt = start.steps_burnt + start.n_sweeps + warm_burn
    else:
        s = gen.integers(0, model.q, size=(R * K, model.L))
        who = np.tile(np.arange(K), (R, 1))
    Nq = init_fields(model, s)
    base = np.arange(R) * K

    def step(t: int, tally) -> tuple[np.ndarray, np.ndarray]:
        E = tempering_step(model, s, Nq, who, ladder, t, gen, tally, swap_rounds=swap_rounds)
        cold = base + who[:, -1]
        return s[cold], E[cold]

    for t in range(warm_burn):
        step(t, None)
    tally = np.zeros((2, K - 1))
    d = pilot_run(model, step, R, n_sweeps, max_sweeps, tally, burnt, keep_record=keep_record,
                  progress=progress)
    d.method = "tempering"
    d.ladder = ladder.copy()
    d.swap_acceptance = tally[0] / np.maximum(tally[1], 1)
    d.swap_rounds = int(swap_rounds)
    d.state = (s.copy(), who.copy())
    # from random starts the ladder equilibrates more slowly than the cold rung decorrelates at
    # equilibrium (seed 9 of bench_tempering: 1000 samples after 60 steps of burn-in had mean
    # Hamming 0.319 +- 0.010 and 0.330 +- 0.008, after 600 steps 0.293 +- 0.008 and 0.299 +- 0.010,
    # pilot 0.299 +- 0.002): burn in at least as long as the pilot run did before its last record
    # ended, which its equilibration check covers
    d.burn_in = int(max(d.burn_in, 2 * d.n_sweeps))
    return d


#: default initial and largest recorded pilot run (``PottsModel.gibbs_diagnostics``, ``sample``)
PILOT_SWEEPS, PILOT_MAX_SWEEPS = 200, 3200


def diagnose(model: PottsLike, rng, *, n_chains, n_sweeps, max_sweeps, method, n_rungs,
             beta_hot, ladder, swap_rounds, progress: bool | None = False) -> GibbsDiagnostics:
    """The body of ``PottsModel.gibbs_diagnostics``: for ``"auto"``, Swendsen-Wang clusters where
    they apply (a ferromagnet), else (or if they do not mix) Gibbs, then tempering with ladder growth
    (``progress``: a bar over each pilot run's sweeps, :func:`replica_mlm.potts.pilot.pilot_run`)."""
    method = _checks.choice(method, METHODS, "method")
    n_sweeps = _checks.positive_int(n_sweeps, "n_sweeps")
    max_sweeps = _checks.positive_int(max_sweeps, "max_sweeps")
    gen = _checks.as_generator(rng)
    n_chains = _checks.optional(_checks.positive_int, n_chains, "n_chains")
    n_rungs = _checks.optional(_checks.positive_int, n_rungs, "n_rungs")
    beta_hot = _checks.positive(beta_hot, "beta_hot")
    check_pilot_size(model, n_chains, n_sweeps, max_sweeps, n_rungs)
    chains = 64 if n_chains is None else n_chains
    if method == "cluster" or (method == "auto" and cluster_form(model) is not None):
        # a ferromagnet of the Potts form: cluster updates are exact and decorrelate at least as
        # fast as Gibbs sweeps (10 x 10 lattice at beta = 0.44: tau 2.8 updates against Gibbs's
        # hundreds of sweeps), at the cost of about one sweep
        d = pilot_cluster(model, gen, chains, n_sweeps, max_sweeps, progress=progress)
        if method == "cluster" or d.mixing:
            return d
    if method in ("gibbs", "auto"):
        d = pilot_gibbs(model, gen, chains, n_sweeps, max_sweeps, progress=progress)
        if method == "gibbs" or d.mixing:
            return d
    R = 16 if n_chains is None else n_chains
    fixed = ladder is not None or n_rungs is not None
    ladder = checked_ladder(model, ladder, n_rungs, beta_hot)
    swap_rounds = _checks.positive_int(swap_rounds, "swap_rounds")
    while True:
        d = pilot_tempering(model, gen, R, ladder, n_sweeps, max_sweeps, swap_rounds, progress=progress)
        K = ladder.size
        low = d.swap_acceptance.size and d.swap_acceptance.min() < TEMPERING_MIN_ACCEPTANCE
        if fixed or not low or K >= TEMPERING_MAX_RUNGS:
            return d
        # rungs placed at equal predicted acceptance from the measured ones, at least 1.5x
        new = equal_acceptance_ladder(ladder, d.swap_acceptance, beta_lo=ladder[0],
                                      beta_hi=model.beta, target=TEMPERING_TARGET_ACCEPTANCE)
        if new.size < 1 + math.ceil(1.5 * (K - 1)):
            new = geometric_ladder(model.beta, min(TEMPERING_MAX_RUNGS, 1 + math.ceil(1.5 * (K - 1))),
                                   beta_hot, model.L)
        ladder = new


# ---------------------------------------------------------------------- scans
@dataclass
class TemperingScan:
    """Mean Hamming distance at every rung of one parallel-tempering run.

    Attributes
    ----------
    ladder : ndarray
        Inverse temperatures, hottest first.
    hamming, hamming_se : ndarray
        Cross-replica mean Hamming distance at each rung (:func:`cross_chain_hamming` over the
        recorded configurations of each replica at that rung) and its jackknife standard error.
    swap_acceptance : ndarray
        Measured acceptance between rungs ``k`` and ``k + 1``.
    n_replicas, n_steps : int
        Replicas of the ladder; steps burnt in, then steps recorded.
    """

    ladder: np.ndarray
    hamming: np.ndarray
    hamming_se: np.ndarray
    swap_acceptance: np.ndarray
    n_replicas: int
    n_steps: int


def tempering_scan(model: PottsLike, ladder: np.ndarray, gen: np.random.Generator, *,
                   n_replicas: int = 8, n_steps: int = 300,
                   swap_rounds: int = 1) -> TemperingScan:
    """Run ``n_replicas`` replicas of ``ladder``: ``n_steps`` steps of burn-in, ``n_steps`` recorded.

    The colours seen at each rung of each replica are counted after every recorded step; the mean
    Hamming distance at every rung then comes from one run. No mixing check: use it to locate a
    temperature, then check there with a pilot run.
    """
    ladder = np.asarray(ladder, dtype=float)
    K, R, L, q = ladder.size, n_replicas, model.L, model.q
    s = gen.integers(0, q, size=(R * K, L))
    Nq = init_fields(model, s)
    who = np.tile(np.arange(K), (R, 1))
    rows = np.arange(R)[:, None]
    tally = np.zeros((2, max(K - 1, 0)))
    for t in range(n_steps):
        tempering_step(model, s, Nq, who, ladder, t, gen, swap_rounds=swap_rounds)
    counts = np.zeros(R * K * L * q)
    offset = np.arange(R * K * L).reshape(R, K, L) * q
    for t in range(n_steps, 2 * n_steps):
        tempering_step(model, s, Nq, who, ladder, t, gen, tally, swap_rounds=swap_rounds)
        at_rung = s.reshape(R, K, L)[rows, who]  # (R, K, L), rung order
        counts += np.bincount((offset + at_rung).ravel(), minlength=counts.size)
    h, se = cross_chain_hamming(counts.reshape(R, K, L, q))
    return TemperingScan(ladder=ladder.copy(), hamming=np.atleast_1d(h),
                         hamming_se=np.atleast_1d(se),
                         swap_acceptance=tally[0] / np.maximum(tally[1], 1),
                         n_replicas=R, n_steps=n_steps)
