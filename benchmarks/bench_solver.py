"""Saddle-point solver against damped fixed-point iteration (issue: core, item 7).

A 200-point learning curve (alpha from 0.05 to 4, lam = 1e-4) on the spectrum of one masked
site of a Gaussian Potts instance with L = 1000 (p = 999). The eigendecomposition of Sigma is
done once, before timing. Baseline: damped iteration as in public replica codes (damping 0.5
on the old iterate, tolerance 1e-10 on |dV| + |dq| + |dm|, started from V = 1000, q = m = 1e-3),
on the same spectrum, in the same process. Prints times, the ratio, the largest disagreement in
eg, and the iterations each method needs at alpha = 1, lam = 1e-5. Times are wall clock and CPU
time of the process (one BLAS thread: ``OMP_NUM_THREADS=1``); on a shared machine the CPU times
and their ratio are the figures to compare, wall clock includes waiting for a core.

Run:  python benchmarks/bench_solver.py [--points 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import replica_mlm as rm

BASELINE = dict(method="iterate", damping=0.5, tol=1e-10, max_iter=2_000_000,
                init=(1000.0, 1e-3, 1e-3))


def timed(fn, repeat: int):
    """Median wall time, median CPU time and the last result of ``repeat`` calls of ``fn``."""
    times, cpu, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the fast solver (median)")
    ap.add_argument("--L", type=int, default=1000)
    args = ap.parse_args()

    site = rm.GaussianPotts.random(L=args.L, shift=3.0, seed=0).masked_site(0)
    spec = site.spectrum  # eigendecomposition once, not timed
    alphas = np.linspace(0.05, 4.0, args.points)
    lam = 1e-4
    rm.solve(spec, alpha=1.0, lam=lam)  # compile the sympy equations once, not timed

    t_root, c_root, root = timed(lambda: rm.learning_curve(spec, alpha=alphas, lam=lam), args.repeat)
    t_iter, c_iter, it = timed(lambda: rm.learning_curve(spec, alpha=alphas, lam=lam, **BASELINE), 1)

    assert root.converged and it.converged
    worst = float(np.max(np.abs(root.eg - it.eg) / root.eg))
    print(f"p = {site.p}, {args.points} points, alpha in [0.05, 4], lam = {lam:g}")
    print(f"  root (Newton, reduced eq.):   {t_root * 1e3:9.1f} ms   "
          f"({t_root / args.points * 1e6:.0f} us/point, median of {args.repeat}); CPU {c_root * 1e3:.1f} ms")
    print(f"  damped iteration (baseline):  {t_iter * 1e3:9.1f} ms   "
          f"({int(it.iterations.sum())} iterations in all, max {int(it.iterations.max())}); "
          f"CPU {c_iter * 1e3:.1f} ms")
    print(f"  speed-up: {t_iter / t_root:.1f}x wall, {c_iter / c_root:.1f}x CPU  (target >= 30x)")
    print(f"  largest relative difference in eg between the two: {worst:.2e} "
          f"(baseline tolerance 1e-10 on increments)")

    a = rm.solve(spec, alpha=1.0, lam=1e-5)
    b = rm.solve(spec, alpha=1.0, lam=1e-5, **BASELINE)
    print("alpha = 1, lam = 1e-5:")
    print(f"  root: {a.iterations} Newton steps on the scalar equation, eg = {a.eg:.15g}, "
          f"residual {a.residual:.1e}")
    print(f"  damped iteration: {b.iterations} iterations, eg = {b.eg:.15g}, "
          f"residual {b.residual:.1e}")


if __name__ == "__main__":
    main()
