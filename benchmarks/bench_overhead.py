"""The cost of one square-loss point (and of a 200-point curve) in ``rm.solve`` against the scalar
closed form written here, in the same process, timed interleaved.

The closed form of ridge regression with Gaussian covariates (docs/theory.md, section "One scalar
equation"): kappa solves ``lam / kappa + S_1(kappa) = alpha`` with ``S_1 = sum_k b_k omega_k /
(omega_k + kappa)`` (one Brent root, ``scipy.optimize.brentq``, bracketed by ``lam / alpha`` and
``(lam + mean omega) / alpha``), then ``eg = (R + sigma^2) / (1 - S_2 / alpha)`` with
``S_2 = sum_k b_k omega_k^2 / (omega_k + kappa)^2`` and ``R = kappa^2 sum_k c_k omega_k /
(omega_k + kappa)^2``: a dozen lines of numpy, eg only (no other order parameter, no residual).
For the curve the closed form is vectorised over alpha (Newton's method from the left on the
same equation, every alpha at once, 60 steps at most).

Measured on the spectrum of masked site 0 of a Gaussian Potts instance (L = 1000, p = 999,
shift 3, seed 0), eigendecomposition and compiled equations loaded before timing. Each round
times one call of each contender back to back (``--rounds`` rounds, median CPU time per call);
one BLAS thread (``OMP_NUM_THREADS=1``). Printed: the times, their ratio (target: one point within 3x,
the curve no slower than 18 ms) and the largest relative difference in eg. For each point also the
reduced solver alone on an array of that one point (``root.solve_reduced(spec, np.array([alpha]),
lam)``, which solves one point on numbers, ``root.solve_point``), and its ratio to the closed form;
``bench_one_point.py`` times the point alone against the same closed form.

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_overhead.py [--rounds 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.optimize import brentq

import replica_mlm as rm
from replica_mlm.theory.solvers import root


def closed_point(w, b, c, noise, alpha: float, lam: float) -> float:
    """eg of one (alpha, lam), lam > 0: one Brent root for kappa, then numpy."""
    def g(k):
        return lam / k + np.dot(b, w / (w + k)) - alpha
    k = brentq(g, lam / alpha, (lam + np.dot(b, w)) / alpha, xtol=1e-300, rtol=8.9e-16)
    y = w / (w + k)
    s2 = np.dot(b, y * y)
    r = k * k * np.dot(c, w / (w + k) ** 2)
    return (r + noise) / (1.0 - s2 / alpha)


def closed_curve(w, b, c, noise, alphas: np.ndarray, lam: float) -> np.ndarray:
    """eg at every alpha at once: Newton's method from the left on G(k) = lam/k + S_1(k) - alpha
    (convex, decreasing: monotone convergence), then numpy."""
    k = lam / alphas  # G(lam / alpha) >= 0
    for _ in range(60):
        d = 1.0 / (w[None, :] + k[:, None])
        s1 = (b * w * d).sum(axis=1)
        s12 = (b * w * d * d).sum(axis=1)
        g = lam / k + s1 - alphas
        step = g / (lam / k**2 + s12)
        k = k + step
        if np.all(np.abs(step) <= 4e-16 * k):
            break
    d = 1.0 / (w[None, :] + k[:, None])
    s2 = (b * (w * d) ** 2).sum(axis=1)
    r = k**2 * (c * w * d * d).sum(axis=1)
    return (r + noise) / (1.0 - s2 / alphas)


def interleaved(fns: dict, rounds: int) -> dict[str, float]:
    """Median CPU seconds per call of each function (``time.process_time``: on a shared machine
    waiting for a core is not counted), timed back to back in every round."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--L", type=int, default=1000)
    args = ap.parse_args()
    site = rm.GaussianPotts.random(L=args.L, shift=3.0, seed=0).masked_site(0)
    spec = site.spectrum
    w, b, c, noise = spec.omega, spec.bulk, spec.teacher, spec.noise
    rm.solve(site, alpha=2.0, lam=0.1)  # compiled equations, not timed
    print(f"p = {site.p}; median of {args.rounds} interleaved rounds")
    for alpha, lam in ((2.0, 0.1), (0.5, 1e-3), (1.0, 1e-4)):
        t = interleaved({"solve": lambda a=alpha, lm=lam: rm.solve(site, alpha=a, lam=lm),
                         "closed": lambda a=alpha, lm=lam: closed_point(w, b, c, noise, a, lm),
                         "vector": lambda a=alpha, lm=lam: root.solve_reduced(spec, np.array([a]), lm)},
                        args.rounds)
        diff = abs(rm.solve(site, alpha=alpha, lam=lam).eg / closed_point(w, b, c, noise, alpha, lam) - 1)
        print(f"  one point alpha = {alpha:g}, lam = {lam:g}: rm.solve {t['solve'] * 1e3:.3f} ms, closed "
              f"form {t['closed'] * 1e3:.3f} ms, ratio {t['solve'] / t['closed']:.1f}x (target <= 3); "
              f"|d eg| / eg = {diff:.1e}")
        print(f"    vectorised solver on one point: {t['vector'] * 1e3:.3f} ms, ratio "
              f"{t['vector'] / t['closed']:.1f}x")
    alphas = np.linspace(0.05, 4.0, 200)
    lam = 1e-4
    t = interleaved({"curve": lambda: rm.learning_curve(spec, alpha=alphas, lam=lam),
                     "closed": lambda: closed_curve(w, b, c, noise, alphas, lam)},
                    max(10, args.rounds // 10))
    diff = float(np.max(np.abs(rm.learning_curve(spec, alpha=alphas, lam=lam).eg
                               / closed_curve(w, b, c, noise, alphas, lam) - 1)))
    print(f"  200-point curve, lam = {lam:g}: rm.learning_curve {t['curve'] * 1e3:.1f} ms (target <= 18), "
          f"closed form vectorised over alpha {t['closed'] * 1e3:.1f} ms, ratio "
          f"{t['curve'] / t['closed']:.2f}x; max |d eg| / eg = {diff:.1e}")


if __name__ == "__main__":
    main()
