"""The mlm validation section per sweep point: the new simulation route against the old one.

``OMP_NUM_THREADS=1 python benchmarks/bench_mlm.py [--sizes 400 1600] [--alphas 0.5 0.975 1.025 2 4]``

One training set of masked site 0 of a Gaussian Potts instance (s = 3), n = round(alpha p)
samples, the four lam of the section (0, 1e-3, 0.1, 1), their exact test errors eg. Both routes
use the same normal draws (same generator), in one process:

* ``old``: what :func:`replica_mlm.simulate` did before: ``MaskedSite.sample`` (x = z sqrt(omega)
  U^T: an n p^2 rotation), one thin SVD of X for every lam (``ridge_path(method="svd")``),
  ``MaskedSite.generalisation_error``;
* ``new``: :func:`replica_mlm.simulate` now: the draws stay in the eigenbasis of Sigma (no rotation;
  every quantity is rotation invariant) and ``ridge_path(method="auto")``: the Gram matrix of the
  smaller side, one Cholesky factorisation per lam and two refinement steps with X (the SVD only
  where lam = 0 meets a near-singular Gram matrix).

Printed per point: the two CPU times of this process (minimum of ``--repeat`` runs; with one BLAS
thread the work done, steady on a shared machine where wall times are not), their ratio, the wall
times, and the largest
relative difference of the four eg (the routes are the same estimator: rounding only). Then the
cost of the full section's sweep (``validation.mlm.settings(quick=False)``) predicted from these
times, piecewise linear in alpha between the measured alphas, for the old seeds per point and the
new ones.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.ridge_path import ridge_path
from replica_mlm.validation import mlm_section as mlm


def old_route(site, n, lams, gen):
    x, y = site.sample(n, rng=gen)
    return site.generalisation_error(ridge_path(x, y, lams, method="svd"))


def new_route(site, alpha, lams, seed):
    # simulate needs two seeds; the first training set is the one the old route sees
    return rm.simulate(site, alpha=alpha, lam=lams, seeds=2, rng=seed).eg[0]


def best_time(fn, repeat: int) -> tuple[float, float, object]:
    """Minimum CPU seconds of this process (one BLAS thread: the work done, steady under load) and
    minimum wall seconds over ``repeat`` runs, and the last result."""
    cpu = wall = np.inf
    out = None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - t0)
    return cpu, wall, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[400, 1600])
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.5, 0.975, 1.025, 2.0, 4.0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    lams = np.array(mlm.LAMS)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, numpy {np.__version__}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; minimum of {args.repeat} runs\n")
    print("| L | alpha | n | old CPU [s] | new CPU [s] | ratio (CPU) | old / new wall [s] "
          "| max rel. diff. of eg |")
    print("|---|---|---|---|---|---|---|---|")
    timings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for L in args.sizes:
        site = rm.GaussianPotts.random(L=L, shift=3.0, seed=1).masked_site(0)
        _ = site.spectrum  # eigendecomposition of Sigma, outside the timing (cached per instance)
        old_t, new_t = [], []
        for alpha in args.alphas:
            n = round(alpha * site.p)
            # simulate's first training set uses the first child of SeedSequence(seed)
            t_old, w_old, eg_old = best_time(
                lambda s=site, n=n: old_route(s, n, lams, np.random.default_rng(7).spawn(1)[0]), args.repeat)
            t_new2, w_new2, eg_new = best_time(lambda s=site, a=alpha: new_route(s, a, lams, 7), args.repeat)
            t_new = t_new2 / 2
            rel = float(np.max(np.abs(eg_new - eg_old) / eg_old))
            old_t.append(t_old)
            new_t.append(t_new)
            print(f"| {L} | {alpha:g} | {n} | {t_old:.3f} | {t_new:.3f} | **{t_old / t_new:.1f}x** | "
                  f"{w_old:.2f} / {w_new2 / 2:.2f} | {rel:.1e} |", flush=True)
        timings[L] = (np.array(old_t), np.array(new_t))

    # the full section's sweep, predicted (piecewise linear in alpha between measured alphas)
    cfg = mlm.settings(quick=False)
    grid = np.array(args.alphas)
    old_seeds = {100: 100, 400: 100, 1600: 40}  # the full sweep before the seeds rule
    tot_old = tot_new = 0.0
    print("\n| L | instances | seeds old / new | predicted CPU time, old [s] | new [s] |")
    print("|---|---|---|---|---|")
    for L, instances, seeds in cfg.sizes:
        if L not in timings:
            continue
        t_old, t_new = timings[L]
        s_old = old_seeds.get(L, seeds)
        c_old = instances * s_old * float(np.interp(cfg.alphas, grid, t_old).sum())
        c_new = instances * seeds * float(np.interp(cfg.alphas, grid, t_new).sum())
        tot_old += c_old
        tot_new += c_new
        print(f"| {L} | {instances} | {s_old} / {seeds} | {c_old:.0f} | {c_new:.0f} |")
    print(f"\nmeasured sizes together: old {tot_old / 60:.1f} min, new {tot_new / 60:.1f} min of one core "
          f"(ratio {tot_old / tot_new:.0f}x); load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
