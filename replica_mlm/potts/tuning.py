"""The body of :meth:`PottsModel.tune_beta <replica_mlm.potts.model.PottsModel.tune_beta>`.

Checks the request (including the exact colour symmetries under which no beta changes the mean
Hamming distance), then runs the scan-then-verify tuner with parallel tempering
(:func:`replica_mlm.potts.tempering.tune_with_tempering`) or the plain-Gibbs bisection
(:func:`tune_gibbs`). See docs/potts.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from replica_mlm import _checks
from replica_mlm.potts.sampling import METHODS, TEMPERING_TARGET_ACCEPTANCE, check_pilot_size
from replica_mlm.potts.tempering import TuneResult, tune_with_tempering

if TYPE_CHECKING:  # pragma: no cover
    from replica_mlm.potts.model import PottsModel

__all__ = ["colour_symmetry", "tune", "tune_gibbs"]


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


def tune(model: PottsModel, target_hamming, rng, *, n_samples, tol, max_iter, method, n_replicas,
         max_sweeps, swap_rounds, beta_hot, return_result) -> float | TuneResult:
    """Check the arguments of ``tune_beta`` and run the tuner the method asks for."""
    method = _checks.choice(method, METHODS, "method")
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


def tune_gibbs(model: PottsModel, target: float, rng, *, n_samples: int, tol: float,
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
