"""Random Potts instances tuned to a target mean Hamming distance, and samples drawn like the
tuner's pilot run (the fig. 2 and Potts validation sections' data).

:func:`tuned_instance` draws random instances until one's sampler mixes at the target (rejecting,
if asked, on the sampler's cost alone: a short pre-scan, :func:`prescan`, the pilot's sweeps);
:func:`draw_like_pilot` draws training and test sequences with the settings of the tuner's pilot.
"""

from __future__ import annotations

import time

import numpy as np

from replica_mlm.potts.model import PottsModel

__all__ = ["PRESCAN_REPLICAS", "PRESCAN_STEPS", "draw_like_pilot", "prescan", "tuned_instance"]


#: the cost rule for instances (the Potts validation section's docstring, "Instances"): the
#: pre-scan's replicas and steps (burn-in, then recorded) over the geometric ladder from 1 to ``max_beta``
PRESCAN_REPLICAS = 8
PRESCAN_STEPS = 200


def prescan(pm: PottsModel, *, max_beta: float, gen: np.random.Generator):
    """One short parallel-tempering scan of ``pm`` from beta = 1 to ``max_beta``
    (:func:`replica_mlm.potts.tempering.tempering_scan`, ``PRESCAN_REPLICAS`` replicas of a
    geometric ladder, ``PRESCAN_STEPS`` steps of burn-in then recorded); the mean Hamming distance
    at every rung. About 1.5 CPU seconds at L = q = 20."""
    from replica_mlm.potts.tempering import geometric_ladder, tempering_scan

    ladder = geometric_ladder(max_beta, None, min(1.0, max_beta), pm.L)
    return tempering_scan(pm, ladder, gen, n_replicas=PRESCAN_REPLICAS, n_steps=PRESCAN_STEPS)


def tuned_instance(*, L: int, q: int, target_hamming: float, method: str,
                   gens: list[np.random.Generator], max_beta: float | None = None,
                   max_pilot_sweeps: int | None = None, max_sweeps_between: int | None = None):
    """A random instance whose sampler mixes at ``target_hamming`` (``tune_beta`` checks; up to five
    instances, drawn from ``gens[0]``, tuned with ``gens[1]``).

    The optional limits reject an instance on the sampler's cost alone (never on what the checks
    later measure): ``max_beta``, a pre-scan (:func:`prescan`) whose coldest rung is still above
    the target puts the target above ``max_beta``; ``max_pilot_sweeps``, the ``max_sweeps`` of
    ``tune_beta`` (its pilot must mix within that many recorded steps); ``max_sweeps_between``, the
    tuned pilot's steps between samples.

    Returns the model at the tuned beta, the tempering tuner's result (None for ``method="gibbs"``)
    and the rejected instances (dicts: attempt, reason, measured numbers, CPU seconds spent);
    RuntimeError if none of five reaches the target.
    """
    tried: list[dict] = []
    for attempt in range(5):
        base = PottsModel.random(L=L, q=q, seed=gens[0])
        c0 = time.process_time()

        def reject(reason: str, attempt=attempt, c0=c0, **measured) -> None:
            tried.append({"attempt": attempt, "reason": reason, **measured,
                          "cpu_seconds": time.process_time() - c0})

        if max_beta is not None:
            sc = prescan(base, max_beta=max_beta, gen=gens[1])
            if sc.hamming[-1] > target_hamming:
                reject(f"pre-scan: mean Hamming distance {sc.hamming[-1]:.3f} +- "
                       f"{sc.hamming_se[-1]:.3f} at beta = {max_beta:g} is above the target "
                       f"{target_hamming}: the target lies above max_beta = {max_beta:g}",
                       prescan_ladder=sc.ladder, prescan_hamming=sc.hamming)
                continue
        try:
            if method == "gibbs":
                return (base.with_beta(base.tune_beta(target_hamming=target_hamming, rng=gens[1],
                                                      method="gibbs")), None, tried)
            # tempering tuner: its final pilot run (mixing checked) is the sampler's
            extra = {} if max_pilot_sweeps is None else {"max_sweeps": max_pilot_sweeps}
            tune = base.tune_beta(target_hamming=target_hamming, rng=gens[1], method=method,
                                  return_result=True, **extra)
        except ValueError as exc:
            reject(str(exc))
            continue
        between = tune.diagnostics.sweeps_between
        if max_sweeps_between is not None and between > max_sweeps_between:
            reject(f"the tuned pilot at beta = {tune.beta:.4g} needs {between} steps between "
                   f"samples, more than max_sweeps_between = {max_sweeps_between}",
                   beta=tune.beta, sweeps_between=between)
            continue
        return base.with_beta(tune.beta), tune, tried
    raise RuntimeError("no instance reached the target Hamming distance: "
                       + "; ".join(t["reason"] for t in tried))


def draw_like_pilot(pm: PottsModel, tune, n: int, *, gens: list[np.random.Generator],
                    resume: bool = False):
    """``n`` shuffled sequences (``gens[2]`` samples, ``gens[3]`` shuffles) with the sampler settings of
    the tuner's pilot run (its own ladder at equal swap acceptance), or of plain Gibbs diagnostics
    where ``tune`` is None; returns the diagnostics used and the sequences. ``resume``: continue
    the pilot's own chains (``PottsModel.sample(resume=...)``; they passed its equilibration
    checks, so no second burn-in) instead of new chains from random sequences."""
    diag = pm.gibbs_diagnostics(rng=gens[2], method="auto") if tune is None else tune.diagnostics
    if resume and tune is not None:
        data = pm.sample(n, rng=gens[2], resume=diag)
    else:
        data = pm.sample(n, rng=gens[2], sweeps_between=diag.sweeps_between,
                         burn_in=diag.burn_in, method=diag.method, ladder=diag.ladder,
                         swap_rounds=diag.swap_rounds)
    gens[3].shuffle(data)
    return diag, data
