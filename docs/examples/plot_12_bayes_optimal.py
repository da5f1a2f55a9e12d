"""
ERM beside the Bayes-optimal error: the perceptron and an Ising site
=====================================================================

How far is empirical risk minimisation from the best any estimator can do? Left: the
teacher–student perceptron (noiseless sign channel, isotropic Gaussian teacher), logistic
regression at several ridge strengths against the Bayes-optimal error of
:func:`replica_mlm.bayes_optimal_curve`, which decays as :math:`0.4417/\\alpha`. Right: the logit
channel of one site of a Sherrington–Kirkpatrick Ising model (the masked-spin task of the paper's
fig. 3 at :math:`q = 2`), logistic ERM (the site's pseudo-likelihood) against the Bayes-optimal error
under a Gaussian prior matched to the site's :math:`\\rho` (see :doc:`/bayes_optimal` for what that
prior assumes). On this site the Bayes-optimal line lies below every ERM line; at stronger coupling
(:math:`\\beta = 0.6`) the SK teacher aligns with the covariance's eigenvectors, which the isotropic
prior does not assume, and ridge-logistic at :math:`\\lambda = 1` dips below it by about
:math:`10^{-4}`.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

import replica_mlm as rm

perceptron = rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.ones(1), noise=0.0)
alpha = np.geomspace(0.2, 20, 30)
lams = [1e-3, 1e-1, 1.0]
erm = rm.learning_curve(perceptron, alpha=alpha, lam=lams, loss="logistic", channel="sign")
bo = rm.bayes_optimal_curve(perceptron, alpha=alpha, channel="sign")
print(f"perceptron: eg_BO * alpha at alpha = 20: {bo.eg[-1] * 20:.4f} (-> 0.4417)")

ising = rm.PottsModel.random_ising(L=16, beta=0.4, rng=1)
site = ising.masked_site(0)  # logit channel, exact covariance (L <= 16)
alpha_site = np.geomspace(0.3, 8, 30)
erm_site = rm.learning_curve(site, alpha=alpha_site, lam=lams, loss="logistic")
bo_site = rm.bayes_optimal_curve(site, alpha=alpha_site)
gap = min(float(np.min(c.eg - bo_site.eg)) for c in erm_site)
print(f"Ising site: smallest eg(ERM) - eg(BO) over the grid and lam = {lams}: {gap:.2e}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
styles = ["-", "--", ":"]
for ax, curves, best, title in ((axes[0], erm, bo, "perceptron (sign channel)"),
                                (axes[1], erm_site, bo_site, r"SK Ising site, $L = 16$, $\beta = 0.4$")):
    ax.plot(best.alpha, best.eg, color="#009E73", lw=3.2, alpha=0.55, label="Bayes-optimal")
    for c, ls in zip(curves, styles, strict=True):
        ax.plot(c.alpha, c.eg, "k", ls=ls, lw=1.1, label=rf"logistic ERM, $\lambda = {c.lam:g}$")
    ax.set_xscale("log")
    ticks = [t for t in (0.2, 0.5, 1, 2, 5, 10, 20) if best.alpha[0] <= t <= best.alpha[-1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"$\alpha = n/p$")
    ax.set_title(title, fontsize=10)
axes[0].set_yscale("log")
axes[0].set_ylabel("classification error $e_g$")
axes[0].yaxis.set_minor_formatter(NullFormatter())
axes[0].set_yticks([0.02, 0.05, 0.1, 0.2, 0.4], ["0.02", "0.05", "0.1", "0.2", "0.4"])
axes[1].legend(fontsize=7.5, loc="upper right")
fig.tight_layout()
