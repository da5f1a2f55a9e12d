"""The cost of one square-loss point against the scalar closed form, in one process, timed
interleaved: the ratio the issue bounds by 3 ("one square point within 3x of the scalar closed
form").

Contenders, per (alpha, lam):

* ``rm.solve(site, alpha=, lam=)``: the public call (argument checks, route plan, the reduced
  solver on one point, the result object);
* ``root.solve_reduced(spec, np.array([alpha]), lam)``: the reduced solver alone on an array of
  one point (float64; every field, the raw-equation residual and the estimation error);
* the closed form (``closed_point`` of ``bench_overhead.py``, the baseline): kappa from one
  ``scipy.optimize.brentq`` root of ``lam / kappa + S_1(kappa) = alpha``, then
  ``eg = (R + sigma^2) / (1 - S_2 / alpha)``: eg only, no other order parameter, no residual.

Measured on the spectrum of masked site 0 of a Gaussian Potts instance (L = 1000, p = 999,
shift 3, seed 0); eigendecomposition and compiled equations loaded before timing. Each round
calls every contender once, back to back; ``--rounds`` rounds; the median CPU time
(``time.process_time``: waiting for a core on a shared machine is not counted) per call.
Printed: the times, the ratios to the closed form and the largest relative difference in eg.

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_one_point.py [--rounds 1000]
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_overhead import closed_point, interleaved

import replica_mlm as rm
from replica_mlm.theory.solvers import root

POINTS = ((2.0, 0.1), (0.5, 1e-3), (1.0, 1e-4))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--L", type=int, default=1000)
    args = ap.parse_args()
    site = rm.GaussianPotts.random(L=args.L, shift=3.0, seed=0).masked_site(0)
    spec = site.spectrum
    w, b, c, noise = spec.omega, spec.bulk, spec.teacher, spec.noise
    rm.solve(site, alpha=2.0, lam=0.1)  # compiled equations, not timed
    print(f"p = {site.p}; median CPU time of {args.rounds} interleaved rounds")
    print("(alpha, lam)   closed form   rm.solve (ratio)     solve_reduced, one point (ratio)   |d eg| / eg")
    for alpha, lam in POINTS:
        t = interleaved({"closed": lambda a=alpha, lm=lam: closed_point(w, b, c, noise, a, lm),
                         "solve": lambda a=alpha, lm=lam: rm.solve(site, alpha=a, lam=lm),
                         "reduced": lambda a=alpha, lm=lam: root.solve_reduced(spec, np.array([a]), lm)},
                        args.rounds)
        diff = abs(rm.solve(site, alpha=alpha, lam=lam).eg / closed_point(w, b, c, noise, alpha, lam) - 1)
        print(f"({alpha:g}, {lam:g}){'':<6} {t['closed'] * 1e3:8.3f} ms   {t['solve'] * 1e3:.3f} ms "
              f"({t['solve'] / t['closed']:.2f}x)   {t['reduced'] * 1e3:.3f} ms "
              f"({t['reduced'] / t['closed']:.2f}x){'':<17} {diff:.1e}")


if __name__ == "__main__":
    main()
