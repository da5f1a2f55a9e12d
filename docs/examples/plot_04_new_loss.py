"""
A new loss from sympy
=====================

Any convex loss :math:`\\ell(y, z)` written in sympy goes through the general replica engine (see
:doc:`/theory`, section 6): sympy differentiates it, the engine finds its proximal point and solves
the saddle point. Here the *pseudo-Huber* loss :math:`\\delta^2(\\sqrt{1 + (y - z)^2/\\delta^2} - 1)`,
quadratic for small residuals and linear for large ones, on the masked-site regression task, with
the built-in square loss for comparison.

The package's ERM simulations know only the built-in losses, so the check here is independent and
written out in full: the penalised objective
:math:`\\sum_\\mu \\ell(y_\\mu, w\\cdot x_\\mu) + \\tfrac{\\lambda p}{2}|w|^2` is minimised by scipy's
L-BFGS on Gaussian samples of the same task, and the test error
:math:`e_g = \\rho + \\sigma^2 - 2m + q` is computed from the overlaps of the minimiser.
"""

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from scipy.optimize import minimize

import replica_mlm as rm

y, z = sp.symbols("y z", real=True)
delta = sp.Rational(1, 2)
pseudo_huber = rm.losses.Loss.from_sympy(delta**2 * (sp.sqrt(1 + (y - z) ** 2 / delta**2) - 1), y, z,
                                         name="pseudo-Huber")

site = rm.GaussianPotts.random(L=151, shift=3.0, rng=2).masked_site(0)
lam = 0.05
alpha = np.linspace(0.2, 4.0, 30)
custom = rm.learning_curve(site, alpha=alpha, lam=lam, loss=pseudo_huber)
square = rm.learning_curve(site, alpha=alpha, lam=lam)

# %%
# Direct minimisation on samples (10 training sets per point)
cov, teacher, noise = site.covariance, site.teacher, site.noise
p = teacher.size
root = np.linalg.cholesky(cov)
d = float(delta)


def objective(w, X, Y):
    r = Y - X @ w
    s = np.sqrt(1 + (r / d) ** 2)
    return d**2 * np.sum(s - 1) + 0.5 * lam * p * w @ w, -X.T @ (r / s) + lam * p * w


gen = np.random.default_rng(0)
sim_alpha, sim_mean, sim_se = [1.0, 2.0, 3.0], [], []
for a in sim_alpha:
    egs = []
    for _ in range(10):
        X = gen.standard_normal((int(a * p), p)) @ root.T
        Y = X @ teacher + np.sqrt(noise) * gen.standard_normal(len(X))
        res = minimize(objective, np.zeros(p), args=(X, Y), jac=True, method="L-BFGS-B",
                       options=dict(gtol=1e-10, maxiter=5000))
        assert res.success, res.message  # converged to the gradient tolerance
        w = res.x
        egs.append(site.rho + noise - 2 * teacher @ cov @ w + w @ cov @ w)
    sim_mean.append(np.mean(egs))
    sim_se.append(np.std(egs, ddof=1) / np.sqrt(len(egs)))
    sp_point = rm.solve(site, alpha=a, lam=lam, loss=pseudo_huber)
    print(f"alpha = {a}: theory {sp_point.eg:.4f}, minimisation {sim_mean[-1]:.4f} +- {sim_se[-1]:.4f}, "
          f"z = {(sim_mean[-1] - sp_point.eg) / sim_se[-1]:+.2f}, residual {sp_point.residual:.1e}")

fig, ax = plt.subplots(figsize=(5, 3.6))
ax.plot(alpha, custom.eg, "k-", label=r"pseudo-Huber, $\delta = 1/2$ (theory)")
ax.plot(alpha, square.eg, color="0.5", ls="--", label="square loss (theory)")
ax.errorbar(sim_alpha, sim_mean, yerr=sim_se, fmt="o", color="k", mfc="white", capsize=2,
            label="pseudo-Huber, L-BFGS on samples")
ax.axhline(noise, color="0.75", lw=0.7, ls=":", label=r"$\sigma^2$")
ax.set_xlabel(r"$\alpha = n/p$")
ax.set_ylabel(r"$e_g$")
ax.set_title(rf"$p = {p}$, $\lambda = {lam}$", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
