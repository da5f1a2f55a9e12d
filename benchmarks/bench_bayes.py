"""A Bayes-optimal curve against the ERM engine's curve on the same task, timed in one process.

Workload: the sign channel (noise sigma^2 = 0.01) on a Spectrum of p = 999 modes (eigenvalues
log-uniform in [0.1, 10], bulk weights 1/p, an isotropic teacher of rho = 1), 100 alphas
log-spaced in [0.1, 10]:

* ``bayes``: ``rm.bayes_optimal_curve(spec, alpha=grid, channel="sign")`` (warm-started);
* ``erm``: ``rm.learning_curve(spec, alpha=grid, lam=0.1, loss="logistic", channel="sign")``
  (the general engine, warm-started).

Both after one untimed warm-up (the sympy expressions are compiled once per process). Prints the
wall-clock minimum of ``--repeat`` runs of each, their ratio, the largest residual of each curve
and the smallest ERM - BO gap of eg on the grid.

    OMP_NUM_THREADS=1 python benchmarks/bench_bayes.py [--repeat 3] [--points 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--p", type=int, default=999)
    args = parser.parse_args()
    p = args.p
    omega = np.geomspace(0.1, 10.0, p)
    bulk = np.full(p, 1.0 / p)
    spec = rm.Spectrum(omega=omega, bulk=bulk, teacher=bulk / np.dot(bulk, omega), noise=0.01)
    grid = np.geomspace(0.1, 10.0, args.points)

    def bayes():
        return rm.bayes_optimal_curve(spec, alpha=grid, channel="sign")

    def erm():
        return rm.learning_curve(spec, alpha=grid, lam=0.1, loss="logistic", channel="sign")

    bayes(), erm()  # warm-up: compile once
    times = {}
    out = {}
    for name, fn in (("bayes", bayes), ("erm", erm)):
        best = np.inf
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out[name] = fn()
            best = min(best, time.perf_counter() - t0)
        times[name] = best
    print(f"p = {p}, {args.points} alphas in [0.1, 10], sign channel (sigma^2 = 0.01)")
    print(f"{'curve':<28}{'seconds':>10}{'max residual':>16}")
    print(f"{'Bayes-optimal':<28}{times['bayes']:>10.3f}{out['bayes'].residual.max():>16.2e}")
    print(f"{'ERM logistic, lam = 0.1':<28}{times['erm']:>10.3f}{out['erm'].residual.max():>16.2e}")
    print(f"ratio Bayes-optimal / ERM = {times['bayes'] / times['erm']:.3f}")
    print(f"min over the grid of eg(ERM) - eg(BO) = {np.min(out['erm'].eg - out['bayes'].eg):.3e}")


if __name__ == "__main__":
    main()
