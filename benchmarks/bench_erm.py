"""Logistic learning curve (sign channel): the general engine vs the method of public replica codes.

The baseline (:mod:`replica_mlm.theory.solvers.reference`) iterates the same saddle-point equations with
damping 0.5, adaptive ``scipy.integrate.quad`` for each channel integral and
``scipy.optimize.minimize_scalar`` for each proximal point, warm-started along the curve, until the
relative change of (V, q, m) is below 1e-8 (its quadrature tolerance is 1e-10); the engine stops at
a raw-equation residual <= 1e-10. The baseline is slow (minutes per point at p = 999), so it runs on
``--baseline-points`` points spread over the curve (warm-started from one another, the first from a
cold start) and its mean time per point is scaled to the full curve (printed); ``--baseline-points
100`` runs all of it.
Every baseline point must converge, and its (V, q, m) is compared with the engine's.

    python benchmarks/bench_erm.py            # p = 999, 100 points, lam = 1e-3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.theory.solvers import reference


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=1000)
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--alpha-min", type=float, default=0.2)
    ap.add_argument("--alpha-max", type=float, default=5.0)
    ap.add_argument("--baseline-points", type=int, default=2, help="points the baseline solves")
    args = ap.parse_args()

    site = rm.GaussianPotts.random(L=args.L, shift=3.0, seed=0).masked_site(0)
    spec = site.spectrum
    grid = np.linspace(args.alpha_min, args.alpha_max, args.points)
    print(f"p = {site.p}, {args.points} points alpha in [{grid[0]}, {grid[-1]}], lam = {args.lam}, "
          f"logistic loss, sign channel, alpha_c = {rm.separability_threshold(site):.6f}")

    t0, c0 = time.perf_counter(), time.process_time()
    curve = rm.learning_curve(site, alpha=grid, lam=args.lam, loss="logistic", channel="sign")
    t_engine, c_engine = time.perf_counter() - t0, time.process_time() - c0
    print(f"engine: {t_engine:.2f} s wall, {c_engine:.2f} s CPU for {args.points} points, max residual "
          f"{np.max(curve.residual):.2e}, all converged: {bool(curve.converged)}", flush=True)

    sub = np.unique(np.linspace(0, args.points - 1, args.baseline_points + 2).round().astype(int)[1:-1])
    init = (1.0, 0.1, 0.01)
    dev, iters = 0.0, []
    t0, c0 = time.perf_counter(), time.process_time()
    for i in sub:
        out = reference.solve(spec, grid[i], args.lam, "logistic", "sign", init=init)
        init = (out["V"], out["q"], out["m"])
        iters.append(out["iterations"])
        print(f"  baseline point alpha = {grid[i]:.4f}: {out['iterations']} iterations, "
              f"{time.process_time() - c0:.1f} s CPU so far", flush=True)
        ours = np.array([curve.V[i], curve.q[i], curve.m[i]])
        dev = max(dev, float(np.max(np.abs(np.array(init) - ours) / np.abs(ours))))
    t_base, c_base = time.perf_counter() - t0, time.process_time() - c0
    scale = args.points / sub.size
    print(f"baseline: {t_base:.1f} s wall, {c_base:.1f} s CPU for {sub.size} points at alpha = "
          f"{np.round(grid[sub], 3).tolist()} (iterations {iters}), all converged; scaled to "
          f"{args.points} points: {t_base * scale:.1f} s wall, {c_base * scale:.1f} s CPU")
    print(f"largest relative difference of (V, q, m), baseline vs engine: {dev:.2e}")
    print(f"ratio baseline / engine: {t_base * scale / t_engine:.1f}x wall, "
          f"{c_base * scale / c_engine:.1f}x CPU "
          "(the CPU ratio is the fair one on a shared machine; both run single-threaded)")


if __name__ == "__main__":
    main()
