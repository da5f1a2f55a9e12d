"""One-pass SGD on the discrete data of an Ising model: fresh Boltzmann samples at every step
(docs/dynamics.md, section "Discrete data").

The masked spin ``s_i`` is the label and the other spins ``s_-i`` the inputs, learnt by the
logistic loss (the pseudo-likelihood of factored attention) with the update of
:func:`replica_mlm.simulate_sgd`. Each run draws its own stream of equilibrium sequences (one
sampler pilot run serves all runs; thinning from the measured autocorrelation) and never reuses
one; its test measures are Rao-Blackwellised on fresh test sequences
(:func:`.pseudo_likelihood.site_measures`). The theory beside it is :func:`replica_mlm.online_sgd`
on the site's Gaussian-equivalent task (``model.masked_site(i)``): its gap to the simulation is
what the Gaussian equivalence misses.
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.progress import bar
from replica_mlm.learners.pseudo_likelihood import _sampler, site_measures
from replica_mlm.theory.sides import losses


def ising_runs(model, *, site: int, steps: np.ndarray, lr: float, lam: float, batch: int, seeds: int,
               rng, n_test: int, progress=None) -> dict[str, np.ndarray]:
    """Measures (seeds, k) of ``seeds`` SGD runs on site ``site`` of an Ising model, recorded after
    each of ``steps`` (non-decreasing order not required)."""
    from replica_mlm.tasks.ising_site import require_ising, spins

    require_ising(model, "simulate_sgd on a PottsModel")
    site = _checks.site_index(site, model.L)
    keep = np.arange(model.L) != site
    teacher = 2.0 * model.beta * model.couplings[site, keep]
    p = model.L - 1
    last = int(np.max(steps))
    _checks.allocation(8 * seeds * (last * batch + n_test) * model.L * 2,
                       f"simulate_sgd on a PottsModel with seeds={seeds}, batch={batch}, n_test={n_test}")
    logistic = losses.resolve("logistic")
    gen, diag = _sampler(model, rng)
    out = {k: np.empty((seeds, steps.size)) for k in ("eg", "test_loss", "estimation_error", "m", "q")}
    order = np.argsort(steps, kind="stable")
    runs = bar(gen.spawn(seeds), progress=progress, desc="simulate_sgd: runs", unit="run")
    for k, child in enumerate(runs):
        seqs = model.sample(last * batch + n_test, rng=child, sweeps_between=diag.sweeps_between,
                            burn_in=diag.burn_in, method=diag.method, n_rungs=diag.ladder.size)
        s = spins(child.permutation(seqs))  # rows interleave chains: shuffle before splitting
        x, y, test = s[: last * batch, keep], s[: last * batch, site], s[last * batch:, keep]
        w, done = np.zeros(p), 0
        for j in order:
            while done < steps[j]:
                xb, yb = x[done * batch:(done + 1) * batch], y[done * batch:(done + 1) * batch]
                w = w - (lr / p) * (logistic.d1(yb, xb @ w) @ xb / batch + lam * w)
                done += 1
            fit = site_measures(test, teacher, w[:, None])
            out["eg"][k, j], out["test_loss"][k, j] = fit["eg"][0], fit["test_loss"][0]
            out["estimation_error"][k, j] = float(np.sum((w - teacher) ** 2))
            out["m"][k, j], out["q"][k, j] = _overlaps(test, teacher, w)
    return out


def _overlaps(x: np.ndarray, teacher: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """``m = w*^T C w`` and ``q = w^T C w`` with the spins' covariance estimated on ``x``."""
    z, nu = x @ w, x @ teacher
    return float(np.mean(nu * z) - np.mean(nu) * np.mean(z)), float(np.var(z))
