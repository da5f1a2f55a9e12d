"""Cluster updates against Gibbs sweeps on the periodic square-lattice ferromagnet, in one process.

docs/potts.md, section "Cluster updates". For each lattice and temperature, one pilot run of each
sampler (64 chains, the package's pilot: autocorrelation measured, run doubled until long
enough) measures its integrated autocorrelation time ``tau`` (in sweeps or updates) and the CPU
time of one sweep or update of the 64 chains; the cost of one effectively independent sample is
``tau x time per step``. Printed: both, and their ratio Gibbs / clusters (above 1: the clusters
are cheaper). Where the Gibbs pilot does not mix within its longest run its ``tau`` is a lower
bound, and so is the ratio (marked ``>=``).

    python benchmarks/bench_cluster.py [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings

import replica_mlm as rm
from replica_mlm.potts.graphs import square_lattice


def pilot(model, method: str) -> tuple[float, float, bool]:
    """(tau, CPU seconds per step of the 64 chains, mixing) of one pilot run."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = model.gibbs_diagnostics(rng=0, method=method, max_sweeps=1600)
    steps = d.steps_burnt + d.n_sweeps
    return d.tau_int, (time.process_time() - start) / steps, d.mixing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the 6 x 6 lattice only")
    args = parser.parse_args()
    cases = [(6, 0.3), (6, 0.44)] if args.quick else [(6, 0.44), (10, 0.3), (10, 0.44), (10, 0.6), (16, 0.44)]
    print(f"{'lattice':>8} {'beta':>5} | {'Gibbs tau':>9} {'s/sweep':>8} | {'cluster tau':>11} "
          f"{'s/update':>8} | Gibbs / cluster cost per independent sample")
    for side, beta in cases:
        model = rm.PottsModel.ising(couplings=square_lattice(side), beta=beta)
        g_tau, g_step, g_mix = pilot(model, "gibbs")
        c_tau, c_step, c_mix = pilot(model, "cluster")
        bound = "" if g_mix else ">="
        print(f"{side:>4} x {side:<3} {beta:>5.2f} | {g_tau:>9.1f} {g_step:>8.4f} | {c_tau:>11.2f} "
              f"{c_step:>8.4f} | {bound}{g_tau * g_step / (c_tau * c_step):.1f}"
              + ("" if c_mix else "  (cluster pilot did not mix)"))


if __name__ == "__main__":
    main()
