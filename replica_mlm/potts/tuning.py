"""The body of :meth:`PottsModel.tune_beta <replica_mlm.potts.model.PottsModel.tune_beta>`.

Checks the request (including the exact colour symmetries under which no beta changes the mean
Hamming distance), then runs the scan-then-verify tuner with parallel tempering
(:func:`tune_with_tempering`, result :class:`TuneResult`) or the plain-Gibbs bisection
(:func:`tune_gibbs`). See docs/potts.md, "Tuning the temperature".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.potts.diagnostics import (
    METHODS,
    TEMPERING_TARGET_ACCEPTANCE,
    GibbsDiagnostics,
    log,
)
from replica_mlm.potts.kernel import PottsLike
from replica_mlm.potts.pilot import check_pilot_size, pilot_gibbs
from replica_mlm.potts.reweighting import reweighted_beta
from replica_mlm.potts.tempering import (
    TemperingScan,
    equal_acceptance_ladder,
    geometric_ladder,
    pilot_tempering,
    tempering_scan,
    warm_start_allowed,
)

__all__ = ["TuneResult", "colour_symmetry", "tune", "tune_gibbs", "tune_with_tempering"]


@dataclass
class TuneResult:
    """What :meth:`PottsModel.tune_beta` found (``return_result=True``).

    Attributes
    ----------
    beta : float
        The returned inverse temperature.
    hamming, hamming_se : float
        Mean Hamming distance measured at ``beta`` by the final pilot run (pairs of configurations
        from different replicas) and its jackknife standard error over replicas.
    target, tol : float
        What was asked: ``|hamming - target| <= tol`` holds for the returned beta.
    diagnostics : GibbsDiagnostics
        The final pilot run at ``beta`` (mixing checked; use its ladder, ``sweeps_between`` and
        ``burn_in`` to sample).
    trials : list of (beta, hamming, hamming_se, n_replicas)
        Every verification run, in order.
    scans : list of TemperingScan
        The scans that located the target (empty for plain-Gibbs bisection).
    seconds : float
        Wall time.
    """

    beta: float
    hamming: float
    hamming_se: float
    target: float
    tol: float
    diagnostics: GibbsDiagnostics
    trials: list = field(default_factory=list)
    scans: list = field(default_factory=list)
    seconds: float = 0.0


def colour_symmetry(J: np.ndarray, U: np.ndarray) -> str | None:
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


def tune(model: PottsLike, target_hamming, rng, *, n_samples, tol, max_iter, method, n_replicas,
         max_sweeps, swap_rounds, beta_hot, return_result) -> float | TuneResult:
    """Check the arguments of ``tune_beta`` and run the tuner the method asks for."""
    method = _checks.choice(method, tuple(m for m in METHODS if m != "cluster"), "method")
    target = _checks.positive(target_hamming, "target_hamming")
    ceiling = 1.0 - 1.0 / model.q
    if target >= ceiling:
        raise ValueError(
            f"target_hamming must be < 1 - 1/q = {ceiling:.4g} (the beta -> 0 limit), "
            f"got {target}"
        )
    n_samples = _checks.positive_int(n_samples, "n_samples")
    if n_samples < 2:
        raise ValueError(f"n_samples must be >= 2 (a Hamming distance needs pairs), got {n_samples}")
    _checks.allocation(2 * 8 * (n_samples + 500) * model.L, f"tune_beta(n_samples={n_samples})")
    symmetry = colour_symmetry(model.couplings, model.colours)
    if symmetry is not None:
        raise ValueError(
            f"target_hamming={target} cannot be reached at any beta: {symmetry}, so the "
            "Boltzmann measure is unchanged when the colours are permuted and has no fields "
            "to break that symmetry; every site's marginal is then uniform and two independent "
            f"samples differ at a site with probability exactly 1 - 1/q = {ceiling:.4g}, "
            "whatever beta is"
        )
    tol = _checks.positive((0.005 if method == "gibbs" else 0.01) if tol is None else tol, "tol")
    max_iter = _checks.positive_int(max_iter, "max_iter")
    if method != "gibbs":
        n_replicas = max(3, _checks.positive_int(n_replicas, "n_replicas"))
        max_sweeps = _checks.positive_int(max_sweeps, "max_sweeps")
        # the largest verification run: up to 4 n_replicas replicas, max_sweeps recorded steps
        check_pilot_size(model, 4 * n_replicas, max_sweeps, max_sweeps, None,
                         f"tune_beta(n_replicas={n_replicas}, max_sweeps={max_sweeps})")
        res = tune_with_tempering(
            model, target, _checks.as_generator(rng), tol=tol,
            beta_hot=_checks.positive(beta_hot, "beta_hot"), n_replicas=n_replicas,
            max_sweeps=max_sweeps, acceptance=TEMPERING_TARGET_ACCEPTANCE,
            swap_rounds=_checks.positive_int(swap_rounds, "swap_rounds"), max_iter=max_iter)
        return res if return_result else res.beta
    if return_result:
        raise ValueError('return_result=True needs method="auto" or "tempering"')
    return tune_gibbs(model, target, rng, n_samples=n_samples, tol=tol, max_iter=max_iter)


def tune_gibbs(model: PottsLike, target: float, rng, *, n_samples: int, tol: float,
               max_iter: int) -> float:
    """Bisection on ``log beta`` with plain Gibbs (``tune_beta(method="gibbs")``).

    Brackets upwards from the model's beta by factors of sqrt 2, each trial drawing ``n_samples``
    sequences from the same seed (common random numbers), until the measured distance is within
    ``tol`` of the target; raises where Gibbs stops mixing (800 pilot sweeps at most).
    """
    seed = int(_checks.as_generator(rng).integers(2**31))

    def hamming(b: float) -> float:
        m = model.with_beta(b)
        d = m.gibbs_diagnostics(rng=seed, max_sweeps=800)
        if not d.mixing:
            raise ValueError(
                f"cannot tune beta to target_hamming={target}: at beta={b:.4g} the "
                f"Gibbs sampler does not decorrelate within {d.n_sweeps} sweeps "
                f"(tau_int >= {d.tau_int:.1f}) before the target is reached; "
                'method="auto" uses parallel tempering there'
            )
        s = m.sample(n_samples, rng=seed, sweeps_between=d.sweeps_between, burn_in=d.burn_in)
        return m.mean_hamming(s)

    lo, hi = 0.0, model.beta
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


# ---------------------------------------------------------------------- the tempering tuner
def _crossing(scan: TemperingScan, target: float) -> tuple[float, float]:
    """Interpolated ``beta`` where the scan's Hamming distance crosses ``target``, and the slope.

    Linear in ``log beta`` between the coldest rung still at or above the target and the next one.
    The slope ``-dh / d log beta`` is a least-squares fit over the rungs within 0.1 of the target
    (at least the two bracketing rungs), floored at a tenth of the scan's mean slope.
    """
    h, x = scan.hamming, np.log(scan.ladder)
    k = int(np.flatnonzero(h >= target).max())
    k = min(k, h.size - 2)
    w = (h[k] - target) / (h[k] - h[k + 1]) if h[k] > h[k + 1] else 0.5
    xb = x[k] + w * (x[k + 1] - x[k])
    near = np.abs(h - target) < 0.1
    near[k:k + 2] = True
    idx = np.flatnonzero(near)
    slope = -float(np.polyfit(x[idx], h[idx], 1)[0])
    mean_slope = (h[0] - h[-1]) / (x[-1] - x[0])
    return float(math.exp(xb)), max(slope, 0.1 * mean_slope, 1e-3)


def _scan_to_target(model: PottsLike, target: float, gen: np.random.Generator, *,
                    beta_hot: float, n_replicas: int, acceptance: float, swap_rounds: int,
                    max_iter: int) -> tuple[list[TemperingScan], float]:
    """Step 1 of :func:`tune_with_tempering`: scans until the Hamming distance crosses the target.

    Returns the scans (the last one crosses ``target``) and the hottest inverse temperature
    ``b_lo`` they reached.
    """
    b_lo = min(beta_hot, model.beta)
    b_top = 2.0 * max(model.beta, b_lo)
    scans: list[TemperingScan] = []
    for _ in range(max_iter):
        if scans:
            prev = scans[-1]
            lad = equal_acceptance_ladder(prev.ladder, prev.swap_acceptance, beta_lo=b_lo,
                                          beta_hi=b_top, target=acceptance)
        else:
            lad = geometric_ladder(b_top, None, b_lo, model.L)
        sc = tempering_scan(model, lad, gen, n_replicas=max(4, n_replicas // 2), n_steps=400,
                            swap_rounds=swap_rounds)
        scans.append(sc)
        log.info("scan: %d rungs %.3g..%.3g, Hamming %.4f..%.4f, acceptance %.2f..%.2f",
                 lad.size, lad[0], lad[-1], sc.hamming[0], sc.hamming[-1],
                 sc.swap_acceptance.min(), sc.swap_acceptance.max())
        if sc.hamming[0] < target:
            b_lo /= 4.0
        elif sc.hamming[-1] > target:
            b_top *= 2.0
        else:
            return scans, b_lo
    raise ValueError(f"cannot tune beta to target_hamming={target}: the Hamming distance did "
                     f"not cross the target between beta={b_lo:.3g} and beta={b_top:.3g}")


def _verification_run(model: PottsLike, beta: float, gen: np.random.Generator, *,
                      b_lo: float, ref: TemperingScan, R: int, T: int, max_sweeps: int,
                      acceptance: float, swap_rounds: int,
                      prev: GibbsDiagnostics | None) -> GibbsDiagnostics:
    """Step 3 of :func:`tune_with_tempering`: the pilot run at ``beta``.

    Plain Gibbs if ``beta <= b_lo``, else tempering down from ``b_lo`` on a ladder with equal
    predicted acceptance (from the scan ``ref``), continuing or warm-starting the chains of the
    previous tempering run ``prev`` where allowed.
    """
    m = model.with_beta(beta)
    if beta <= b_lo:
        return pilot_gibbs(m, gen, max(R, 3), T, max_sweeps)
    lad = equal_acceptance_ladder(ref.ladder, ref.swap_acceptance, beta_lo=b_lo,
                                  beta_hi=beta, target=acceptance)
    start = prev if prev is not None and warm_start_allowed(prev, lad, R) else None
    return pilot_tempering(m, gen, R, lad, T, max_sweeps, swap_rounds, start=start,
                           keep_record=True)


def _log_trial(d: GibbsDiagnostics, beta: float, R: int) -> None:
    log.info("trial: beta %.4f, %d replicas x %d rungs, T = %d: Hamming %.4f +- %.4f, "
             "tau %.1f, mixing %s (window %s, halves %s), acceptance %.2f..%.2f", beta, R,
             d.ladder.size, d.n_sweeps, d.hamming, d.hamming_se, d.tau_int, d.mixing,
             d.window_found, d.equilibrated,
             d.swap_acceptance.min() if d.swap_acceptance.size else math.nan,
             d.swap_acceptance.max() if d.swap_acceptance.size else math.nan)


def _more_precise(d: GibbsDiagnostics, beta: float, target: float, tol: float, *, T: int, R: int,
                  n_replicas: int, max_sweeps: int) -> tuple[int, int]:
    """Step 3, undecided: the recorded length ``T`` and replicas ``R`` of the next, more precise run.

    A longer run first, then more replicas (up to ``4 n_replicas``); ValueError beyond.
    """
    # At equal cost R T both lower the error, but only a longer run gives the window estimators
    # more lags: on PottsModel.random(L=20, q=20, seed=8) Geyer's window closed at T = 3200 with
    # 32 and 64 replicas and not by T = 6400 with 128 (the lower the noise, the later a slow
    # positive tail reads as finished). Either way the next run continues this one's chains
    # (more replicas: copies of them, burnt in apart on the same ladder)
    se = d.hamming_se
    factor = min(4, math.ceil((3.0 * se / tol) ** 2))
    if T < max_sweeps:
        return min(max_sweeps, T * factor), R
    if R * factor <= 4 * n_replicas:
        return T, R * factor
    raise ValueError(
        f"cannot tune beta to target_hamming={target}: at beta={beta:.4g} the "
        f"Hamming distance {d.hamming:.4f} +- {se:.4f} ({R} replicas, {T} steps) "
        f"is not precise enough for tol={tol} (standard error <= tol / 3)")


def _moved_beta(d: GibbsDiagnostics, beta: float, target: float, slope: float, q: int,
                trials: list) -> tuple[float, float]:
    """Step 4 of :func:`tune_with_tempering`: the next beta and slope after a run clearly off.

    Reweighting of the run's record where it reaches the target, else a Newton step in
    ``log beta`` (with the secant through the previous trial at another beta, if sensible).
    """
    moved = reweighted_beta(d, target, q) if d.record is not None else None
    if moved is not None:
        log.info("reweighting the run at beta %.4f puts the target at beta %.4f", beta, moved)
        return moved, slope
    distinct = [tr for tr in trials if abs(tr[0] - beta) > 1e-12 * beta]
    if distinct:  # secant with the previous trial at another beta, if it is sensible
        b0, h0 = distinct[-1][0], distinct[-1][1]
        sec = -(d.hamming - h0) / (math.log(beta) - math.log(b0))
        if sec > 0.1 * slope:
            slope = sec
    return beta * math.exp((d.hamming - target) / slope), slope


def tune_with_tempering(
    model: PottsLike,
    target: float,
    gen: np.random.Generator,
    *,
    tol: float,
    beta_hot: float,
    n_replicas: int,
    max_sweeps: int,
    acceptance: float,
    swap_rounds: int,
    max_iter: int,
) -> TuneResult:
    """Scan-then-verify tuner behind ``PottsModel.tune_beta(method="tempering" | "auto")``.

    1. Scans (:func:`~replica_mlm.potts.tempering.tempering_scan`) over a ladder from
       ``b_lo = min(beta_hot, beta)`` to ``b_top = 2 max(beta, b_lo)`` (``n_replicas / 2``
       replicas, 400 steps of burn-in and 400 recorded), doubling ``b_top`` (dividing ``b_lo``
       by 4) until the Hamming distance at the coldest (hottest) rung is below (above) the
       target; each new ladder has equal predicted swap acceptance from the previous scan's
       measured acceptances.
    2. ``beta`` where the scan crosses the target, by interpolation in ``log beta``.
    3. Verification: a pilot run at ``beta`` (tempering down from ``b_lo`` with an
       equal-acceptance ladder, or plain Gibbs if ``beta <= b_lo``) must mix; its cross-replica
       Hamming distance must lie within ``tol`` of the target with a standard error below
       ``tol / 3``. If undecided, the run is repeated at the same beta with more recorded steps
       (up to ``max_sweeps``; the longer run continues the previous run's chains), then more
       replicas (up to ``4 n_replicas``; warm-started from copies of the previous chains);
       ValueError if that is still not precise enough.
    4. Move: if the run is more than ``tol + 2 se`` away, its record is reweighted to the beta
       where it predicts the target
       (:func:`~replica_mlm.potts.reweighting.reweighted_beta`); if that lies beyond the
       weights' reach, a Newton step in ``log beta`` (the scan's slope, then the secant). The
       next run warm-starts from the previous chains
       (:func:`~replica_mlm.potts.tempering.pilot_tempering`).

    See docs/potts.md, "Tuning the temperature".
    """
    t0 = time.perf_counter()
    scans, b_lo = _scan_to_target(model, target, gen, beta_hot=beta_hot, n_replicas=n_replicas,
                                  acceptance=acceptance, swap_rounds=swap_rounds,
                                  max_iter=max_iter)
    beta, slope = _crossing(scans[-1], target)
    R = n_replicas
    T = min(200, max_sweeps)
    trials: list[tuple[float, float, float, int]] = []
    prev = None  # the previous tempering pilot: the next run continues or warm-starts its chains
    for _ in range(max_iter):
        d = _verification_run(model, beta, gen, b_lo=b_lo, ref=scans[-1], R=R, T=T,
                              max_sweeps=max_sweeps, acceptance=acceptance,
                              swap_rounds=swap_rounds, prev=prev)
        if prev is not None:
            prev.record = None
        prev = d if d.method == "tempering" else None
        trials.append((beta, d.hamming, d.hamming_se, R))
        _log_trial(d, beta, R)
        T = d.n_sweeps  # the next run starts at the length this one needed
        if not d.mixing:
            raise ValueError(
                f"cannot tune beta to target_hamming={target}: at beta={beta:.4g} the "
                f"{d.method} sampler ({d.ladder.size} rung(s), {R} replicas) does not decorrelate "
                f"within {d.n_sweeps} sweeps (tau_int >= {d.tau_int:.1f}; Sokal/Geyer window "
                f"found: {d.window_found}, halves agree: {d.equilibrated})")
        off, se = abs(d.hamming - target), d.hamming_se
        if off <= tol and se <= tol / 3.0:
            d.record = None
            return TuneResult(beta=float(beta), hamming=d.hamming, hamming_se=se,
                              target=target, tol=tol, diagnostics=d, trials=trials, scans=scans,
                              seconds=time.perf_counter() - t0)
        if off <= tol + 2.0 * se and se > tol / 3.0:
            # undecided: measure again at this beta, more precisely
            T, R = _more_precise(d, beta, target, tol, T=T, R=R, n_replicas=n_replicas,
                                 max_sweeps=max_sweeps)
            continue
        beta, slope = _moved_beta(d, beta, target, slope, model.q, trials)
    raise ValueError(f"cannot tune beta to target_hamming={target} within tol={tol} in "
                     f"{max_iter} verification runs; trials (beta, hamming, se, replicas): "
                     f"{[(round(a, 4), round(b, 4), round(c, 4), r) for a, b, c, r in trials]}")
