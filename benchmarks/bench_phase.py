"""Phase-diagram throughput in the thermodynamic limit (issue: limit, item 7).

A 100 x 100 phase diagram (alpha in [0.05, 4], lam log-spaced in [1e-4, 10]) of the Gaussian Potts
model in the limit L -> infinity at s = 3: eg and d eg / d alpha at every point (the optimal-lam
line, an extra minimisation per alpha, is timed separately). Baseline, same process: 100 x 100
calls of the damped iteration (damping 0.5, tolerance 1e-10 on |dV|+|dq|+|dm|, start V = 1000,
q = m = 1e-3) on the 300-mode spectrum of a finite instance (L = 301). Prints points per second
and the ratio.

Run:  python benchmarks/bench_phase.py [--n 100] [--baseline-rows 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm

BASELINE = dict(method="iterate", damping=0.5, tol=1e-10, max_iter=2_000_000, init=(1000.0, 1e-3, 1e-3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="grid size n x n")
    ap.add_argument("--baseline-rows", type=int, default=None,
                    help="lam rows of the baseline actually run (default: all n; fewer extrapolates)")
    args = ap.parse_args()
    n = args.n
    alpha = np.linspace(0.05, 4.0, n)
    lam = np.geomspace(1e-4, 10.0, n)
    lim = rm.GaussianPotts.limit(shift=3.0)
    rm.solve(lim, alpha=1.0, lam=1e-3)  # compile once, not timed
    print(f"limit at s = 3: {lim.spectrum.omega.size} quadrature nodes")

    t0 = time.perf_counter()
    pd = rm.phase_diagram(lim, alpha=alpha, lam=lam, optimal=False)
    t_grid = time.perf_counter() - t0
    t0 = time.perf_counter()
    for a in alpha:
        rm.optimal_lambda(lim, alpha=float(a))
    t_opt = time.perf_counter() - t0
    assert np.all(np.isfinite(pd.eg))

    site = rm.GaussianPotts.random(L=301, shift=3.0, seed=0).masked_site(0)
    spec = site.spectrum
    rows = n if args.baseline_rows is None else args.baseline_rows
    pick = np.linspace(0, n - 1, rows).round().astype(int)
    t0 = time.perf_counter()
    iters = 0
    for i in pick:
        for a in alpha:
            iters += rm.solve(spec, alpha=float(a), lam=float(lam[i]), **BASELINE).iterations
    t_base = (time.perf_counter() - t0) * n / rows

    pts = n * n
    print(f"{n} x {n} phase diagram in the limit (eg and d eg/d alpha): {t_grid:.2f} s, "
          f"{pts / t_grid:,.0f} points/s")
    print(f"optimal-lam line ({n} minimisations): {t_opt:.2f} s")
    note = "" if rows == n else f" (extrapolated from {rows} of {n} rows)"
    print(f"damped iteration, {pts} calls on a 300-mode spectrum: {t_base:.1f} s{note}, "
          f"{pts / t_base:,.0f} points/s, {iters / (rows * n):.0f} iterations per point")
    print(f"ratio: {t_base / t_grid:.0f}x")


if __name__ == "__main__":
    main()
