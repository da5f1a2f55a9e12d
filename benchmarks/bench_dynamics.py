"""Learning dynamics: speed and scale of ``rm.online_sgd``, ``rm.gradient_flow`` and their
simulations, timed in one process so that the ratios are meaningful (docs/dynamics.md).

Timed (wall-clock minimum of ``--repeat`` runs):

* a 1000-point online curve (alpha in [0, 8], lr 0.5) at p = 1000, in the p -> infinity limit and
  exactly at this p, against one ``rm.learning_curve`` of the same length (lam = 0.1) on the same
  site: the ratios;
* ``rm.gradient_flow`` at 121 times (alpha 2, lam 0);
* ``rm.simulate_sgd``'s cost per run (p = 500, alpha up to 2, 50 runs) and
  ``rm.simulate_gradient_flow``'s per training set (p = 500, alpha 2, 10 sets);
* p = 20,000 through the spectrum without a p x p matrix: a synthetic spectrum of 20,000 modes
  (``rm.Spectrum``; eigenvalues 1 + 0.9 cos(pi k / p), a random teacher), online curve (limit) and the
  exact recursion at that p (100 points to alpha = 2);
* a q-colour site (q = 3, K = 2; p = 1000, d = 2000: covariance ``4 Sigma (x) I_2`` and teacher
  ``2 w* (x) T`` of the p = 1000 Gaussian Potts site, a bias): the online curve of the softmax
  cross-entropy (``--colour-points`` points, alpha in [0, 8], lr 0.5) against one
  ``rm.learning_curve`` of the multi-class static theory of the same length (lam = 0.1): the
  ratio; and ``rm.simulate_sgd``'s cost per run on the same construction at p = 500 (alpha up to 2,
  20 runs, each scored at 3 times). One run each (the static curve takes about 2.6 s a point).

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_dynamics.py [--repeat 3] [--colour-points 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def colour_site(p: int, K: int = 2):
    """The q = K + 1 colour site of docs/dynamics.md, "Agreement", on the Gaussian Potts site of
    ``p`` inputs (covariance ``4 Sigma (x) I_K``, teacher ``2 w* (x) T``, ``T = I + 0.3 G``, a bias)."""
    base = rm.GaussianPotts.random(L=p + 1, shift=3.0, seed=0).masked_site(0)
    gen = np.random.default_rng(100)
    mix = np.eye(K) + 0.3 * gen.standard_normal((K, K))
    return rm.PottsSite(covariance=4.0 * np.kron(base.covariance, np.eye(K)),
                        teacher=2.0 * np.kron(np.asarray(base.teacher)[:, None], mix), p=p,
                        bias=0.3 * gen.standard_normal(K))


def colours(points: int) -> None:
    """The q-colour online curve against the multi-class static learning curve, one run each."""
    site = colour_site(1000)
    _ = site.modes  # the eigendecomposition, not timed
    grid = np.linspace(0.0, 8.0, points)
    t_lc = best(lambda: rm.learning_curve(site, alpha=grid[1:], lam=0.1), 1)
    t_on = best(lambda: rm.online_sgd(site, alpha=grid, lr=0.5), 1)
    print(f"q = 3 site, p = 1000 (d = 2000), {points} points")
    print(f"  rm.learning_curve, multi-class (lam 0.1)  {t_lc:9.1f} s")
    print(f"  online_sgd, cross-entropy ODEs            {t_on:9.1f} s   ratio {t_on / t_lc:6.3f}")
    small, runs = colour_site(500), 20
    t_sim = best(lambda: rm.simulate_sgd(small, alpha=[0.5, 1.0, 2.0], lr=0.5, seeds=runs, rng=0), 1)
    print(f"q = 3 site, p = 500 (d = 1000): simulate_sgd to alpha = 2 (1000 steps, 3 scorings)  "
          f"{t_sim / runs * 1e3:8.1f} ms per run")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--colour-points", type=int, default=1000,
                    help="points of the q-colour curves (0: skip them)")
    args = ap.parse_args()
    site = rm.GaussianPotts.random(L=1001, shift=3.0, seed=0).masked_site(0)
    _ = site.spectrum  # the eigendecomposition, not timed
    grid = np.linspace(0.0, 8.0, 1000)
    rm.learning_curve(site, alpha=grid[1:4], lam=0.1)  # compiled equations loaded, not timed
    t_lc = best(lambda: rm.learning_curve(site, alpha=grid[1:], lam=0.1), args.repeat)
    t_lim = best(lambda: rm.online_sgd(site, alpha=grid, lr=0.5), args.repeat)
    t_ex = best(lambda: rm.online_sgd(site, alpha=grid, lr=0.5, exact=True), args.repeat)
    print("p = 1000, 1000 points")
    print(f"  rm.learning_curve (lam 0.1)     {t_lc * 1e3:9.1f} ms")
    print(f"  online_sgd, limit               {t_lim * 1e3:9.1f} ms   ratio {t_lim / t_lc:6.2f}")
    print(f"  online_sgd, exact (8000 steps)  {t_ex * 1e3:9.1f} ms   ratio {t_ex / t_lc:6.2f}")
    times = np.logspace(-2, 4, 121)
    t_flow = best(lambda: rm.gradient_flow(site, alpha=2.0, time=times), args.repeat)
    print(f"  gradient_flow, 121 times        {t_flow * 1e3:9.1f} ms   ratio {t_flow / t_lc:6.2f}")
    small = rm.GaussianPotts.random(L=501, shift=3.0, seed=0).masked_site(0)
    runs = 50
    t_sim = best(lambda: rm.simulate_sgd(small, alpha=[0.5, 1.0, 2.0], lr=0.5, seeds=runs, rng=0), 1)
    print(f"p = 500: simulate_sgd to alpha = 2 (1000 steps)  {t_sim / runs * 1e3:8.2f} ms per run")
    sets = 10
    t_fsim = best(lambda: rm.simulate_gradient_flow(small, alpha=2.0, time=times, seeds=sets, rng=0), 1)
    print(f"p = 500: simulate_gradient_flow (n = 1000)       {t_fsim / sets * 1e3:8.2f} ms per training set")
    p = 20000
    omega = 1.0 + 0.9 * np.cos(np.pi * np.arange(p) / p)
    teacher = np.random.default_rng(0).normal(size=p) ** 2 * (0.05 / p)
    big = rm.Spectrum(omega=omega, bulk=np.full(p, 1.0 / p), teacher=teacher, noise=0.3)
    g2 = np.linspace(0.0, 2.0, 100)
    t_big = best(lambda: rm.online_sgd(big, alpha=g2, lr=0.5), 1)
    t_bigex = best(lambda: rm.online_sgd(big, alpha=g2, lr=0.5, exact=True), 1)
    lim, ex = rm.online_sgd(big, alpha=g2, lr=0.5), rm.online_sgd(big, alpha=g2, lr=0.5, exact=True)
    print(f"p = 20000 (spectrum only): limit {t_big:6.2f} s, exact ({int(2 * p)} steps) {t_bigex:6.2f} s, "
          f"max |exact - limit| = {np.max(np.abs(lim.eg - ex.eg)):.2e}")
    if args.colour_points:
        colours(args.colour_points)


if __name__ == "__main__":
    main()
