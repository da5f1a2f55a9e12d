"""
Inverse-Ising literature check
==============================

In the package's conventions (docs: "Discrete spins", section "Comparison with the inverse-Ising
literature").

Reproduces two qualitative claims with replica_mlm on one SK instance (L = 50, beta = 0.4), the
pseudo-likelihood estimator at a small ridge (lam = 1e-3), above the separability threshold:

1. the estimated couplings are inflated along the true ones (Abbara, Kabashima, Obuchi, Xu 2020
   report over-estimated absolute values of the existing couplings): the projection
   kappa = (w_hat . Sigma w*) / (w* . Sigma w*) exceeds 1 and tends to 1 as alpha grows;
2. the reconstruction error of the pseudo-likelihood couplings falls like 1 / alpha at large
   alpha (Bachschmid-Romano and Opper 2017): ``alpha * |w_hat - w*|^2 / |w*|^2`` approaches a constant.

Theory: rm.solve on the site's Gaussian-equivalent task (m / rho and estimation_error).
Simulation: seeds independent pools of Boltzmann sequences, nested training sets, mean +- s.e.
Run: PYTHONPATH=. python docs/examples/inverse_ising_bias.py
"""

from __future__ import annotations

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.pseudo_likelihood import fit_site
from replica_mlm.tasks.ising_site import ising_site, spin_covariance, spins

L, BETA, LAM, SEEDS, SITE = 50, 0.4, 1e-3, 6, 0
ALPHAS = (4.0, 8.0, 16.0)


def main() -> None:
    model = rm.PottsModel.random_ising(L=L, beta=BETA, rng=0)
    cov = spin_covariance(model, samples=10000, rng=1)
    task = ising_site(model, SITE, cov)
    p = L - 1
    keep = np.arange(L) != SITE
    teacher = 2 * BETA * model.couplings[SITE, keep]
    sigma = task.covariance
    rho = teacher @ sigma @ teacher
    ns = [round(a * p) for a in ALPHAS]
    diag = model.gibbs_diagnostics(rng=2, method="auto")
    kappa, err = np.empty((SEEDS, len(ns))), np.empty((SEEDS, len(ns)))
    for k, gen in enumerate(np.random.default_rng(3).spawn(SEEDS)):
        s = spins(model.sample(max(ns), rng=gen, sweeps_between=diag.sweeps_between,
                               burn_in=diag.burn_in, method=diag.method))
        s = s[gen.permutation(len(s))]
        for a, n in enumerate(ns):
            w, _ = fit_site(s[:n, keep], s[:n, SITE], LAM)
            kappa[k, a] = (w @ sigma @ teacher) / rho
            err[k, a] = np.sum((w - teacher) ** 2) / np.sum(teacher**2)
    print(f"SK L={L} beta={BETA} site {SITE} lam={LAM}: |w*|^2 = {teacher @ teacher:.4f}, "
          f"alpha_c = {rm.separability_threshold(task):.3f}, covariance {cov.method} "
          f"({cov.n_samples} samples), {SEEDS} seeds")
    print("alpha  kappa_theory kappa_sim        alpha*err_theory alpha*err_sim")
    for a, n in enumerate(ns):
        alpha = n / p
        sp = rm.solve(task, alpha=alpha, lam=LAM, loss="logistic")
        se_k = kappa[:, a].std(ddof=1) / np.sqrt(SEEDS)
        se_e = err[:, a].std(ddof=1) / np.sqrt(SEEDS)
        print(f"{alpha:5.2f}  {sp.m / sp.rho:11.4f}  {kappa[:, a].mean():.4f} +- {se_k:.4f}   "
              f"{alpha * sp.estimation_error / (teacher @ teacher):11.4f}  "
              f"{alpha * err[:, a].mean():.4f} +- {alpha * se_e:.4f}")


if __name__ == "__main__":
    main()
