"""Time per training epoch of the attractor network's local rule against M, N and d.

One epoch of full-batch training is one evaluation of the local gradient
dL/dJ_ij = -(1/M) sum_mu a_ij x_i x_j^T + lambda J_ij (docs/attractor.md), which costs
O(M N^2 d^2) flops and O(chunk N^2 d) memory. The vectorised kernel (batched BLAS products over j)
is timed against a naive per-configuration, per-pair Python loop baseline, in the same process,
and the scaling exponents d log(time) / d log(size) are fitted from the timings.

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_attractor.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from replica_mlm.attractor.energy import _cost_and_gradient


def naive_gradient(J: np.ndarray, x: np.ndarray, beta: float, lam: float) -> np.ndarray:
    """The same local rule with explicit loops over data, sites and partners."""
    M, N, _ = x.shape
    G = np.zeros_like(J)
    for m in range(M):
        for i in range(N):
            js = [j for j in range(N) if j != i]
            s = np.array([beta * x[m, i] @ J[i, j] @ x[m, j] for j in js])
            a = np.exp(s - s.max())
            a /= a.sum()
            for k, j in enumerate(js):
                G[i, j] -= a[k] * np.outer(x[m, i], x[m, j])
    G /= M
    off = ~np.eye(N, dtype=bool)
    G += lam * J * off[:, :, None, None]
    return G


def best_time(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def problem(M: int, N: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(N, N, d, d)) / d
    x = rng.normal(size=(M, N, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return J, x


def sweep(name: str, sizes: list[tuple[int, int, int]], naive_up_to: int) -> None:
    print(f"\n## scaling with {name}")
    print(f"{'M':>6} {'N':>4} {'d':>4} {'epoch [ms]':>11} {'naive [ms]':>11} {'speed-up':>9}")
    key = {"M": 0, "N": 1, "d": 2}[name]
    xs, ts = [], []
    for M, N, d in sizes:
        J, x = problem(M, N, d)
        t = best_time(lambda J=J, x=x: _cost_and_gradient(J, x, 1.0, 1e-3))
        if M * N * N <= naive_up_to:
            g_fast = _cost_and_gradient(J, x, 1.0, 1e-3)[1]
            g_naive = naive_gradient(J, x, 1.0, 1e-3)
            assert np.max(np.abs(g_fast - g_naive)) < 1e-12, "kernels disagree"
            tn = best_time(lambda J=J, x=x: naive_gradient(J, x, 1.0, 1e-3), repeat=1)
            naive, speed = f"{1e3 * tn:11.1f}", f"{tn / t:9.0f}"
        else:
            naive, speed = f"{'-':>11}", f"{'-':>9}"
        print(f"{M:>6} {N:>4} {d:>4} {1e3 * t:11.2f} {naive} {speed}")
        xs.append((M, N, d)[key])
        ts.append(t)
    slope = np.polyfit(np.log(xs[1:]), np.log(ts[1:]), 1)[0]  # skip the smallest (overheads)
    expected = {"M": 1, "N": 2, "d": 2}[name]
    print(f"fitted exponent: time ~ {name}^{slope:.2f} (flop count: {name}^{expected})")


def main(quick: bool) -> None:
    f = 1 if quick else 2
    print("Attractor network: time of one full-batch epoch (local gradient + cost)")
    sweep("M", [(250 * f * k, 16, 8) for k in (1, 2, 4, 8)], naive_up_to=500 * 16 * 16)
    sweep("N", [(200, n, 8) for n in (8, 16, 32, 64 if not quick else 48)], naive_up_to=200 * 16 * 16)
    sweep("d", [(200, 16, dd) for dd in (2, 4, 8, 16, 32 if not quick else 24)],
          naive_up_to=200 * 16 * 16)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
