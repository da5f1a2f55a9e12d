"""
Rende et al., fig. 3 (right) at :math:`q = 2`: the MLM test loss peaks at separability
======================================================================================

The right panel of the paper's fig. 3 trains factored attention by masked language modelling on
discrete sequences and finds the test loss peaking at a finite :math:`\\alpha`. For Ising spins
(:math:`q = 2`) the MLM loss of a site is the logistic loss of its pseudo-likelihood (see
:doc:`/potts`), and the replica theory locates the peak: at small :math:`\\lambda` a site's test
cross-entropy peaks near the separability threshold :math:`\\alpha_c` of its logit channel, below
which the unpenalised minimiser does not exist (see :doc:`/theory`, section 7). Here one site of a
Sherrington–Kirkpatrick model at high temperature, theory against pseudo-likelihood fits on
Boltzmann samples; ``replica-mlm validate --section discrete`` draws the loss summed over all sites.
Both theories of the site are drawn: Gaussian equivalence (``theory="gaussian"``) and the site as
a Gaussian mixture (``theory="mixture"``, see :doc:`/discrete`); at this weak coupling they differ
by less than 0.3 % (their lines overlap), unlike at strong coupling where the mixture is the one
that matches (``discrete.mixture_agreement`` in the validation suite).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

import replica_mlm as rm
from replica_mlm.learners.pseudo_likelihood import fit_site, site_measures
from replica_mlm.tasks.ising_site import spins

ising = rm.PottsModel.random_ising(L=16, beta=0.4, rng=1)
site, lam = 0, 1e-3
task = ising.masked_site(site)  # logit channel, teacher 2 beta J_0j, exact covariance (L <= 16)
p = ising.L - 1
alpha_c = rm.separability_threshold(task)
alpha = np.geomspace(0.5, 6.0, 28)
theory = rm.learning_curve(task, alpha=alpha, lam=lam, loss="logistic")
# the site as a two-cluster Gaussian mixture (see :doc:`/discrete`, "The site as a Gaussian mixture")
mixture = rm.learning_curve(task, alpha=alpha, lam=lam, loss="logistic", theory="mixture")

# %%
# The simulation: one run of the package's sampler (thinned by its measured autocorrelation)
# supplies disjoint training sets and a common test set; every fit is certified by its
# Karush-Kuhn-Tucker residual, and the test cross-entropy uses the exact conditional of the
# masked spin, averaged over it analytically.
M = np.round(np.array([0.7, 1.4, 2.0, 3.0, 5.0]) * p).astype(int)
seeds, n_test = 10, 2000
gen = np.random.default_rng(0)
s = spins(gen.permutation(ising.sample(seeds * M.sum() + n_test, rng=1)))  # rows interleave chains
keep = np.arange(ising.L) != site
x, y = s[:, keep], s[:, site]
teacher = 2 * ising.beta * ising.couplings[site, keep]
x_test = x[-n_test:]
start, mean, se = 0, [], []
for m in M:
    losses = []
    for _ in range(seeds):
        w, _kkt = fit_site(x[start:start + m], y[start:start + m], lam)
        start += m
        losses.append(site_measures(x_test, teacher, w[:, None])["test_loss"][0])
    mean.append(np.mean(losses))
    se.append(np.std(losses, ddof=1) / np.sqrt(seeds))
    pred = rm.solve(task, alpha=m / p, lam=lam, loss="logistic").test_loss
    pred_mix = rm.solve(task, alpha=m / p, lam=lam, loss="logistic", theory="mixture").test_loss
    print(f"alpha = {m / p:.2f}: theory {pred:.3f} (gaussian), {pred_mix:.3f} (mixture), "
          f"simulation {mean[-1]:.3f} +- {se[-1]:.3f}")
print(f"alpha_c = {alpha_c:.3f}; theory curve peaks at alpha = {alpha[np.argmax(theory.test_loss)]:.2f}")

fig, ax = plt.subplots(figsize=(5, 4.4))
ax.plot(alpha, theory.test_loss, "-", color="0.6", lw=2.5, label='replica theory, theory="gaussian"')
ax.plot(alpha, mixture.test_loss, "k--", label='replica theory, theory="mixture"')
ax.errorbar(M / p, mean, yerr=se, fmt="o", color="k", mfc="white", capsize=2,
            label=f"pseudo-likelihood fits ({seeds} training sets)")
ax.axvline(alpha_c, color="0.5", ls="--", lw=0.8, label=r"separability threshold $\alpha_c$")
ax.set_xscale("log")
ax.set_xticks([0.5, 1, 2, 4, 6], ["0.5", "1", "2", "4", "6"])
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel(r"$\alpha = M/p$")
ax.set_ylabel(f"MLM test loss of site {site}")
ax.set_title(rf"SK spins, $L = {ising.L}$, $\beta = 0.4$, $\lambda = 10^{{-3}}$", fontsize=10)
ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
fig.tight_layout()
