"""Cost of a mixture solve against the Gaussian-equivalence solve of the same Potts site.

Issue 27, item 4: a ``theory="mixture"`` solve at q = 3, L = 40 within 3x of the Gaussian-equivalence
solve in the same run. The site: site 0 of the standard Potts model (U = I) at beta = 1.0 on the
couplings of ``PottsModel.random_ising(L=40, beta=1.0, seed=3)`` (the instance family of
docs/multiclass.md), its covariance and mixture from 20000 sampled sequences (measured once, not
timed: the task is built before the clock starts, and ``task.mixture`` is computed before the
first timed solve). Each repeat times, interleaved, one ``rm.solve(task, alpha, lam)`` (Gaussian
equivalence: the colour-symmetric three-unknown multi-class solver with its finer-rule check) and one
``rm.solve(..., theory="mixture")`` (the K x q mixture solver with its finer-rule and Sobol' checks)
at each (alpha, lam) of the grid, from cold starts, in process CPU seconds; printed: the seconds of
each, and the ratio mixture / gaussian (median over repeats).

    OMP_NUM_THREADS=1 python benchmarks/bench_mixture.py [--repeat 3] [--L 40]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm

GRID = [(1.0, 0.1), (5.0, 0.01)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--L", type=int, default=40)
    args = ap.parse_args(argv)
    J = rm.PottsModel.random_ising(L=args.L, beta=1.0, seed=3).couplings
    model = rm.PottsModel(couplings=J, colours=np.eye(3), beta=1.0)
    t0 = time.process_time()
    task = model.masked_site(0, rng=0)
    mix = task.mixture
    print(f"q = 3, L = {args.L}: task and mixture ({mix.method}, {mix.n_samples} sequences) in "
          f"{time.process_time() - t0:.1f} CPU s; cavity check {mix.cavity_check()}")
    rm.solve(task, alpha=1.0, lam=0.1)  # warm-up (imports, rules)
    rm.solve(task, alpha=1.0, lam=0.1, theory="mixture")
    ratios = []
    for r in range(args.repeat):
        secs = {"gaussian": 0.0, "mixture": 0.0}
        for alpha, lam in GRID:
            for theory in ("gaussian", "mixture"):
                t = time.process_time()
                sp = rm.solve(task, alpha=alpha, lam=lam, theory=theory)
                secs[theory] += time.process_time() - t
                if r == 0:
                    print(f"  alpha={alpha} lam={lam} {theory:8s}: test loss {sp.test_loss:.4f}, error "
                          f"{sp.eg:.4f}, estimation error {sp.estimation_error:.3f}, residual "
                          f"{sp.residual:.1e}, {sp.iterations} evaluations")
        ratios.append(secs["mixture"] / secs["gaussian"])
        print(f"repeat {r}: gaussian {secs['gaussian']:.2f} s, mixture {secs['mixture']:.2f} s, "
              f"ratio {ratios[-1]:.2f}")
    print(f"median ratio mixture / gaussian: {float(np.median(ratios)):.2f} over {args.repeat} repeats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
