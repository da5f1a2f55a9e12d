"""Gibbs sampler throughput: spin updates per second, vectorised vs naive.

Vectorised: ``PottsModel`` sweeps (all chains together, one site at a time, incremental
colour-resolved fields). Naive baseline, same process: one chain, the local field of each site
recomputed from scratch (``beta sum_j J_ij U[:, s_j]``) before every update.

    OMP_NUM_THREADS=1 python benchmarks/bench_gibbs.py
"""

from __future__ import annotations

import time

import numpy as np

from replica_mlm import PottsModel


def vectorised_rate(pm: PottsModel, n_chains: int, sweeps: int) -> float:
    gen = np.random.default_rng(0)
    s = gen.integers(0, pm.q, size=(n_chains, pm.L))
    Nq = pm._init_fields(s)
    pm._sweep(s, Nq, gen)  # warm-up
    t = time.perf_counter()
    for _ in range(sweeps):
        pm._sweep(s, Nq, gen)
    return sweeps * n_chains * pm.L / (time.perf_counter() - t)


def naive_rate(pm: PottsModel, sweeps: int) -> float:
    gen = np.random.default_rng(0)
    s = gen.integers(0, pm.q, size=pm.L)
    J, bU = pm.couplings, pm.beta * pm.colours
    t = time.perf_counter()
    for _ in range(sweeps):
        for i in range(pm.L):
            z = bU[:, s] @ J[i]  # from scratch: beta sum_j J_ij U[a, s_j]
            p = np.exp(z - z.max())
            s[i] = gen.choice(pm.q, p=p / p.sum())
    return sweeps * pm.L / (time.perf_counter() - t)


def main() -> None:
    print(f"{'L':>5} {'q':>4} {'chains':>7} {'vectorised upd/s':>17} {'naive upd/s':>13} {'ratio':>7}")
    for L, chains, sweeps, naive_sweeps in ((20, 1000, 50, 200), (200, 1000, 5, 10)):
        pm = PottsModel.random(L=L, q=20, seed=0, beta=1.0)
        v = vectorised_rate(pm, chains, sweeps)
        n = naive_rate(pm, naive_sweeps)
        print(f"{L:>5} {20:>4} {chains:>7} {v:>17.3g} {n:>13.3g} {v / n:>7.1f}")


if __name__ == "__main__":
    main()
