"""
Learning dynamics: one pass of SGD, tuned ridge, and gradient flow
==================================================================

Left: on one masked site of a Gaussian Potts model (square loss), the expected error of one-pass
SGD against the number of samples seen per dimension, :math:`\\alpha = kB/p`. It is drawn at one
learning rate and at the best learning rate for each :math:`\\alpha` (the lower envelope of 12
rates below the stability edge ``lr_max``). Beside them are ERM at its best ridge for the same
number of samples (:func:`replica_mlm.optimal_lambda`) and the Bayes-optimal error under a Gaussian
prior matched to the site's :math:`\\rho` (that prior is isotropic, and this site's teacher is
not, so tuned ridge can dip below it). One pass of SGD at its best rate stays within a fraction of
a per cent of tuned ridge.

Middle: the same comparison on an Ising site (site 0 of a Sherrington-Kirkpatrick model, L = 41,
:math:`\\beta = 0.4`), learnt with the logistic loss, its pseudo-likelihood; :math:`e_g` is the
classification error. The logistic loss has no stability edge (its gradient is bounded), so the
envelope is over a grid of 5 rates from 0.02 to 1. ERM is at its best ridge with the same loss. The
Bayes-optimal error is that of teachers drawn from the SK prior; it is not a bound for this one
teacher, and tuned ERM lies below it. The best rate is small (0.1 on this grid from
:math:`\\alpha = 2` on), and one pass at it stays within 0.1 % of tuned ERM.

Right: gradient flow on fixed training sets at three :math:`\\alpha`. The dotted lines are the ERM
end points (:func:`replica_mlm.solve` at :math:`\\lambda = 0`) and the dots are the early-stopping
optima (``flow.best``). See :doc:`/dynamics`.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica_mlm as rm

site = rm.GaussianPotts.random(L=101, shift=3.0, rng=0).masked_site(0)
alpha = np.linspace(0.0, 8.0, 41)
edge = rm.online_sgd(site, alpha=[0.0], lr=0.1).lr_max
rates = np.geomspace(1e-2, 0.9 * edge, 12)
curves = np.array([rm.online_sgd(site, alpha=alpha, lr=lr).eg for lr in rates])
one = rm.online_sgd(site, alpha=alpha, lr=1.0)
ridge = rm.optimal_lambda(site, alpha=alpha[1:])
bayes = rm.bayes_optimal_curve(site, alpha=alpha[1:])
gap = float(np.max(curves.min(axis=0)[1:] / ridge.eg_opt - 1))
print(f"lr_max = {edge:.4g}; SGD at its best lr exceeds tuned ridge by at most {100 * gap:.2f} %")

model = rm.PottsModel.random_ising(L=41, beta=0.4, rng=1)
ising = model.masked_site(0)  # covariance from 20,000 Boltzmann samples
rates_ising = np.array([0.02, 0.05, 0.1, 0.2, 1.0])  # logistic: no lr_max
sgd_ising = np.array([rm.online_sgd(ising, alpha=alpha, lr=lr, loss="logistic").eg for lr in rates_ising])
at = [1, 5, 10, 20, 40]  # alpha = 0.2, 1, 2, 4, 8
erm_ising = rm.optimal_lambda(ising, alpha=alpha[at], loss="logistic")
bayes_ising = rm.bayes_optimal_curve(ising, alpha=alpha[1:], prior="sk", beta=model.beta)
gap_ising = float(np.max(sgd_ising.min(axis=0)[at] / erm_ising.eg_opt - 1))
print(f"Ising site: SGD at its best lr exceeds tuned ERM by at most {100 * gap_ising:.2f} %")

times = np.logspace(-2, 3, 101)
flows = [rm.gradient_flow(site, alpha=a, time=times) for a in (0.5, 2.0, 4.0)]

fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
ax = axes[0]
ax.axhline(site.c_ii, color="0.6", lw=0.8, label=r"no learning, $C_{ii}$")
ax.plot(alpha, one.eg, "k:", label=r"one-pass SGD, $\eta = 1$")
ax.plot(alpha, curves.min(axis=0), "k-", label="one-pass SGD, best $\\eta$")
ax.plot(ridge.alpha, ridge.eg_opt, "k--", label=r"ERM, best $\lambda$")
ax.plot(bayes.alpha, bayes.eg, color="#009E73", lw=3, alpha=0.5, label="Bayes-optimal (isotropic prior)")
ax.set_xlabel(r"$\alpha$ (samples per dimension)")
ax.set_ylabel(r"$e_g$")
ax.legend(fontsize=7.5)
ax = axes[1]
ax.plot(alpha, sgd_ising[rates_ising == 1.0][0], "k:", label=r"one-pass SGD, $\eta = 1$")
ax.plot(alpha, sgd_ising.min(axis=0), "k-", label="one-pass SGD, best $\\eta$")
ax.plot(erm_ising.alpha, erm_ising.eg_opt, "k--", label=r"ERM, best $\lambda$")
ax.plot(bayes_ising.alpha, bayes_ising.eg, color="#009E73", lw=3, alpha=0.5, label="Bayes-optimal (SK prior)")
ax.set_xlabel(r"$\alpha$ (samples per dimension)")
ax.set_ylabel(r"classification error $e_g$ (Ising site, logistic)")
ax.legend(fontsize=7.5)
ax = axes[2]
for flow, ls in zip(flows, ["-", "--", "-."], strict=True):
    line, = ax.plot(flow.time, flow.eg, "k", ls=ls, label=rf"$\alpha = {flow.alpha:g}$")
    ax.axhline(flow.end.eg, color="k", ls=":", lw=0.8)
    ax.plot([flow.best.time], [flow.best.eg], "o", color="k", ms=4)
ax.set_xscale("log")
ax.set_xlabel("flow time $t$")
ax.set_ylabel(r"$e_g$ (gradient flow, $\lambda = 0$)")
ax.legend(fontsize=7.5)
fig.tight_layout()
