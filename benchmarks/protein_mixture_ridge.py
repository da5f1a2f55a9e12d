"""A real site's ridge learning curve: the Gaussian reduction, the class-conditional moments, and
ridge simulated on the site's own mixture.

For the rhomboid sites of docs/proteins.md (window of 10 columns each side, lam = 0.1, rng = 0)
this prints, per M: the measured test loss (``site_learning_curve``: 5 subsamples, 20 % held out),
the Gaussian reduction with the pool-fitted ridge teacher (``theory``, as before), the mixture
theory from the class-conditional moments of the pool (``mixture``), the Gaussian reduction of the
*same* moments (total covariance, best linear predictor, its residual: ``gauss_blp``), and ridge
simulated on data drawn from that mixture itself (``x | c ~ N(mu_c, S)``, the exact population
loss of each fit, ``--seeds`` fits with seeds 100.., mean +- SE), with z = (prediction - measured
or simulated) / SE.

    python benchmarks/protein_mixture_ridge.py --sites 38 14 89 --seeds 100
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.multinomial_pl import reduced_inputs
from replica_mlm.proteins.learning_curve import RIDGE, class_moments, ridge_fit, site_learning_curve
from replica_mlm.tasks.potts_site import simplex_basis
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solve import solve
from replica_mlm.theory.solvers.mixture_ridge import MixtureRidgeTheory, solve_point

MS = (25, 50, 100, 200, 400, 800, 1600)
SIMULATED = (25, 100, 400)


def site_table(msa, site: int, seeds: int, lam: float = 0.1) -> None:
    window = np.arange(max(0, site - 10), min(msa.L, site + 11))
    t0 = time.process_time()
    curve = site_learning_curve(msa, site, M=list(MS), lam=lam, subsamples=5, columns=window, rng=0)
    cpu = time.process_time() - t0
    # the pool of the curve (rng = 0: its first draw is the test split)
    seqs = msa.sequences[:, window].astype(np.intp)
    local = int(np.flatnonzero(window == site)[0])
    pool = seqs[np.random.default_rng(0).permutation(msa.N)[curve.n_test:]]
    P = simplex_basis(msa.q)
    p = window.size - 1
    mean = P[pool].mean(axis=0)
    x = reduced_inputs(pool, local, P, mean)
    d = x.shape[1]
    ridge = RIDGE * np.trace(x.T @ x / x.shape[0]) / d
    classes, w, mu, counts, S = class_moments(x, pool[:, local], ridge)
    t = P[classes] - mean[local]
    th = MixtureRidgeTheory(weights=w, means=mu, covariance=S, targets=t)
    sig, beta, noise = th.gaussian_equivalent()
    om, u = np.linalg.eigh(sig)
    specs = [Spectrum(omega=om, bulk=np.full(d, 1 / d), teacher=(u.T @ beta[:, a]) ** 2,
                      noise=float(noise[a])) for a in range(t.shape[1])]
    chol = np.linalg.cholesky(S)
    print(f"\nsite {site}: d = {d}, classes {classes.size} (smallest {counts.min()} rows), "
          f"curve CPU {cpu:.1f} s; "
          f"floors: teacher held-out {curve.teacher_floor:.4f}, Gaussian {curve.noise_floor:.4f}, "
          f"mixture {curve.mixture_floor:.4f}")
    print("| M | measured | se | theory | z | mixture | z | gauss_blp | z | simulated on mixture | "
          "z mixture | z gauss_blp |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k, M in enumerate(MS):
        m, se = curve.mean[k], curve.stderr[k]
        blp = sum(solve(s, alpha=M / d, lam=lam * p / d).test_loss for s in specs)
        mix = curve.mixture[k]
        assert abs(mix - solve_point(th, alpha=M / d, lam=lam * p / d).test_loss) <= 1e-12 * mix
        row = (f"| {M} | {m:.4f} | {se:.4f} | {curve.theory[k]:.4f} | {curve.z[k]:+.1f} | {mix:.4f} | "
               f"{(mix - m) / se:+.1f} | {blp:.4f} | {(blp - m) / se:+.1f} |")
        if M in SIMULATED:
            losses = []
            for s in range(seeds):
                g = np.random.default_rng(100 + s)
                c = g.choice(w.size, size=M, p=w)
                W = ridge_fit(mu[c] + g.standard_normal((M, d)) @ chol.T, t[c], lam, p)
                losses.append(float(np.sum(w @ (t - mu @ W) ** 2 + np.sum(W * (S @ W), axis=0)) / 2))
            sm, sse = np.mean(losses), np.std(losses, ddof=1) / np.sqrt(seeds)
            row += f" {sm:.4f} +- {sse:.4f} | {(mix - sm) / sse:+.1f} | {(blp - sm) / sse:+.1f} |"
        else:
            row += " | | |"
        print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, nargs="+", default=[38, 14, 89])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    msa, _ = rm.datasets.protein_family("rhomboid")
    for site in args.sites:
        site_table(msa, site, args.seeds)


if __name__ == "__main__":
    main()
