"""Simulation: every lam from one SVD per training set, against one solve per lam.

``OMP_NUM_THREADS=1 python benchmarks/bench_simulation.py [--p 400] [--alpha 2] [--repeat 7]``

The task is masked site 0 of a Gaussian Potts instance with L = p + 1 (seed 0), ten ridge strengths
(lam = 0 and nine log-spaced values from 1e-4 to 1). Per training set (X of shape (n, p), n = alpha p)
both sides compute the ten weight vectors and their exact test errors eg = sigma^2 +
(w - w*)^T Sigma (w - w*):

* ``one SVD``: :func:`~replica_mlm.learners.ridge_path.ridge_path` (thin SVD once, then a diagonal
  filter per lam),
  what :func:`replica_mlm.simulate` does;
* ``solve per lam``: for each lam > 0, ``numpy.linalg.solve(X^T X + lam p I, X^T y)`` with the Gram
  matrix formed for that solve (a black-box ridge solver called once per lam), and ``lstsq`` at lam = 0;
* ``solve per lam, shared Gram``: the same with ``X^T X`` and ``X^T y`` formed once (the strongest
  per-lam baseline: one Cholesky-sized solve per lam).

Also timed end to end: ``rm.simulate`` with all ten lam against ten calls of ``rm.simulate`` with one
lam each (sampling included). All in one process, medians over ``--repeat`` runs; the weights of the
two methods agree to the printed relative difference.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.ridge_path import ridge_path


def per_lam_solve(x, y, lams, *, shared_gram: bool):
    p = x.shape[1]
    out = np.empty((p, len(lams)))
    if shared_gram:
        gram, xty = x.T @ x, x.T @ y
    for j, lam in enumerate(lams):
        if lam == 0:
            out[:, j] = np.linalg.lstsq(x, y, rcond=None)[0]
            continue
        if not shared_gram:
            gram, xty = x.T @ x, x.T @ y
        out[:, j] = np.linalg.solve(gram + lam * p * np.eye(p), xty)
    return out


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=400)
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seeds", type=int, default=5, help="training sets in the end-to-end timing")
    args = ap.parse_args()

    site = rm.GaussianPotts.random(L=args.p + 1, shift=3.0, seed=0).masked_site(0)
    lams = np.concatenate([[0.0], np.geomspace(1e-4, 1.0, 9)])
    n = round(args.alpha * args.p)
    x, y = site.sample(n, rng=1)
    site.generalisation_error(np.zeros(site.p))  # eigendecomposition of Sigma, outside the timing

    w_svd = ridge_path(x, y, lams, method="svd")
    w_ref = per_lam_solve(x, y, lams, shared_gram=False)
    rel = float(np.max(np.abs(w_svd - w_ref)) / np.max(np.abs(w_ref)))

    t_svd = median_time(lambda: site.generalisation_error(ridge_path(x, y, lams, method="svd")), args.repeat)
    t_solve = median_time(
        lambda: site.generalisation_error(per_lam_solve(x, y, lams, shared_gram=False)), args.repeat)
    t_gram = median_time(
        lambda: site.generalisation_error(per_lam_solve(x, y, lams, shared_gram=True)), args.repeat)
    t_sim_all = median_time(lambda: rm.simulate(site, alpha=args.alpha, lam=lams, seeds=args.seeds, rng=0),
                            max(3, args.repeat // 2))
    t_sim_each = median_time(
        lambda: [rm.simulate(site, alpha=args.alpha, lam=[lam], seeds=args.seeds, rng=0) for lam in lams],
        max(3, args.repeat // 2))

    print(f"machine: {os.cpu_count()} cores ({cpu_model()}), numpy {np.__version__}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"p = {site.p}, n = {n}, {len(lams)} lam values; max relative difference of the weights "
          f"{rel:.1e}; medians of {args.repeat} runs\n")
    print("| per training set, 10 lam | time [ms] | ratio to one SVD |")
    print("|---|---|---|")
    print(f"| one SVD (ridge_path) | {1e3 * t_svd:.1f} | 1 |")
    print(f"| solve per lam (Gram formed per solve; lstsq at lam = 0) | {1e3 * t_solve:.1f} | "
          f"**{t_solve / t_svd:.1f}x** |")
    print(f"| solve per lam, Gram shared | {1e3 * t_gram:.1f} | {t_gram / t_svd:.1f}x |")
    print(f"\nend to end, {args.seeds} training sets (sampling included): rm.simulate with all lam "
          f"{1e3 * t_sim_all:.0f} ms, one rm.simulate per lam {1e3 * t_sim_each:.0f} ms: "
          f"**{t_sim_each / t_sim_all:.1f}x**")


if __name__ == "__main__":
    main()
