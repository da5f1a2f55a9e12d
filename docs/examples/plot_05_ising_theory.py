"""
Ising spins: the discrete theory against simulation
===================================================

For Ising spins (:math:`q = 2`) masked language modelling with factored attention at one site is
:math:`\\ell_2`-penalised logistic regression of the masked spin on the others, with the exact
conditional :math:`P(s_i\\mid s_{-i}) = 1/(1 + e^{-2\\beta s_i h_i})` as label channel (see
:doc:`/potts`). The theory treats the other spins as Gaussian with their own covariance and solves
the general engine with the logistic loss. The simulation draws Boltzmann samples of
Sherrington–Kirkpatrick spins with the package's sampler, fits the site's pseudo-likelihood, and
measures the test cross-entropy (the site's MLM test loss) on fresh sequences.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica_mlm as rm

ising = rm.PottsModel.random_ising(L=12, beta=0.4, rng=0)  # high temperature, 12 spins
task = ising.masked_site(3)  # logit channel, teacher 2 beta J_{3,-3}, covariance exact (L <= 16)
lam = 0.02
alpha = np.geomspace(0.3, 8.0, 30)
theory = rm.learning_curve(task, alpha=alpha, lam=lam, loss="logistic")

sim_alpha = [0.5, 2.0, 6.0]
sims = [rm.simulate(ising, site=3, alpha=a, lam=lam, seeds=8, rng=k, loss="logistic", n_test=500)
        for k, a in enumerate(sim_alpha)]

# %%
# Agreement in standard errors of the simulation mean:
for s in sims:
    pred = rm.solve(task, alpha=s.alpha, lam=lam, loss="logistic").test_loss
    mean, se = s.test_loss_mean[0], s.test_loss_stderr[0]
    print(f"alpha = {s.alpha:5.2f}: theory {pred:.4f}, simulation {mean:.4f} +- {se:.4f}, "
          f"z = {(mean - pred) / se:+.2f}")

fig, ax = plt.subplots(figsize=(5, 3.6))
ax.plot(alpha, theory.test_loss, "k-", label="replica theory (Gaussian spins)")
ax.errorbar([s.alpha for s in sims], [s.test_loss_mean[0] for s in sims],
            yerr=[s.test_loss_stderr[0] for s in sims], fmt="o", color="k", mfc="white", capsize=2,
            label="pseudo-likelihood on Boltzmann samples")
ax.set_xscale("log")
ax.set_xlabel(r"$\alpha = M/p$")
ax.set_ylabel("test cross-entropy of site 3")
ax.set_title(rf"SK spins, $L = 12$, $\beta = 0.4$, $\lambda = {lam}$", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
